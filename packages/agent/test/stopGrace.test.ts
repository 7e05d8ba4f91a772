/**
 * The graceful stop (R224): an agent built with a `StopGrace` in context, whose scope closes, takes no new work and
 * lets its running turn end on its own for at most the grace, then is disposed. A turn that ends in time closes
 * `completed` and nothing is claimed after it; the queued items stay pending in the durable inbox and the next agent
 * over the session runs them in acceptance order; a turn still running at the grace closes `disposed`; an idle agent
 * stops at once; a send during the stop is refused. Time is the `TestClock`: the grace's end is an explicit
 * `TestClock.adjust`, and the test waits for the grace's timer to be set before it lets a turn end.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids, type SessionEvent } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Clock, Duration, Effect, Exit, Fiber, Option, Ref, Scope, TestClock } from "effect"
import {
  agentOn,
  assertWellFormed,
  compact,
  logTrace,
  makeHold,
  mid,
  ofType,
  prompt,
  storedInbox,
  withDurableStore
} from "./fixtures.js"

const sid = Ids.SessionId.make("stop-grace")
const grace = Duration.seconds(10)

/**
 * An agent over a new durable log of `sid`, built with `stopGrace` (by default `grace`) as its stop grace in a scope
 * the test closes itself; its turn 1's step hook waits at the returned hold. `replies` answer its model.
 */
const heldAgent = (
  replies: ReadonlyArray<S.Reply>,
  stopGrace: Effect.Effect<Duration.DurationInput> = Effect.succeed(grace)
) =>
  Effect.gen(function*() {
    const hold = yield* makeHold
    const scope = yield* Scope.make()
    const log = yield* SessionLog.make({ id: sid })
    const { agent } = yield* agentOn(log, replies, {
      hooks: { step: ({ step, turn }) => (turn === 1 && step === 1 ? hold.wait : Effect.void) }
    }).pipe(Effect.provideService(Agent.StopGrace, stopGrace), Scope.extend(scope))
    const rec = yield* EventRecorder.make(agent)
    return { agent, hold, rec, scope }
  })

/**
 * Closes `scope` in a fiber and returns it once the graceful stop is under way: the grace's timer is set (a sleeper on
 * the `TestClock` at now + `grace`), which the stop does after it took the agent off new work. Never sleeps for real.
 */
const closeAndAwaitStop = (scope: Scope.CloseableScope) =>
  Effect.gen(function*() {
    const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(grace)
    for (let i = 0; i < 10_000; i++) {
      if (Chunk.some(yield* TestClock.sleeps(), (at) => at === deadline)) return closing
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("the graceful stop set no timer for its grace")
  })

/** The user messages of the log, in order, by their text. */
const asked = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  logTrace(log).filter((t) => t.startsWith("user/message:"))

describe("the graceful stop (StopGrace)", () => {
  it.effect("R224: a turn that ends within the grace closes completed, nothing is claimed after it, and the next agent runs the queued items in order", () =>
    withDurableStore((store) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const { agent, hold, rec, scope } = yield* heldAgent([S.textResponse("one"), S.textResponse("never")])
          yield* agent.followup(prompt("p1"), { id: mid("p1") })
          yield* hold.reached
          yield* agent.followup(prompt("p2"), { id: mid("p2") })
          yield* agent.followup(prompt("p3"), { id: mid("p3") })
          const closing = yield* closeAndAwaitStop(scope)
          // Stopping: a send is refused (the agent is going away; the next host takes the session's work).
          const refused = yield* Effect.flip(agent.followup(prompt("late"), { id: mid("late") }))
          assert.strictEqual(refused._tag, "AgentDisposedError")
          // The turn ends on its own, with no clock moved: well within the grace.
          yield* hold.release
          yield* Fiber.join(closing)
          const log = yield* agent.log
          assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["completed"])
          assert.deepStrictEqual(asked(log), ["user/message:p1"])
          assertWellFormed(log)
          const events = compact(yield* rec.events)
          // Nothing claimed after the turn: one dequeue; the close ends with the settled turn, idle, then disposal.
          assert.deepStrictEqual(events.filter((e) => e === "dequeue"), ["dequeue"])
          assert.deepStrictEqual(events.slice(-4), ["settled:completed", "status:idle", "discard:2", "disposed"])
          // No clock moved: the stop never waited for its grace to run out.
          assert.strictEqual(yield* Clock.currentTimeMillis, 0)
        }))
        // Both queued items are still pending in the durable inbox; the late send was never accepted.
        assert.deepStrictEqual((yield* storedInbox(store, sid)).filter((r) => !r.includes(":p1")), [
          "accepted:queued:p2",
          "accepted:queued:p3"
        ])
        const reopened = yield* SessionLog.open(sid)
        const { agent } = yield* agentOn(reopened, [S.textResponse("two"), S.textResponse("three")])
        yield* agent.whenIdle
        const log = yield* agent.log
        assert.deepStrictEqual(asked(log), ["user/message:p1", "user/message:p2", "user/message:p3"])
        assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), [
          "completed",
          "completed",
          "completed"
        ])
        assertWellFormed(log)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("R224: a turn still running when the grace runs out is disposed; the queued item stays pending", () =>
    withDurableStore((store) =>
      Effect.gen(function*() {
        const { agent, hold, rec, scope } = yield* heldAgent([S.textResponse("never")])
        yield* agent.followup(prompt("p1"), { id: mid("p1") })
        yield* hold.reached
        yield* agent.followup(prompt("p2"), { id: mid("p2") })
        const closing = yield* closeAndAwaitStop(scope)
        // Just short of the grace the turn still runs and the close still waits.
        yield* TestClock.adjust(Duration.subtract(grace, Duration.millis(1)))
        assert.isTrue(Option.isNone(yield* Fiber.poll(closing)))
        yield* TestClock.adjust(Duration.millis(1))
        yield* Fiber.join(closing)
        const log = yield* agent.log
        assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["disposed"])
        assertWellFormed(log)
        assert.deepStrictEqual(compact(yield* rec.events).slice(-1), ["disposed"])
        assert.deepStrictEqual((yield* storedInbox(store, sid)).filter((r) => !r.includes(":p1")), [
          "accepted:queued:p2"
        ])
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("R224: an idle agent stops at once, whatever its grace", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        const { agent, rec, scope } = yield* heldAgent([], Effect.succeed(Duration.infinity))
        // No clock is moved: with an infinite grace, a close that waited would never return.
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual(compact(yield* rec.events), ["disposed"])
        const refused = yield* Effect.flip(agent.followup(prompt("late")))
        assert.strictEqual(refused._tag, "AgentDisposedError")
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("R224: the grace is asked for when the scope closes: a host that says zero then disposes the turn at once", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        const chosen = yield* Ref.make<Duration.DurationInput>(grace)
        const { agent, hold, scope } = yield* heldAgent([S.textResponse("never")], Ref.get(chosen))
        yield* agent.followup(prompt("p1"), { id: mid("p1") })
        yield* hold.reached
        // As a host deleting the session does: no grace for this close.
        yield* Ref.set(chosen, Duration.zero)
        yield* Scope.close(scope, Exit.void)
        const log = yield* agent.log
        assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["disposed"])
        assertWellFormed(log)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))
})
