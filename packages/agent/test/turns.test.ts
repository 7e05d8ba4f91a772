/**
 * One send, one turn (R32); turn numbers derived from the log (R38 as its Note≠code recommends, R134); status
 * transitions (R23): one `running` interval across chained turns, admission failures and retry chains, and never a
 * repeated status.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentEvent } from "@harness/domain"
import { MessageSource } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { ev, goodLogs, stamp } from "@harness/testkit/Events"
import { Deferred, Effect, Layer, Stream, TestClock } from "effect"
import {
  awaitSleeper,
  claimed,
  coarseTrace,
  coarseTurn,
  completedIdle,
  conversation,
  heldFirstStep,
  idleLog,
  isDurable,
  makeHold,
  promptsByTurn,
  replies,
  sendBatch,
  setup,
  statuses,
  textOf,
  user
} from "./fixtures.js"

const turnStarts = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.flatMap((e) => (e.type === "session/event" && e.event.type === "turn/start" ? [e.event.data.turn] : []))

const settledTurns = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.flatMap((e) => (e.type === "agent/settled" ? [[e.turn, e.reason.kind] as const] : []))

/** R23: no two consecutive identical statuses, starting from idle. */
const assertLegalStatuses = (trace: ReadonlyArray<string>) => {
  trace.forEach((status, i) => {
    assert.strictEqual(status, i % 2 === 0 ? "running" : "idle", `status #${i} in ${JSON.stringify(trace)}`)
  })
}

describe("one send, one turn (R32)", () => {
  it.scoped(
    "R32: follow-ups sent while a turn runs (one by one, in a batch, from a step hook, from an event subscriber) are never merged: each is the sole prompt of its own turn, in FIFO order",
    () =>
      Effect.gen(function*() {
        const hold = yield* makeHold
        const { agent, model, rec: recorder } = yield* setup({
          hooks: {
            step: ({ agent, step, turn }) =>
              turn === 1 && step === 1
                ? hold.wait
                : turn === 2 && step === 1
                ? Effect.asVoid(Effect.orDie(agent.followup(user("from hook"))))
                : Effect.void
          }
        })
        yield* model.push(...replies(7))
        // A subscriber that reacts to turn 3's start by sending a follow-up.
        const observed = yield* Deferred.make<void>()
        const events = yield* agent.subscribe
        yield* Effect.fork(
          Stream.fromQueue(events).pipe(
            Stream.filter(isDurable("turn/start", (e) => e.data.turn === 3)),
            Stream.take(1),
            Stream.runForEach(() =>
              Effect.zipRight(
                Effect.orDie(agent.followup(user("from observer"))),
                Deferred.succeed(observed, undefined)
              )
            )
          )
        )

        yield* agent.followup(user("first"))
        yield* hold.reached
        yield* agent.followup(user("f2"))
        yield* agent.followup(user("f3"))
        yield* sendBatch(agent, ["f4", "followup"], ["f5", "followup"])
        yield* hold.release
        yield* Deferred.await(observed)
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(promptsByTurn(log), [
          [1, ["first"]],
          [2, ["f2"]],
          [3, ["f3"]],
          [4, ["f4"]],
          [5, ["f5"]],
          [6, ["from hook"]],
          [7, ["from observer"]]
        ])
        // The model's requests show it: each request adds exactly one new user prompt, its turn's own.
        const requests = (yield* model.requests).map(conversation)
        assert.strictEqual(requests.length, 7)
        const prompts = ["first", "f2", "f3", "f4", "f5", "from hook", "from observer"]
        requests.forEach((request, i) => {
          assert.deepStrictEqual(
            request.filter((m) => m.startsWith("user:")),
            prompts.slice(0, i + 1).map((p) => `user:${p}`)
          )
          assert.strictEqual(request.at(-1), `user:${prompts[i]}`)
        })
        // One running interval for the whole chain.
        assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle"])
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
      }).pipe(Effect.provide(S.layer()))
  )

  it.scoped("R32: follow-ups sent while the model streams are not merged into the running turn or with each other", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.delayed("1 second", S.textResponse("a1")), S.textResponse("a2"), S.textResponse("a3"))
      yield* agent.followup(user("first"))
      yield* recorder.waitFor(isDurable("step/start"))
      yield* awaitSleeper
      yield* agent.followup(user("second"))
      yield* agent.followup(user("third"))
      yield* TestClock.adjust("1 second")
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["first"]], [2, ["second"]], [3, ["third"]]])
      assert.deepStrictEqual((yield* model.requests).map((r) => conversation(r).at(-1)), [
        "user:first",
        "user:second",
        "user:third"
      ])
      // Only one step in turn 1: a queued turn never forces a step of the running one.
      assert.strictEqual((yield* agent.log).filter((e) => e.type === "step/start" && e.data.turn === 1).length, 1)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R32 R42: a prompt dropped at admission is gone alone: its neighbours still run as their own turns", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: (input, next) =>
            textOf(input.message.content) === "blocked"
              ? Effect.succeed({ kind: "block" as const, reason: "not now" })
              : textOf(input.message.content) === "failing"
              ? Effect.fail("hook failed")
              : next
        }
      })
      yield* model.push(...replies(2))
      yield* sendBatch(agent, ["a", "followup"], ["blocked", "followup"], ["failing", "followup"], ["c", "followup"])
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["a"]], [2, ["c"]]])
      assert.isFalse(
        log.some((e) => e.type === "user/message" && ["blocked", "failing"].includes(textOf(e.data.content)))
      )
      // R23: one running interval across the rejected admissions between the turns.
      assert.deepStrictEqual(yield* coarseTrace(recorder), [
        "enqueue:queued",
        "enqueue:queued",
        "enqueue:queued",
        ...claimed,
        ...coarseTurn,
        "dequeue",
        "dequeue",
        "dequeue",
        "turn/start",
        "user/message",
        "step/start",
        "assistant/message",
        "step/end",
        ...completedIdle
      ])
    }).pipe(Effect.provide(S.layer())))
})

