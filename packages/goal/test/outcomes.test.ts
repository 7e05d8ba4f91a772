/**
 * The round driver's edges (R124, R126) under `TestClock` with the scripted model: a queued round that human work
 * overtakes is withdrawn from the inbox (`agent/inbox/discard { reason: "withdraw" }`) and re-reserved after the
 * human turns; one the agent already claimed is blocked at admission instead; a round ended by disposal disarms the
 * goal; a round a crash interrupted leaves the goal disarmed on reopen until a human resumes it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Hooks } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { Ids, Message } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import type { Queue } from "effect"
import { Deferred, Effect, Exit, Fiber, Ref, Scope, TestClock } from "effect"
import * as Goals from "../src/Goals.js"
import { assertFoldMatches, call, completingRound, env, goalAgent, goalShape } from "./support.js"

const complete = call("update_goal", { action: "complete" })

/** Takes live events until one matches, keeping every event taken in `seen`. */
const waitFor = (
  queue: Queue.Dequeue<AgentEvent.AgentEvent>,
  seen: Array<AgentEvent.AgentEvent>,
  match: (event: AgentEvent.AgentEvent) => boolean
) =>
  Effect.gen(function*() {
    while (true) {
      const event = yield* queue.take
      seen.push(event)
      if (match(event)) return event
    }
  })

/** Every message enqueued has exactly one fate, a dequeue or a discard (FIFO conservation); returns the fates. */
const assertConservation = (events: ReadonlyArray<AgentEvent.AgentEvent>) => {
  const fates = new Map<string, Array<string>>()
  for (const event of events) {
    if (event.type === "agent/inbox/enqueue") fates.set(event.message.id, [])
    if (event.type === "agent/inbox/dequeue") fates.get(event.message.id)?.push("dequeue")
    if (event.type === "agent/inbox/discard") {
      for (const m of event.messages) fates.get(m.id)?.push(`discard${event.reason ? `:${event.reason}` : ""}`)
    }
  }
  for (const [id, fate] of fates) assert.strictEqual(fate.length, 1, `message ${id} has fates ${fate.join(", ")}`)
  return fates
}

const isRoundEnqueue = (round: number) => (event: AgentEvent.AgentEvent) =>
  event.type === "agent/inbox/enqueue" && event.message.source.kind === "goal" &&
  event.message.source.round === round

/** The prompt of round `round` is in the log: the round is admitted and its turn runs. */
const roundLogged = (round: number) => (event: AgentEvent.AgentEvent) =>
  event.type === "session/event" && event.event.type === "user/message" &&
  event.event.data.source.kind === "goal" && event.event.data.source.round === round

/** Runs `goals.settled` while the test clock moves on a second at a time. */
const settleWithClock = (goals: Goals.Service) =>
  Effect.gen(function*() {
    const settled = yield* Effect.fork(goals.settled)
    for (let i = 0; i < 60 && (yield* Fiber.poll(settled))._tag === "None"; i++) yield* TestClock.adjust("1 second")
    yield* Fiber.join(settled)
  })

/**
 * A goal whose round 1 runs while a person parks a message (it wakes nothing by itself); round 1 ends, and the
 * driver queues round 2, whose wake lets the parked message run first (FIFO): round 2 stays queued behind it.
 */
const roundTwoQueuedBehind = (objective: string, parked: string) =>
  Effect.gen(function*() {
    const { agent, goals } = yield* goalAgent()
    const events = yield* agent.subscribe
    const seen: Array<AgentEvent.AgentEvent> = []
    yield* goals.create({ objective })
    yield* waitFor(events, seen, roundLogged(1))
    yield* agent.send(Message.make(parked), { target: "next-turn", wakeup: false })
    yield* TestClock.adjust("1 second")
    const queued = yield* waitFor(events, seen, isRoundEnqueue(2))
    const queuedId = queued.type === "agent/inbox/enqueue" ? queued.message.id : Ids.AgentMessageId.make("")
    return { agent, goals, events, seen, queuedId }
  })

