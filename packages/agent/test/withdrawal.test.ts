/**
 * `withdraw` (ADR 0009, ADR 0017) as its sender sees it afterwards: a withdrawn queued item is gone from everything
 * that decides what runs next (a parked item behind it stays parked when the turn ends), and on a durable log the
 * withdrawal is in the store when `withdraw` returns (a crash right after it cannot bring the item back). Time is the
 * `TestClock`; the durable log's writer is held at the settlement's append by a latch, never by sleeping.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Fiber, TestClock } from "effect"
import {
  assertWellFormed,
  awaitSleeper,
  durableStore,
  isLive,
  live,
  logTrace,
  makeHold,
  mid,
  prompt,
  routes,
  setup,
  storedInbox
} from "./fixtures.js"

describe("withdraw", () => {
  it.scoped("a withdrawn follow-up no longer wakes the agent: the parked item queued ahead of it stays parked when the turn ends", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("not for the parked item"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      // Behind the running turn: a parked item, then a follow-up that would wake the agent for both (R31).
      yield* agent.send(prompt("parked"), { ...routes.park, id: mid("parked") })
      yield* agent.followup(prompt("woken"), { id: mid("woken") })
      const withdrawn = yield* agent.withdraw(mid("woken"))
      assert.strictEqual(withdrawn._tag, "Withdrawn")
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      // Only the first turn ran; the parked item still waits, parked, for a waking send.
      assert.deepStrictEqual(logTrace(yield* agent.log).filter((t) => t.startsWith("user/message")), [
        "user/message:first"
      ])
      assert.strictEqual((yield* model.requests).length, 1)
      assert.deepStrictEqual((yield* agent.inbox).map((i) => [i.id, i.placement, i.waking]), [
        ["parked", "queued", false]
      ])
      assert.strictEqual(yield* agent.status, "idle")
      // With nothing but the parked item pending, withdrawing it too leaves an inbox a cancel has nothing to do with.
      yield* agent.withdraw(mid("parked"))
      yield* rec.clear
      yield* agent.cancel("user")
      assert.deepStrictEqual(yield* rec.events, [])
      assert.deepStrictEqual(yield* agent.inbox, [])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.effect("on a durable log the withdrawal is stored when withdraw returns, and a restart does not bring the item back", () =>
    Effect.gen(function*() {
      const sid = Ids.SessionId.make("withdrawal")
      const memory = yield* durableStore
      const hold = yield* makeHold
      // The store's append of the withdrawal's settlement waits at `hold` until the test releases it.
      const store: SessionStore.Service = {
        ...memory,
        append: (id, commit, options) =>
          commit.inbox.some((record) => record.type === "inbox/settled")
            ? Effect.zipRight(hold.wait, memory.append(id, commit, options))
            : memory.append(id, commit, options)
      }
      yield* Effect.scoped(
        Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const agent = yield* Agent.make({ model: "m", session: log })
          const rec = yield* EventRecorder.make(agent)
          yield* agent.send(prompt("later"), { ...routes.park, id: mid("later") })
          // What the store holds at the instant `withdraw` returns, read by the caller right after it.
          const withdrawing = yield* Effect.fork(
            Effect.zip(agent.withdraw(mid("later")), storedInbox(store, sid))
          )
          yield* hold.reached
          yield* hold.release
          const [result, storedOnReturn] = yield* Fiber.join(withdrawing)
          assert.strictEqual(result._tag, "Withdrawn")
          assert.deepStrictEqual(storedOnReturn, ["accepted:queued/parked:later", "settled:withdrawn:later"])
          assert.deepStrictEqual(live(yield* rec.events, "agent/inbox/discard").map((d) => d.reason), ["withdraw"])
          assert.isFalse((yield* rec.events).some(isLive("agent/error")))
        }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      )
      const reopened = yield* SessionLog.open(sid).pipe(Effect.provideService(SessionStore.SessionStore, store))
      assert.deepStrictEqual(reopened.pendingInbox, [])
    }).pipe(Effect.scoped, Effect.provide(S.layer()), Effect.orDie))
})
