/**
 * Receipts (ADR 0050): every accepted id's fate, computed from the session log and its inbox records — the same
 * after a restart of the agent over the same store — and `awaitReceipt`, which waits for the final one. Time is the
 * `TestClock`; turns are held by delayed or hanging scripted replies.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Agent } from "@harness/agent"
import { Ids, type Inbox } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Fiber, TestClock } from "effect"
import { acrossRestart, awaitSleeper, context, mid, prompt, routes, setup } from "./fixtures.js"

const receipts = (agent: Agent.Service, ids: ReadonlyArray<string>) =>
  Effect.forEach(ids, (id) => Effect.map(agent.receipt(mid(id)), (r): readonly [string, Inbox.Receipt] => [id, r]))

describe("receipts", () => {
  it.scoped("name each fate: ran, joined (with its step), applied, staged, pending, withdrawn, discarded, rejected, unknown", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup({
        hooks: {
          promptSubmit: ({ message }, next) =>
            message.id === "blocked" ? Effect.succeed({ kind: "block", reason: "no" } as const) : next
        }
      })
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("steered"))
      yield* agent.inject(context("idle context"), { id: mid("idle") })
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.steer(prompt("steer"), { id: mid("steer") })
      yield* agent.inject(context("in-turn context"), { id: mid("ctx") })
      yield* agent.send(prompt("parked"), { ...routes.park, id: mid("parked") })
      yield* agent.send(prompt("gone"), { ...routes.park, id: mid("gone") })
      yield* agent.withdraw(mid("gone"))
      assert.deepStrictEqual(yield* receipts(agent, ["first", "steer", "ctx", "parked", "gone"]), [
        ["first", { _tag: "ran", turn: 1 }],
        ["steer", { _tag: "pending", placement: "steering" }],
        ["ctx", { _tag: "staged" }],
        ["parked", { _tag: "pending", placement: "queued" }],
        ["gone", { _tag: "withdrawn" }]
      ])
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      yield* agent.cancel("user")
      yield* agent.followup(prompt("blocked"), { id: mid("blocked") })
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* receipts(agent, ["idle", "first", "steer", "ctx", "parked", "blocked", "nobody"]), [
        ["idle", { _tag: "applied" }],
        ["first", { _tag: "ran", turn: 1 }],
        // Drained after step 1's reply: the model first sees it in step 2.
        ["steer", { _tag: "joined", turn: 1, step: 2 }],
        ["ctx", { _tag: "applied", turn: 1 }],
        ["parked", { _tag: "discarded", cause: "user" }],
        ["blocked", { _tag: "rejected", reason: "refused" }],
        ["nobody", { _tag: "unknown" }]
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("awaitReceipt waits for the final fate: a queued follow-up's turn, a promoted item's join", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"), S.textResponse("three"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.followup(prompt("next"), { id: mid("next") })
      yield* agent.followup(prompt("promoted"), { id: mid("promoted") })
      const waiting = yield* Effect.fork(agent.awaitReceipt(mid("next")))
      const joining = yield* Effect.fork(agent.awaitReceipt(mid("promoted")))
      yield* agent.promote(mid("promoted"))
      yield* TestClock.adjust(1000)
      assert.deepStrictEqual(yield* Fiber.join(joining), { _tag: "joined", turn: 1, step: 2 })
      assert.deepStrictEqual(yield* Fiber.join(waiting), { _tag: "ran", turn: 2 })
      yield* agent.whenIdle
    }).pipe(Effect.provide(S.layer())))

  it.effect("are the same after a restart over the same store, pending ones included", () =>
    Effect.gen(function*() {
      const ids = ["p", "q", "s", "w", "c"]
      const { after, before } = yield* acrossRestart(
        Ids.SessionId.make("receipts"),
        (agent) =>
          Effect.gen(function*() {
            yield* agent.followup(prompt("q"), { id: mid("q") })
            yield* agent.steer(prompt("s"), { id: mid("s") })
            yield* agent.followup(prompt("w"), { id: mid("w") })
            yield* agent.withdraw(mid("w"))
            yield* agent.inject(context("c"), { id: mid("c") })
            return yield* receipts(agent, ids)
          }),
        (agent) => receipts(agent, ids)
      )
      assert.deepStrictEqual(before, [
        ["p", { _tag: "ran", turn: 1 }],
        ["q", { _tag: "pending", placement: "queued" }],
        ["s", { _tag: "pending", placement: "steering" }],
        ["w", { _tag: "withdrawn" }],
        ["c", { _tag: "staged" }]
      ])
      // Disposal logged the staged context in the turn it closed (R77), and the pending items wait for the resume.
      assert.deepStrictEqual(after, [
        ["p", { _tag: "ran", turn: 1 }],
        ["q", { _tag: "pending", placement: "queued" }],
        ["s", { _tag: "pending", placement: "steering" }],
        ["w", { _tag: "withdrawn" }],
        ["c", { _tag: "applied", turn: 1 }]
      ])
    }).pipe(Effect.orDie))
})
