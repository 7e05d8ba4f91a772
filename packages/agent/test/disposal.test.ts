/**
 * Disposal — closing the agent's scope (R86): it records `disposed` unless an earlier cause
 * was recorded, discards pending work with one `discard`, ends a running turn `disposed`, and publishes
 * `agent/disposed` as the last event, which ends `agent.events`. Afterwards `send` fails, `cancel` does nothing and
 * `retry` fails.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Agent as AgentT } from "@harness/agent"
import { Agent } from "@harness/agent"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Deferred, Effect, Exit, Fiber, Scope, Stream } from "effect"
import {
  assertWellFormed,
  claimed,
  compact,
  context,
  isDurable,
  isLive,
  live,
  logTrace,
  makeHold,
  ofType,
  opened,
  prompt,
  refusingAt,
  stageBehindRefusal
} from "./fixtures.js"

const parked = { target: "next-turn", wakeup: false } as const

/** An agent built in a scope the test closes itself. */
const makeInScope = (options: AgentT.Options) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const agent = yield* Agent.make(options).pipe(Scope.extend(scope))
    return { agent, scope }
  })

/** A step hook that signals `entered` and then ignores interruption until `release` completes. */
const holdingStep = (entered: Deferred.Deferred<void>, release: Deferred.Deferred<void>) => () =>
  Effect.zipRight(Deferred.succeed(entered, undefined), Effect.uninterruptible(Deferred.await(release)))

/**
 * An agent in a scope the test closes, whose turn on "go" is held inside its step hook (ignoring interruption) until
 * `release`; returns once the hook is entered.
 */
const heldInStep = Effect.gen(function*() {
  const entered = yield* Deferred.make<void>()
  const gate = yield* Deferred.make<void>()
  const { agent, scope } = yield* makeInScope({ model: "m", hooks: { step: holdingStep(entered, gate) } })
  const rec = yield* EventRecorder.make(agent)
  yield* agent.followup(prompt("go"))
  yield* Deferred.await(entered)
  return { agent, rec, release: Deferred.succeed(gate, undefined), scope }
})