describe("turn numbers come from the log (R38, R134)", () => {
  it.scoped("R38 R134: an agent over a seeded log continues its numbering (prompted and retry turns)", () =>
    Effect.gen(function*() {
      const seed = goodLogs.find((l) => l.name === "five mixed turns")!.inputs
      const session = yield* SessionLog.memory({ seed: stamp(seed) })
      const { agent, model, rec: recorder } = yield* setup({ session })
      yield* model.push(...replies(3))
      yield* agent.followup(user("sixth"))
      yield* agent.whenIdle
      yield* agent.followup(user("seventh"))
      yield* agent.whenIdle
      yield* agent.retry
      yield* agent.whenIdle
      const events = yield* recorder.events
      assert.deepStrictEqual(turnStarts(events), [6, 7, 8])
      assert.deepStrictEqual(settledTurns(events), [[6, "completed"], [7, "completed"], [8, "completed"]])
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log).slice(-3), [[6, ["sixth"]], [7, ["seventh"]], [8, []]])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R38 R134: a turn appended to the session by another producer while the agent is idle is counted: the agent's next turn follows it", () =>
    Effect.gen(function*() {
      const session = yield* SessionLog.memory()
      const { agent, model, rec: recorder } = yield* setup({ session })
      yield* model.push(...replies(2))
      yield* agent.followup(user("one"))
      yield* agent.whenIdle
      // Another producer writes a whole turn on the same session.
      yield* session.append(ev.user("out of band", MessageSource.plugin("other")))
      yield* session.append(ev.turnStart(2, { kind: "message", source: MessageSource.plugin("other") }))
      yield* session.append(ev.turnEnd(2))
      yield* agent.followup(user("three"))
      yield* agent.whenIdle
      assert.deepStrictEqual(settledTurns(yield* recorder.events), [[1, "completed"], [3, "completed"]])
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["one"]], [2, []], [3, ["three"]]])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R38 R60: a turn whose turn/start append fails leaves no turn; the next turn reuses its number", () =>
    Effect.gen(function*() {
      const faults = yield* SessionStore.StoreFaults
      const session = yield* SessionLog.make()
      const { agent, model, rec: recorder } = yield* setup({ session })
      yield* model.push(...replies(2))
      yield* agent.followup(user("one"))
      yield* agent.whenIdle
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "turn/start"))
      yield* agent.followup(user("lost"))
      yield* agent.whenIdle
      yield* faults.clear
      yield* agent.followup(user("two"))
      yield* agent.whenIdle

      const events = yield* recorder.events
      const errors = events.flatMap((e) => (e.type === "agent/error" ? [[e.turn, e.step] as const] : []))
      assert.deepStrictEqual(errors, [[2, 0]])
      assert.deepStrictEqual(turnStarts(events), [1, 2])
      assert.deepStrictEqual(settledTurns(events), [[1, "completed"], [2, "completed"]])
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["one"]], [2, ["two"]]])
      assert.isFalse(log.some((e) => e.type === "user/message" && textOf(e.data.content) === "lost"))
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(Layer.merge(S.layer(), SessionStore.layerMemoryWithFaults))))
})

