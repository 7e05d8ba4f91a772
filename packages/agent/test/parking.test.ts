/**
 * Parking (R31, R25): a `next-turn` send without wake-up waits in the queued FIFO. It never makes the agent run;
 * parked items run — each as its own turn, in FIFO order — only ahead of a later waking item, and those behind the
 * last waking item stay parked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Option, TestClock } from "effect"
import {
  awaitSleeper,
  claimed,
  coarseTrace,
  coarseTurn,
  conversation,
  ctx,
  heldFirstStep,
  idleLog,
  promptsByTurn,
  replies,
  routes,
  sendBatch,
  setup,
  statuses,
  textOf,
  user
} from "./fixtures.js"

describe("parking (R31)", () => {
  it.scoped("R31 R25 R23: a lone parked item leaves the agent idle: no status change, no turn, whenIdle resolves", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      const id = yield* agent.send(user("parked"), routes.park)
      yield* agent.whenIdle
      // Give a wrongly scheduled driver every chance to run.
      yield* TestClock.adjust("1 hour")
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.status, "idle")
      assert.isFalse(yield* agent.acceptsNextStep)
      assert.deepStrictEqual(yield* recorder.trace, ["enqueue:queued"])
      const events = yield* recorder.events
      assert.strictEqual(events[0]?.type === "agent/inbox/enqueue" ? events[0].message.id : undefined, id)
      assert.deepStrictEqual(yield* agent.log, [])
      assert.strictEqual((yield* model.requests).length, 0)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31: several parked items stay parked; an idle injection beside them does not wake them either", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      yield* agent.send(user("p1"), routes.park)
      yield* agent.inject(ctx("context"))
      yield* agent.send(user("p2"), routes.park)
      yield* agent.sendAll([[user("p3"), routes.park], [ctx("more context"), { target: "next-step", wakeup: false }]])
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* recorder.trace, [
        "enqueue:queued",
        "user/message",
        "enqueue:queued",
        "enqueue:queued",
        "user/message"
      ])
      assert.strictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31 R32 R23: parked items run in FIFO order, each its own turn, ahead of a later waking item, in one running interval", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(...replies(3))
      const p1 = yield* agent.send(user("p1"), routes.park)
      const p2 = yield* agent.send(user("p2"), routes.park)
      yield* agent.whenIdle
      assert.strictEqual((yield* model.requests).length, 0, "nothing ran before the waking item")
      const w = yield* agent.followup(user("w"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["p1"]], [2, ["p2"]], [3, ["w"]]])
      const events = yield* recorder.events
      assert.deepStrictEqual(
        events.flatMap((e) => (e.type === "agent/inbox/dequeue" ? [e.message.id] : [])),
        [p1, p2, w]
      )
      assert.deepStrictEqual(yield* coarseTrace(recorder), [
        "enqueue:queued",
        "enqueue:queued",
        ...claimed,
        ...coarseTurn,
        "dequeue",
        ...coarseTurn,
        "dequeue",
        ...coarseTurn,
        "status:idle"
      ])
      // Each request's newest prompt is that turn's own, alone.
      assert.deepStrictEqual((yield* model.requests).map((r) => conversation(r).at(-1)), [
        "user:p1",
        "user:p2",
        "user:w"
      ])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31: an idle steer is a waking item too: the parked item ahead of it runs first", () =>
    Effect.gen(function*() {
      const model = yield* S.ScriptedModel
      yield* model.push(...replies(2))
      const agent = yield* Agent.make({ model: "m" })
      yield* agent.send(user("parked"), routes.park)
      yield* agent.steer(user("steer"))
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["parked"]], [2, ["steer"]]])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31: parked items behind the last waking item stay parked after the waking work finishes; the next waking send releases them", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(...replies(5))
      yield* sendBatch(agent, ["p1", "park"], ["w1", "followup"], ["p2", "park"], ["p3", "park"])
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["p1"]], [2, ["w1"]]])
      assert.strictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle"])

      yield* TestClock.adjust("1 hour")
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["p1"]], [2, ["w1"]]], "still parked")

      yield* agent.steer(user("w2"))
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [
        [1, ["p1"]],
        [2, ["w1"]],
        [3, ["p2"]],
        [4, ["p3"]],
        [5, ["w2"]]
      ])
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle", "running", "idle"])
      assert.deepStrictEqual(LogCheck.checkLog(yield* agent.log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31 R28: an item parked while a turn runs waits for a later waking item; the agent goes idle with it pending", () =>
    Effect.gen(function*() {
      const { agent, hold, model, rec: recorder } = yield* heldFirstStep
      yield* model.push(...replies(3))
      yield* agent.followup(user("first"))
      yield* hold.reached
      yield* agent.send(user("parked"), routes.park)
      yield* hold.release
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["first"]]])
      assert.deepStrictEqual(statuses(yield* recorder.events), ["running", "idle"])

      yield* agent.followup(user("later"))
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["first"]], [2, ["parked"]], [3, ["later"]]])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R31 R25: whenIdle waits for waking work queued behind parked items, and not for the parked items after it", () =>
    Effect.gen(function*() {
      const model = yield* S.ScriptedModel
      yield* model.push(S.delayed("10 seconds", S.textResponse("a1")), S.textResponse("a2"))
      const agent = yield* Agent.make({ model: "m" })
      yield* sendBatch(agent, ["p1", "park"], ["w", "steer"], ["p2", "park"])
      const waiter = yield* Effect.fork(agent.whenIdle)
      // p1's request is delayed: the waiter must still be waiting after the clock moved part of the way.
      yield* awaitSleeper
      yield* TestClock.adjust("5 seconds")
      assert.isTrue(Option.isNone(yield* waiter.poll), "whenIdle resolved while waking work was queued")
      yield* TestClock.adjust("5 seconds")
      yield* waiter.await
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["p1"]], [2, ["w"]]])
      assert.deepStrictEqual(
        log.flatMap((e) => (e.type === "assistant/message" ? [textOf(e.data.content)] : [])),
        ["a1", "a2"]
      )
    }).pipe(Effect.provide(S.layer())))
})
