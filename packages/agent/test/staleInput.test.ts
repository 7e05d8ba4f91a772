/**
 * Stale input (ADR 0059): `ttl` / `expiresAt` on a send discard the item with cause `expired` if no turn took it by
 * then (on the `Clock`: these tests move the `TestClock`), also across a restart; `supersedes: key` discards the
 * pending items sent with the same key (cause `superseded { by }`). And `cancel` answers what it discarded and kept.
 */
import { LanguageModel } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, TestClock } from "effect"
import {
  assertWellFormed,
  awaitSleeper,
  durableStore,
  mid,
  midStream,
  prompt,
  routes,
  setup,
  storedInbox
} from "./fixtures.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((item) => item.id)

const discards = (events: ReadonlyArray<{ readonly type: string }>) =>
  events.flatMap((e) =>
    e.type === "agent/inbox/discard" && "messages" in e && "reason" in e
      ? [[e.reason, (e.messages as ReadonlyArray<{ readonly id: string }>).map((m) => m.id)]]
      : []
  )

describe("stale input: ttl and expiresAt", () => {
  it.scoped("R200: a parked item not taken by its ttl is discarded as expired at that instant, not before", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      yield* agent.send(prompt("old"), { ...routes.park, id: mid("old"), ttl: 1000 })
      yield* agent.send(prompt("keep"), { ...routes.park, id: mid("keep") })
      yield* TestClock.adjust(999)
      assert.deepStrictEqual(ids(yield* agent.inbox), ["old", "keep"])
      assert.deepStrictEqual(yield* agent.receipt(mid("old")), { _tag: "pending", placement: "queued" })
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(ids(yield* agent.inbox), ["keep"])
      assert.deepStrictEqual(yield* agent.receipt(mid("old")), { _tag: "expired" })
      const events = yield* rec.events
      assert.deepStrictEqual(discards(events), [["expired", ["old"]]])
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 1 }), [])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R200: the earlier of ttl and expiresAt wins; an item already expired is accepted and discarded at once", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      yield* TestClock.adjust(10_000)
      yield* agent.send(prompt("a"), { ...routes.park, id: mid("a"), ttl: 5000, expiresAt: 10_300 })
      yield* agent.send(prompt("late"), { ...routes.park, id: mid("late"), expiresAt: 9000 })
      assert.deepStrictEqual(ids(yield* agent.inbox), ["a"])
      assert.deepStrictEqual(yield* agent.receipt(mid("late")), { _tag: "expired" })
      yield* TestClock.adjust(300)
      assert.deepStrictEqual(ids(yield* agent.inbox), [])
      assert.deepStrictEqual(yield* agent.receipt(mid("a")), { _tag: "expired" })
      const events = yield* rec.events
      assert.deepStrictEqual(
        events.map(EventRecorder.describe),
        ["enqueue:queued", "enqueue:queued", "discard:1", "discard:1"]
      )
      assert.deepStrictEqual(discards(events), [["expired", ["late"]], ["expired", ["a"]]])
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 0 }), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R201: a queued turn whose ttl runs out while an earlier turn runs never runs; one taken in time runs", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.send(prompt("stale"), { ...routes.followup, id: mid("stale"), ttl: 500 })
      yield* agent.send(prompt("fresh"), { ...routes.followup, id: mid("fresh"), ttl: 5000 })
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* agent.receipt(mid("stale")), { _tag: "expired" })
      assert.deepStrictEqual(yield* agent.receipt(mid("fresh")), { _tag: "ran", turn: 2 })
      const log = yield* agent.log
      assert.deepStrictEqual(
        log.flatMap((e) => e.type === "user/message" ? [String(e.data.messageId)] : []),
        ["first", "fresh"]
      )
      const events = yield* rec.events
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 0 }), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R201: an item whose deadline is the instant the turn before it ends is not taken: the claim checks the clock", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.send(prompt("due"), { ...routes.followup, id: mid("due"), ttl: 1000 })
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* agent.receipt(mid("due")), { _tag: "expired" })
      assert.strictEqual((yield* model.requests).length, 1)
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R201: steering whose ttl runs out before the next step is discarded, never logged", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")))
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      yield* agent.send(prompt("in time"), { ...routes.steer, id: mid("t"), ttl: 100 })
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(yield* agent.receipt(mid("t")), { _tag: "expired" })
      yield* TestClock.adjust(900)
      yield* agent.whenIdle
      assert.deepStrictEqual(
        (yield* agent.log).flatMap((e) => e.type === "steering/message" ? [e.data.messageId] : []),
        []
      )
    }).pipe(Effect.provide(S.layer())))

  it.effect("R202: ttl, expiresAt or supersedes on an injection fails with InvalidMessageError and accepts nothing", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      const error = yield* Effect.flip(agent.send(prompt("c"), { ...routes.inject, ttl: 10 }))
      assert.strictEqual(error._tag, "InvalidMessageError")
      const keyed = yield* Effect.flip(agent.send(prompt("c"), { ...routes.inject, supersedes: "k" }))
      assert.strictEqual(keyed._tag, "InvalidMessageError")
      assert.deepStrictEqual(yield* rec.events, [])
      assert.deepStrictEqual(yield* agent.log, [])
    }).pipe(Effect.scoped, Effect.provide(S.layer())))
})

