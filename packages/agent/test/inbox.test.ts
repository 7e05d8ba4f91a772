/**
 * The inbox as callers see it (ADR 0009): `inbox` lists the pending items in acceptance order, `withdraw(id)`
 * removes exactly one pending item — queued, parked or steering — without stopping the turn, and publishes one
 * `agent/inbox/discard` for it; anything else is `NotPending`. FIFO conservation (R88) and every message's fate hold.
 * Time is the `TestClock`: the running turn waits on a delayed model reply.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, TestClock } from "effect"
import { assertWellFormed, context, idleLog, isDurable, live, logTrace, prompt, setup } from "./fixtures.js"

const parked = { target: "next-turn", wakeup: false } as const

/** An agent whose first turn waits 1 s on the clock for its model reply, then every turn answers at once. */
const busyAgent = Effect.gen(function*() {
  const { agent, model, rec } = yield* setup()
  yield* model.push(S.delayed(1000, S.textResponse("first")), S.textResponse("two"), S.textResponse("three"))
  yield* agent.followup(prompt("p1"))
  yield* rec.waitFor(isDurable("step/start"))
  return { agent, rec, model }
})

describe("inbox and withdraw", () => {
  it.scoped("inbox lists queued, parked and steering items in acceptance order; staged context is not listed", () =>
    Effect.gen(function*() {
      const { agent } = yield* busyAgent
      const q = yield* agent.followup(prompt("q"))
      const s = yield* agent.steer(prompt("s"))
      yield* agent.inject(context("ctx"))
      const p = yield* agent.send(prompt("p"), parked)
      const items = yield* agent.inbox
      assert.deepStrictEqual(items.map((i) => [i.id, i.placement, i.waking, i.content[0].text]), [
        [q, "queued", true, "q"],
        [s, "steering", true, "s"],
        [p, "queued", false, "p"]
      ])
      assert.isTrue(items[0]!.order < items[1]!.order && items[1]!.order < items[2]!.order)
      assert.deepStrictEqual(items[1]!.source, { kind: "user" })
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R88: withdrawing a queued item publishes one discard for exactly it; it never runs; the turn goes on", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* busyAgent
      const a = yield* agent.followup(prompt("a"))
      const b = yield* agent.followup(prompt("b"))
      const result = yield* agent.withdraw(a)
      assert.strictEqual(result._tag, "Withdrawn")
      assert.deepStrictEqual(result._tag === "Withdrawn" ? [result.item.id, result.item.placement] : [], [a, "queued"])
      const discards = live(yield* rec.events, "agent/inbox/discard")
      assert.deepStrictEqual(discards.map((d) => [d.messages.map((m) => m.id), d.reason]), [[[a], "withdraw"]])
      assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), [b])
      // The running turn was not touched: it finishes, then b runs.
      yield* TestClock.adjust(1000)
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(
        logTrace(log).filter((n) => n.startsWith("user/message") || n.startsWith("turn/end")),
        ["user/message:p1", "turn/end:completed", "user/message:b", "turn/end:completed"]
      )
      assert.deepStrictEqual(yield* model.remaining, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(Invariants.fifoConservation(events), [])
      assert.deepStrictEqual(Invariants.messageFates(events, log, { accepted: [a, b] }), [])
      assert.deepStrictEqual(
        [...Invariants.fates(events, log, [a, b])],
        [[a, "discarded"], [b, "logged"]]
      )
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("withdrawing steering keeps it out of the running turn; withdrawing a parked item keeps it from ever running", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* busyAgent
      const s = yield* agent.steer(prompt("steer"))
      const p = yield* agent.send(prompt("parked"), parked)
      assert.deepStrictEqual((yield* agent.withdraw(s))._tag, "Withdrawn")
      assert.deepStrictEqual((yield* agent.withdraw(p))._tag, "Withdrawn")
      assert.deepStrictEqual(yield* agent.inbox, [])
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      // One step, no steering: the model was asked once; the parked item never ran.
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log).filter((n) => n.startsWith("steering")), [])
      assert.deepStrictEqual((yield* model.requests).length, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/inbox/discard").map((d) => d.messages.map((m) => m.id)), [[s], [p]])
      assert.deepStrictEqual(Invariants.fifoConservation(events), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("an id that is not pending is NotPending and changes nothing: claimed, logged, withdrawn, unknown", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* busyAgent
      const [claimed] = (yield* agent.log).flatMap((e) =>
        e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []
      )
      const q = yield* agent.followup(prompt("q"))
      assert.deepStrictEqual((yield* agent.withdraw(q))._tag, "Withdrawn")
      yield* rec.clear
      const unknown = Ids.AgentMessageId.make("00000000-0000-4000-8000-000000000000")
      for (const id of [claimed!, q, unknown]) {
        assert.deepStrictEqual(yield* agent.withdraw(id), { _tag: "NotPending", id })
      }
      assert.deepStrictEqual(yield* rec.events, [])
      // A caller that lies about the type gets a typed error naming the problem.
      const invalid = yield* Effect.flip(agent.withdraw("" as Ids.AgentMessageId))
      assert.strictEqual(invalid._tag, "InvalidMessageError")
      assert.include(invalid.message, "message id")
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a withdrawn id stays accepted: sending it again returns it and enqueues nothing", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* busyAgent
      const q = yield* agent.followup(prompt("q"))
      assert.deepStrictEqual((yield* agent.withdraw(q))._tag, "Withdrawn")
      yield* rec.clear
      assert.strictEqual(yield* agent.followup(prompt("again"), { id: q }), q)
      assert.deepStrictEqual(yield* rec.events, [])
      assert.deepStrictEqual(yield* agent.inbox, [])
    }).pipe(Effect.provide(S.layer())))
})
