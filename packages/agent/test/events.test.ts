/**
 * The canonical orders of live and durable events (R89–R91), asserted exactly, and the subscription contract:
 * `subscribe` is subscribed when it returns, and every durable append is republished live as `session/event`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Queue } from "effect"
import {
  assertWellFormed,
  claimed,
  compact,
  completedIdle,
  context,
  live,
  logTrace,
  midStream,
  opened,
  prompt,
  setup,
  streamedStep
} from "./fixtures.js"

/** The events of one completed single-step text turn, from `turn/start` to `settled` (`header`: a logged request header). */
const textTurn = (header: ReadonlyArray<string>) => [
  "turn/start",
  "user/message",
  "step/start",
  ...header,
  ...streamedStep,
  "turn/end:completed",
  "settled:completed"
]

describe("canonical event orders", () => {
  it.scoped("R89: one idle followup that completes", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.textResponse("hello"))
      const id = yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [...claimed, ...opened, ...streamedStep, ...completedIdle])
      const enqueued = live(events, "agent/inbox/enqueue")
      assert.deepStrictEqual(enqueued.map((e) => [e.message.id, e.placement]), [[id, "queued"]])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message), [enqueued[0]!.message])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason]), [[1, { kind: "completed" }]])
      // The durable events arrived live in seq order, and they are exactly the log.
      const log = yield* agent.log
      assert.deepStrictEqual(yield* rec.durable, log)
      assert.deepStrictEqual(log.map((e) => e.seq), log.map((_, i) => i))
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R23/R89: several followups are claimed back to back: settled(1) → dequeue(m2) …, no idle in between", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.textResponse("one"), S.textResponse("two"), S.textResponse("three"))
      const ids = yield* agent.sendAll([
        [prompt("m1"), { target: "next-turn", wakeup: true }],
        [prompt("m2"), { target: "next-turn", wakeup: true }],
        [prompt("m3"), { target: "next-turn", wakeup: true }]
      ])
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [
        "enqueue:queued",
        "enqueue:queued",
        ...claimed,
        ...textTurn(["request/header"]),
        "dequeue",
        ...textTurn([]),
        "dequeue",
        ...textTurn([]),
        "status:idle"
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), ids)
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => e.turn), [1, 2, 3])
      assert.deepStrictEqual(live(events, "agent/status").map((e) => e.status), ["running", "idle"])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R90: order on cancel: cancel-requested → discard → step/end → turn/end:aborted → settled:aborted → idle", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("go")
      yield* agent.steer(prompt("steer"))
      yield* agent.followup(prompt("next"))
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.deepStrictEqual(compact(yield* rec.events), [
        ...claimed,
        ...opened,
        "assistant/chunk*",
        "enqueue:steering",
        "enqueue:queued",
        "cancel-requested:user",
        "discard:2",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        "status:idle"
      ])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R90: order on a keepInbox cancel: … settled:aborted → the next claim, no discard, no idle in between", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("go", S.textResponse("two"))
      yield* agent.followup(prompt("next"))
      yield* agent.cancel("parent", { keepInbox: true })
      yield* agent.whenIdle
      assert.deepStrictEqual(compact(yield* rec.events), [
        ...claimed,
        ...opened,
        "assistant/chunk*",
        "enqueue:queued",
        "cancel-requested:parent",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        "dequeue",
        ...textTurn([]),
        "status:idle"
      ])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R91: order on a request failure: step/end → error → turn/end:error → settled:error → idle", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.failureAfter([S.text("par")], "TIMEOUT"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.deepStrictEqual(compact(yield* rec.events), [
        ...claimed,
        ...opened,
        "assistant/chunk*",
        "step/end",
        "error",
        "turn/end:request-error",
        "settled:error",
        "status:idle"
      ])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R91: order on a retried request failure: step/end → error → turn/end:error → turn/start (retry)", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({
        hooks: { requestError: () => Effect.succeed("retry" as const) }
      })
      yield* model.push(S.failure("NETWORK"), S.failure("NETWORK"), S.textResponse("third time"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const failed = ["step/start", "step/end", "error", "turn/end:request-error"]
      assert.deepStrictEqual(compact(yield* rec.events), [
        ...claimed,
        ...opened,
        "step/end",
        "error",
        "turn/end:request-error",
        "turn/start",
        ...failed,
        "turn/start",
        "step/start",
        ...streamedStep,
        ...completedIdle
      ])
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log).filter((name) => name.startsWith("turn/")), [
        "turn/start",
        "turn/end:request-error",
        "turn/start",
        "turn/end:request-error",
        "turn/start",
        "turn/end:completed"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("subscribe is subscribed when it returns: subscribe, then send, misses nothing", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("hi"))
      const queue = yield* agent.subscribe
      // An idle inject appends before it returns: its session/event is already in the subscription.
      yield* agent.inject(context("ctx"))
      const first = Chunk.toReadonlyArray(yield* Queue.takeAll(queue))
      assert.deepStrictEqual(compact(first), ["user/message"])
      yield* agent.followup(prompt("go"))
      const rest: Array<AgentEvent.AgentEvent> = []
      while (true) {
        const event = yield* Queue.take(queue)
        rest.push(event)
        if (event.type === "agent/status" && event.status === "idle") break
      }
      assert.deepStrictEqual(compact(rest), [...claimed, ...opened, ...streamedStep, ...completedIdle])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("subscribers that come after turns nobody watched share one stream from then on (ADR 0038)", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("one"), S.textResponse("two"))
      // A turn with nobody subscribed: nothing is built or published for it, and nothing of it is lost from the log.
      yield* agent.followup(prompt("unwatched"))
      yield* agent.whenIdle
      const [first, second] = yield* Effect.all([agent.subscribe, agent.subscribe], { concurrency: "unbounded" })
      yield* agent.followup(prompt("watched"))
      const until = (queue: Queue.Dequeue<AgentEvent.AgentEvent>) =>
        Effect.gen(function*() {
          const seen: Array<AgentEvent.AgentEvent> = []
          while (true) {
            const event = yield* Queue.take(queue)
            seen.push(event)
            if (event.type === "agent/status" && event.status === "idle") return seen
          }
        })
      // The request header was logged by the first turn and is unchanged: this one logs none.
      const expected = [...claimed, "turn/start", "user/message", "step/start", ...streamedStep, ...completedIdle]
      const [a, b] = yield* Effect.all([until(first), until(second)])
      assert.deepStrictEqual(compact(a), expected)
      assert.deepStrictEqual(b, a)
      const log = yield* agent.log
      assert.strictEqual(log.filter((event) => event.type === "turn/end").length, 2)
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))
})