describe("status transitions (R23)", () => {
  it.scoped("R23 R89: chained turns share one running interval; no status event repeats", () =>
    Effect.gen(function*() {
      const { agent, hold, model, rec: recorder } = yield* heldFirstStep
      yield* model.push(...replies(4))
      assert.strictEqual(yield* agent.status, "idle")
      yield* sendBatch(agent, ["a", "followup"], ["b", "followup"])
      yield* hold.reached
      assert.strictEqual(yield* agent.status, "running")
      // More work while running: no new `running`.
      yield* agent.followup(user("c"))
      yield* agent.steer(user("steer"))
      yield* hold.release
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle"])
      const trace = yield* coarseTrace(recorder)
      // settled(n) → dequeue(next) with no idle in between (R89).
      assert.deepStrictEqual(
        trace.filter((e) => e.startsWith("settled") || e === "dequeue" || e.startsWith("status")),
        [
          "status:running",
          "dequeue",
          "dequeue",
          "settled:completed",
          "dequeue",
          "settled:completed",
          "dequeue",
          "settled:completed",
          "status:idle"
        ]
      )
      // A second burst of work after idling is a second interval.
      yield* agent.followup(user("d"))
      yield* agent.whenIdle
      assertLegalStatuses(statuses(yield* recorder.events))
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle", "running", "idle"])
      assert.deepStrictEqual(promptsByTurn(yield* agent.log).map(([, p]) => p), [["a"], ["b"], ["c"], ["d"]])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R23 R75: a request-error retry chain is one running interval; only its terminal turn settles", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup({
        hooks: { requestError: () => Effect.succeed("retry" as const) }
      })
      yield* model.push(S.failure("SERVER"), S.textResponse("recovered"))
      yield* agent.followup(user("go"))
      yield* agent.whenIdle
      const events = yield* recorder.events
      assert.deepStrictEqual(statuses(events), ["running", "idle"])
      assert.deepStrictEqual(turnStarts(events), [1, 2])
      assert.deepStrictEqual(settledTurns(events), [[2, "completed"]])
      assert.deepStrictEqual(LogCheck.checkLog(yield* agent.log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R23 R26: an idle retry is its own running interval; injections and parked items never change the status", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(...replies(2))
      yield* agent.inject(user("context"))
      yield* agent.send(user("parked"), { target: "next-turn", wakeup: false })
      yield* agent.whenIdle
      assert.deepStrictEqual(statuses(yield* recorder.events), [])
      yield* agent.retry
      yield* agent.whenIdle
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle"])
      assert.deepStrictEqual(turnStarts(yield* recorder.events), [1])
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, []]])
    }).pipe(Effect.provide(S.layer())))
})
