/**
 * `whenBusy` on a send (ADR 0050): what a send does when a turn is running at the instant it is accepted, decided
 * in the acceptance window's critical section. `reject` refuses with `TurnRunningError` and accepts nothing; `steer`
 * joins the running turn; `interrupt` cancels it keeping the inbox and runs this message next; `enqueue` is what a
 * send does without the option. An idle agent ignores it. Time is the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, TestClock } from "effect"
import { assertWellFormed, awaitSleeper, logTrace, mid, prompt, routes, setup } from "./fixtures.js"

const prompts = (log: Parameters<typeof logTrace>[0]) =>
  logTrace(log).filter((t) =>
    t.startsWith("user/message") || t.startsWith("steering/message") || t.startsWith("turn/end")
  )

describe("whenBusy", () => {
  it.scoped("reject: a send while a turn runs fails with TurnRunningError and changes nothing; an idle agent accepts it", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      yield* rec.clear
      const error = yield* Effect.flip(
        agent.send(prompt("not now"), { ...routes.followup, whenBusy: "reject", id: mid("nn") })
      )
      assert.strictEqual(error._tag, "TurnRunningError")
      assert.deepStrictEqual(yield* rec.events, [])
      assert.deepStrictEqual(yield* agent.inbox, [])
      assert.deepStrictEqual(yield* agent.receipt(mid("nn")), { _tag: "unknown" })
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      yield* agent.send(prompt("now"), { ...routes.followup, whenBusy: "reject" })
      yield* agent.whenIdle
      assert.deepStrictEqual(prompts(yield* agent.log), [
        "user/message:first",
        "turn/end:completed",
        "user/message:now",
        "turn/end:completed"
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("steer: a follow-up sent while a turn runs joins it as steering", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("steered"))
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      yield* agent.send(prompt("also this"), { ...routes.followup, whenBusy: "steer" })
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(prompts(yield* agent.log), [
        "user/message:first",
        "steering/message:also this",
        "turn/end:completed"
      ])
      assert.include((yield* rec.events).map(EventRecorder.describe), "enqueue:steering")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("interrupt: the running turn is cancelled keeping the inbox, and this message runs next, ahead of what was queued", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.hanging(S.text("…")), S.textResponse("urgent done"), S.textResponse("queued done"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* rec.waitFor((e) => e.type === "session/event" && e.event.type === "assistant/chunk")
      yield* agent.followup(prompt("queued"), { id: mid("queued") })
      yield* agent.send(prompt("urgent"), { ...routes.followup, whenBusy: "interrupt", id: mid("urgent") })
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(prompts(log), [
        "user/message:first",
        "turn/end:aborted",
        "user/message:urgent",
        "turn/end:completed",
        "user/message:queued",
        "turn/end:completed"
      ])
      const events = yield* rec.events
      assert.notInclude(events.map(EventRecorder.describe), "discard:1")
      assert.deepStrictEqual(Invariants.check({ events, log, accepted: ["first", "queued", "urgent"] }), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("enqueue, and any whenBusy on an idle agent, route as a plain send", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"), S.textResponse("three"))
      yield* agent.send(prompt("idle"), { ...routes.followup, whenBusy: "interrupt" })
      yield* awaitSleeper
      yield* agent.send(prompt("later"), { ...routes.followup, whenBusy: "enqueue" })
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(prompts(yield* agent.log), [
        "user/message:idle",
        "turn/end:completed",
        "user/message:later",
        "turn/end:completed"
      ])
    }).pipe(Effect.provide(S.layer())))
})