describe("human work first (R126)", () => {
  it.scoped("R123, R126: a queued round that a human follow-up overtakes is withdrawn from the inbox and re-reserved after the human turns", () =>
    Effect.gen(function*() {
      const { agent, events, goals, queuedId, seen } = yield* roundTwoQueuedBehind(
        "review the backlog",
        "later: check the CI"
      )
      yield* waitFor(events, seen, (e) => e.type === "agent/inbox/dequeue" && e.message.source.kind === "user")
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), [queuedId])
      // A human follow-up arrives while round 2 is still queued: round 2 is withdrawn, the human goes first.
      yield* agent.followup(Message.make("and summarise it"))
      yield* settleWithClock(goals)
      seen.push(...(yield* events.takeAll))

      assert.deepStrictEqual(goalShape(yield* agent.log), [
        "change:create@1",
        "round:1",
        "turn/end:completed",
        "user:later: check the CI",
        "turn/end:completed",
        "user:and summarise it",
        "turn/end:completed",
        ...completingRound(2, 2)
      ])
      const fates = assertConservation(seen)
      assert.deepStrictEqual(fates.get(queuedId), ["discard:withdraw"])
      const discard = seen.find((e) => e.type === "agent/inbox/discard")
      assert.deepStrictEqual(
        discard?.type === "agent/inbox/discard" ? [discard.reason, discard.messages.map((m) => m.id)] : [],
        ["withdraw", [queuedId]]
      )
      // The round that ran is a new reservation of the same round number, enqueued after the withdraw.
      const rerun = seen.filter(isRoundEnqueue(2))
      assert.strictEqual(rerun.length, 2)
      assert.isTrue(seen.indexOf(rerun[1]!) > seen.indexOf(discard!))
      assert.deepStrictEqual(fates.get(rerun[1]!.type === "agent/inbox/enqueue" ? rerun[1]!.message.id : ""), [
        "dequeue"
      ])
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(state.goal?.phase, "complete")
      assert.strictEqual(state.roundsStarted, 2)
    }).pipe(Effect.provide(env([
      S.delayed("1 second", S.textResponse("round one")),
      S.delayed("1 second", S.textResponse("CI is green")),
      S.textResponse("summary"),
      complete
    ]))))

  it.scoped("R125, R126: a round the agent already claimed cannot be withdrawn; the admission guard blocks it, nothing is logged, and it is re-reserved", () =>
    Effect.gen(function*() {
      const admitting = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const held = yield* Ref.make(false)
      const { agent, goals } = yield* goalAgent(undefined, {
        hooks: {
          promptSubmit: (input, next) =>
            Effect.gen(function*() {
              if (input.message.source.kind === "goal" && !(yield* Ref.getAndSet(held, true))) {
                yield* Deferred.succeed(admitting, undefined)
                yield* Deferred.await(release)
              }
              return yield* next
            })
        }
      })
      const events = yield* agent.subscribe
      yield* goals.create({ objective: "tidy the docs" })
      yield* Deferred.await(admitting)
      yield* agent.followup(Message.make("what are you doing?"))
      // The withdraw found the round claimed (NotPending): nothing was discarded for it.
      yield* Deferred.succeed(release, undefined)
      yield* goals.settled
      const seen = [...(yield* events.takeAll)]
      const fates = assertConservation(seen)
      const rounds = seen.filter(isRoundEnqueue(1))
      assert.strictEqual(rounds.length, 2)
      const [first, second] = rounds.map((e) => e.type === "agent/inbox/enqueue" ? e.message.id : "")
      assert.deepStrictEqual(fates.get(first!), ["dequeue"])
      assert.deepStrictEqual(fates.get(second!), ["dequeue"])
      assert.isFalse(seen.some((e) => e.type === "agent/inbox/discard"))
      assert.deepStrictEqual(goalShape(yield* agent.log), [
        "change:create@1",
        "user:what are you doing?",
        "turn/end:completed",
        ...completingRound(1, 2)
      ])
      yield* assertFoldMatches(agent, goals)
    }).pipe(Effect.provide(env([S.textResponse("tidying"), complete]))))

  it.scoped("a round withdrawn by someone else (not the driver) disarms the goal: no new round starts by itself", () =>
    Effect.gen(function*() {
      const { agent, goals, queuedId } = yield* roundTwoQueuedBehind("sort the photos", "parked")
      assert.strictEqual((yield* agent.withdraw(queuedId))._tag, "Withdrawn")
      yield* settleWithClock(goals)
      assert.deepStrictEqual(goalShape(yield* agent.log), [
        "change:create@1",
        "round:1",
        "turn/end:completed",
        "user:parked",
        "turn/end:completed"
      ])
      const view = yield* goals.get
      assert.strictEqual(view.goal?.phase, "active")
      assert.strictEqual(view.activation, "disarmed")
      yield* assertFoldMatches(agent, goals)
    }).pipe(Effect.provide(env([
      S.delayed("1 second", S.textResponse("round one")),
      S.delayed("1 second", S.textResponse("ok"))
    ]))))
})