describe("stale input: supersedes", () => {
  it.scoped("R203: a send with a key discards the pending items sent with that key, naming itself; other keys stay", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      yield* agent.send(prompt("status 1"), { ...routes.park, id: mid("s1"), supersedes: "status" })
      yield* agent.send(prompt("other"), { ...routes.park, id: mid("o"), supersedes: "other" })
      yield* agent.send(prompt("plain"), { ...routes.park, id: mid("p") })
      yield* agent.send(prompt("status 2"), { ...routes.park, id: mid("s2"), supersedes: "status" })
      yield* agent.send(prompt("status 3"), { ...routes.park, id: mid("s3"), supersedes: "status" })
      assert.deepStrictEqual(ids(yield* agent.inbox), ["o", "p", "s3"])
      assert.deepStrictEqual(yield* agent.receipt(mid("s1")), { _tag: "superseded", by: mid("s2") })
      assert.deepStrictEqual(yield* agent.receipt(mid("s2")), { _tag: "superseded", by: mid("s3") })
      assert.deepStrictEqual(yield* agent.receipt(mid("s3")), { _tag: "pending", placement: "queued" })
      const events = yield* rec.events
      assert.deepStrictEqual(discards(events), [["superseded", ["s1"]], ["superseded", ["s2"]]])
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 3 }), [])
      // A resend of a superseded id changes nothing (R20).
      yield* agent.send(prompt("status 1"), { ...routes.park, id: mid("s1"), supersedes: "status" })
      assert.deepStrictEqual(ids(yield* agent.inbox), ["o", "p", "s3"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R203: steering and queued turns under one key are both superseded; a taken item is not", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* midStream("first", S.textResponse("two"))
      yield* agent.send(prompt("steer 1"), { ...routes.steer, id: mid("a"), supersedes: "k" })
      yield* agent.send(prompt("queued 1"), { ...routes.park, id: mid("b"), supersedes: "k" })
      yield* agent.send(prompt("last"), { ...routes.park, id: mid("c"), supersedes: "k" })
      assert.deepStrictEqual(ids(yield* agent.inbox), ["c"])
      assert.deepStrictEqual(yield* agent.receipt(mid("a")), { _tag: "superseded", by: mid("b") })
      assert.deepStrictEqual(yield* agent.receipt(mid("b")), { _tag: "superseded", by: mid("c") })
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.strictEqual((yield* model.requests).length, 1)
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))
})