describe("disposal", () => {
  it.scoped("R86: disposal discards pending work, ends the running turn disposed; agent/disposed is last and ends events", () =>
    Effect.gen(function*() {
      const { agent, scope } = yield* makeInScope({ model: "m" })
      const rec = yield* EventRecorder.make(agent)
      const model = yield* S.ScriptedModel
      // The stream subscribes when its fiber first runs: at the latest once this fiber waits below.
      const collector = yield* Effect.fork(Stream.runCollect(agent.events))
      yield* Effect.yieldNow()
      yield* model.push(S.hanging(S.text("partial")))
      yield* agent.followup(prompt("p1"))
      yield* rec.waitFor(isDurable("assistant/chunk"))
      const s = yield* agent.steer(prompt("steer"))
      const p2 = yield* agent.followup(prompt("p2"))
      const p3 = yield* agent.send(prompt("p3"), parked)
      yield* Scope.close(scope, Exit.void)
      const collected = Chunk.toReadonlyArray(yield* Fiber.join(collector))
      const expected = [
        ...claimed,
        ...opened,
        "assistant/chunk*",
        "enqueue:steering",
        "enqueue:queued",
        "enqueue:queued",
        "discard:3",
        "step/end",
        "turn/end:disposed",
        "settled:aborted",
        "status:idle",
        "disposed"
      ]
      const all = yield* rec.events
      assert.deepStrictEqual(compact(all), expected)
      // `agent.events` ended by itself after agent/disposed, having missed nothing since it subscribed (at the latest
      // while this fiber waited for the first chunk): the final turn/end included.
      assert.deepStrictEqual(collected, all.slice(all.length - collected.length))
      assert.deepStrictEqual(compact(collected).slice(-9), expected.slice(-9))
      // Disposal publishes no cancel-requested; the discard lists queued items, then steering.
      assert.deepStrictEqual(live(collected, "agent/cancel-requested"), [])
      assert.deepStrictEqual(live(collected, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [p2, p3, s])
      const log = yield* agent.log
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason), [{ kind: "disposed" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R86: after disposal send and retry fail with AgentDisposedError, cancel is a no-op; disposed stays last", () =>
    Effect.gen(function*() {
      const { agent, scope } = yield* makeInScope({ model: "m" })
      const rec = yield* EventRecorder.make(agent)
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("hi"), S.textResponse("never"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      yield* Scope.close(scope, Exit.void)
      const before = yield* rec.events
      assert.deepStrictEqual(compact(before).slice(-3), ["settled:completed", "status:idle", "disposed"])
      assert.deepStrictEqual(live(before, "agent/disposed").length, 1)

      for (
        const attempt of [
          agent.followup(prompt("late")),
          agent.steer(prompt("late")),
          agent.inject(context("late")),
          agent.send(prompt("late"), parked)
        ]
      ) {
        const error = yield* Effect.flip(attempt)
        assert.deepStrictEqual(error._tag, "AgentDisposedError")
      }
      const batch = yield* Effect.flip(agent.batch([{ send: [prompt("late"), parked] }]))
      assert.deepStrictEqual(batch._tag, "AgentDisposedError")
      yield* agent.cancel("user")
      yield* agent.cancel("parent", { keepInbox: true })
      const retry = yield* Effect.flip(agent.retry)
      assert.deepStrictEqual(retry._tag, "AgentDisposedError")
      yield* agent.whenIdle
      // Nothing was published after agent/disposed and nothing was logged.
      assert.deepStrictEqual(yield* rec.events, before)
      assert.deepStrictEqual(logTrace(yield* agent.log).filter((n) => n.startsWith("user/message")), [
        "user/message:go"
      ])
      assert.deepStrictEqual(yield* model.remaining, 1)
      // A stream run after disposal is empty.
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(agent.events)), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R86: disposing an idle agent publishes only agent/disposed", () =>
    Effect.gen(function*() {
      const { agent, scope } = yield* makeInScope({ model: "m" })
      const rec = yield* EventRecorder.make(agent)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(compact(yield* rec.events), ["disposed"])
      assert.deepStrictEqual(yield* agent.log, [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R78/R86: a user cancel recorded before disposal wins: the turn ends aborted, not disposed", () =>
    Effect.gen(function*() {
      const { agent, rec, release, scope } = yield* heldInStep
      yield* agent.cancel("user")
      // Disposal waits for the turn, which is held inside the step hook.
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* release
      yield* Fiber.join(closing)
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [
        ...claimed,
        "turn/start",
        "user/message",
        "cancel-requested:user",
        "turn/end:aborted",
        "settled:aborted",
        "status:idle",
        "disposed"
      ])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R78/R86: disposal first records disposed; a cancel after it is a no-op", () =>
    Effect.gen(function*() {
      const { agent, rec, release, scope } = yield* heldInStep
      const p = yield* agent.send(prompt("parked"), parked)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      // Disposal's discard shows it has recorded its cause.
      const discard = yield* rec.waitFor(isLive("agent/inbox/discard"))
      assert.deepStrictEqual(discard.type === "agent/inbox/discard" ? discard.messages.map((m) => m.id) : [], [p])
      yield* agent.cancel("user")
      yield* release
      yield* Fiber.join(closing)
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [
        ...claimed,
        "turn/start",
        "user/message",
        "enqueue:queued",
        "discard:1",
        "turn/end:disposed",
        "settled:aborted",
        "status:idle",
        "disposed"
      ])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R80/R86: disposal during admission drops the claimed prompt: no turn, then agent/disposed", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const { agent, scope } = yield* makeInScope({
        model: "m",
        hooks: {
          promptSubmit: (_, next) =>
            Effect.zipRight(Deferred.succeed(entered, undefined), Effect.zipRight(Effect.never, next))
        }
      })
      const rec = yield* EventRecorder.make(agent)
      const p1 = yield* agent.followup(prompt("p1"))
      yield* Deferred.await(entered)
      const p2 = yield* agent.followup(prompt("p2"))
      yield* Scope.close(scope, Exit.void)
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [...claimed, "enqueue:queued", "discard:1", "status:idle", "disposed"])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [p1])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [p2])
      assert.deepStrictEqual(yield* agent.log, [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R43/R86: disposal discards steering left staged by a blocked admission and logs its context out of turn", () =>
    Effect.gen(function*() {
      const hold = yield* makeHold
      const { agent, scope } = yield* makeInScope({ model: "m", hooks: { promptSubmit: refusingAt(hold) } })
      const rec = yield* EventRecorder.make(agent)
      const s = yield* stageBehindRefusal(agent, hold)
      // The blocked admission kept the steering and its context staged (R43).
      assert.deepStrictEqual(yield* agent.log, [])
      yield* rec.clear
      yield* Scope.close(scope, Exit.void)
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), ["discard:1", "user/message", "disposed"])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [s])
      assert.deepStrictEqual(logTrace(yield* agent.log), ["user/message:ctx"])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))
})