describe("R124: disposed and interrupted rounds disarm", () => {
  it.scoped("R124: a round ended by the agent's disposal disarms the goal (it stays active, nothing is appended)", () =>
    Effect.gen(function*() {
      const stepped = yield* Deferred.make<void>()
      const plugin = yield* Goals.make()
      const agentScope = yield* Scope.make()
      const agent = yield* Agent.make({
        model: "m",
        hooks: Hooks.compose(plugin.hooks, { step: () => Deferred.succeed(stepped, undefined) }),
        tools: plugin.tools
      }).pipe(Scope.extend(agentScope))
      // The service outlives the agent: it sees the round end and decides.
      const goals = yield* plugin.attach(agent)
      yield* goals.create({ objective: "index the archive" })
      yield* Deferred.await(stepped)
      assert.strictEqual((yield* goals.get).activation, "armed")
      yield* Scope.close(agentScope, Exit.void)
      yield* goals.settled
      assert.deepStrictEqual(goalShape(yield* agent.log), ["change:create@1", "round:1", "turn/end:disposed"])
      const view = yield* goals.get
      assert.strictEqual(view.activation, "disarmed")
      assert.strictEqual(view.goal?.phase, "active")
      assert.strictEqual(view.roundsStarted, 1)
      yield* assertFoldMatches(agent, goals)
    }).pipe(Effect.provide(env([S.hanging(S.text("indexing"))]))))

  it.scoped("R119, R124: a round a crash interrupted is closed `interrupted` on reopen; the goal is disarmed until a human resumes it", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const withStore = Effect.provideService(SessionStore.SessionStore, store)
      const crashed = Ids.SessionId.make("crashed-goal")
      // A real goal session, copied up to the moment round 2 is running: what a killed process leaves behind.
      const torn = yield* Effect.scoped(Effect.gen(function*() {
        const steps = yield* Ref.make(0)
        const second = yield* Deferred.make<void>()
        const { agent, goals } = yield* goalAgent(undefined, {
          hooks: {
            step: () =>
              Effect.flatMap(
                Ref.updateAndGet(steps, (n) => n + 1),
                (n) => n === 2 ? Deferred.succeed(second, undefined) : Effect.void
              )
          }
        })
        yield* goals.create({ objective: "migrate the database" })
        yield* Deferred.await(second)
        return yield* agent.log
      })).pipe(Effect.provide(env([S.textResponse("round one"), S.hanging(S.text("migrating"))])))
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: crashed })
        yield* log.appendAll(torn.map(({ data, type }) => ({ type, data }) as never))
      })).pipe(withStore)

      const session = yield* SessionLog.open(crashed).pipe(withStore)
      const { agent, goals } = yield* goalAgent(undefined, { session })
      const view = yield* goals.get
      assert.strictEqual(view.activation, "disarmed")
      assert.strictEqual(view.goal?.phase, "active")
      assert.strictEqual(view.roundsStarted, 2)
      yield* goals.settled
      const model = yield* S.ScriptedModel
      assert.deepStrictEqual(yield* model.requests, [])
      assert.deepStrictEqual(goalShape(yield* agent.log), [
        "change:create@1",
        "round:1",
        "turn/end:completed",
        "round:2",
        "turn/end:interrupted"
      ])
      // A human resumes it: the next round is round 3.
      yield* goals.resume({ id: view.goal!.id, revision: view.goal!.revision })
      yield* goals.settled
      assert.deepStrictEqual(goalShape(yield* agent.log).slice(5), [
        "change:resume@2",
        ...completingRound(3, 3)
      ])
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(state.roundsStarted, 3)
    }).pipe(Effect.provide(env([complete]))))
})