describe("stale input across a restart", () => {
  it.scoped("R204: an item that expired while the process was down is discarded at resume, never run; receipts come from the log", () =>
    Effect.gen(function*() {
      const store = yield* durableStore
      const session = Ids.SessionId.make("stale")
      yield* Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: session })
          const [model] = yield* S.make([])
          const agent = yield* Agent.make({ model: "m", session: log }).pipe(
            Effect.provideService(LanguageModel.LanguageModel, model)
          )
          yield* agent.send(prompt("short"), { ...routes.park, id: mid("short"), ttl: 100 })
          yield* agent.send(prompt("long"), { ...routes.park, id: mid("long"), ttl: 10_000 })
          yield* agent.send(prompt("v1"), { ...routes.park, id: mid("v1"), supersedes: "v" })
          yield* agent.send(prompt("v2"), { ...routes.park, id: mid("v2"), supersedes: "v" })
        }))
        // The process is down while the clock passes the first deadline: nobody expires anything.
        yield* TestClock.adjust(500)
        const reopened = yield* SessionLog.open(session)
        const [model] = yield* S.make([S.textResponse("ok")])
        const agent = yield* Agent.make({ model: "m", session: reopened, restoredInbox: "park" }).pipe(
          Effect.provideService(LanguageModel.LanguageModel, model)
        )
        assert.deepStrictEqual(ids(yield* agent.inbox), ["long", "v2"])
        assert.deepStrictEqual(yield* agent.receipt(mid("short")), { _tag: "expired" })
        assert.deepStrictEqual(yield* agent.receipt(mid("v1")), { _tag: "superseded", by: mid("v2") })
        // The restored item keeps its deadline and its key.
        yield* agent.send(prompt("v3"), { ...routes.park, id: mid("v3"), supersedes: "v" })
        assert.deepStrictEqual(yield* agent.receipt(mid("v2")), { _tag: "superseded", by: mid("v3") })
        yield* TestClock.adjust(9500)
        assert.deepStrictEqual(ids(yield* agent.inbox), ["v3"])
        assert.deepStrictEqual(yield* agent.receipt(mid("long")), { _tag: "expired" })
        assert.deepStrictEqual(yield* storedInbox(store, session), [
          "accepted:queued/parked:short",
          "accepted:queued/parked:long",
          "accepted:queued/parked:v1",
          "settled:discarded:v1",
          "accepted:queued/parked:v2",
          "settled:discarded:short",
          "settled:discarded:v2",
          "accepted:queued/parked:v3",
          "settled:discarded:long"
        ])
        assertWellFormed(yield* agent.log)
      }).pipe(Effect.provideService(SessionStore.SessionStore, store))
    }).pipe(Effect.provide(S.layer())))
})

describe("cancel answers what it did", () => {
  it.scoped("R205: without keepInbox, the ids it discarded (queued turns, then steering)", () =>
    Effect.gen(function*() {
      const { agent } = yield* midStream("first")
      yield* agent.send(prompt("q1"), { ...routes.park, id: mid("q1") })
      yield* agent.send(prompt("s1"), { ...routes.steer, id: mid("s1") })
      yield* agent.send(prompt("q2"), { ...routes.followup, id: mid("q2") })
      assert.deepStrictEqual(yield* agent.cancel("user"), { discarded: [mid("q1"), mid("q2"), mid("s1")], kept: [] })
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* agent.cancel("user"), { discarded: [], kept: [] })
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R205: with keepInbox, the ids it kept pending, in acceptance order; they run next", () =>
    Effect.gen(function*() {
      const { agent } = yield* midStream("first", S.textResponse("1"), S.textResponse("2"), S.textResponse("3"))
      yield* agent.send(prompt("q1"), { ...routes.park, id: mid("q1") })
      yield* agent.send(prompt("s1"), { ...routes.steer, id: mid("s1") })
      yield* agent.send(prompt("q2"), { ...routes.followup, id: mid("q2") })
      assert.deepStrictEqual(
        yield* agent.cancel("user", { keepInbox: true }),
        { discarded: [], kept: [mid("q1"), mid("s1"), mid("q2")] }
      )
      yield* agent.whenIdle
      for (const id of ["q1", "q2"]) assert.strictEqual((yield* agent.receipt(mid(id)))._tag, "ran")
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))
})
