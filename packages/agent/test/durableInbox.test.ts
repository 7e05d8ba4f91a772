/**
 * The durable inbox (ADR 0017): accepted queued, parked, steering and staged-context items are recorded
 * (`inbox/accepted`) before `send` returns on a durable log; discards, withdrawals and admissions that open no turn
 * are recorded (`inbox/settled`); a claim is settled by the turn's own `user/message`. A resumed agent restores
 * exactly the pending items, in order; resends after a restart return the original id and deliver nothing twice;
 * the agent's accepted-id memory is bounded, older ids are answered by the store's index. Time is the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids, type SessionEvent, Store } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Schedule, Schema, Stream, TestClock } from "effect"
import * as Inbox from "../src/internal/inbox.js"
import {
  agentOn,
  assertWellFormed,
  context,
  durableStore,
  isDurable,
  live,
  logTrace,
  noop,
  prompt,
  storedInbox,
  withDurableStore
} from "./fixtures.js"

const sid = Ids.SessionId.make("durable-inbox")
const mid = Ids.AgentMessageId.make
const decodeRecord = Schema.decodeSync(
  Schema.parseJson(Schema.Union(Store.InboxRecord, Schema.Struct({ type: Schema.String })))
)

const prompts = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  logTrace(log).filter((t) => t.startsWith("user/message:") || t.startsWith("turn/start"))

/**
 * A process that ends mid-turn: an agent over a new log of this session starts turn 1 on "p" (its model never
 * answers), `sends` accepts more, then the scope closes and disposes the agent — disposal settles nothing.
 */
const endsMidTurn = <E>(sends: (agent: Agent.Service) => Effect.Effect<unknown, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* SessionLog.make({ id: sid })
    const { agent } = yield* agentOn(log, [S.hanging(S.text("…"))])
    const rec = yield* EventRecorder.make(agent)
    yield* agent.followup(prompt("p"), { id: mid("p") })
    yield* rec.waitFor(isDurable("step/start"))
    yield* sends(agent)
  }))

describe("the durable inbox", () => {
  it.effect("acceptance is recorded before send returns; discards, withdrawals and blocked admissions are settled; claims are settled by their turn", () =>
    withDurableStore((store) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const { agent } = yield* agentOn(log, [S.delayed(1000, S.textResponse("one")), S.textResponse("two")], {
            hooks: {
              promptSubmit: ({ message }, next) =>
                message.id === "blocked" ? Effect.succeed({ kind: "block", reason: "no" } as const) : next
            }
          })
          const rec = yield* EventRecorder.make(agent)
          yield* agent.followup(prompt("p"), { id: mid("p") })
          yield* rec.waitFor(isDurable("step/start"))
          // Each acceptance is in the store when its send returns (the acceptance barrier).
          for (
            const [send, id] of [
              [agent.followup(prompt("q"), { id: mid("q") }), "q"],
              [agent.send(prompt("r"), { target: "next-turn", wakeup: false, id: mid("r") }), "r"],
              [agent.steer(prompt("s"), { id: mid("s") }), "s"],
              [agent.inject(context("c"), { id: mid("c") }), "c"]
            ] as const
          ) {
            assert.strictEqual<string>(yield* send, id)
            assert.isTrue(yield* store.hasMessage(sid, mid(id)), id)
          }
          yield* agent.withdraw(mid("r"))
          yield* agent.cancel("user")
          yield* agent.whenIdle
          // A blocked admission opens no turn: its claim is settled explicitly.
          yield* agent.followup(prompt("blocked"), { id: mid("blocked") })
          yield* agent.whenIdle
          yield* agent.followup(prompt("t"), { id: mid("t") })
          yield* agent.whenIdle
          assert.deepStrictEqual(yield* storedInbox(store, sid), [
            "accepted:queued:p",
            "accepted:queued:q",
            "accepted:queued/parked:r",
            "accepted:steering:s",
            "accepted:context:c",
            "settled:withdrawn:r",
            "settled:discarded:q",
            "settled:discarded:s",
            "accepted:queued:blocked",
            "settled:claimed:blocked",
            "accepted:queued:t"
          ])
          assertWellFormed(yield* agent.log)
        }))
        // p and t were claimed by turns, c was logged, the rest settled: nothing is pending.
        const reopened = yield* SessionLog.open(sid)
        assert.deepStrictEqual(reopened.pendingInbox, [])
      })
    ).pipe(Effect.orDie))

  it.effect("a resumed agent restores exactly the pending items in order: queued, parked stays parked (and runs ahead of a waking item behind it, R31), steering becomes a queued turn", () =>
    withDurableStore((store) =>
      Effect.gen(function*() {
        yield* endsMidTurn((agent) =>
          Effect.all([
            agent.followup(prompt("q"), { id: mid("q") }),
            agent.send(prompt("r"), { target: "next-turn", wakeup: false, id: mid("r") }),
            agent.steer(prompt("s"), { id: mid("s") }),
            agent.followup(prompt("u"), { id: mid("u") })
          ])
        )
        assert.deepStrictEqual((yield* storedInbox(store, sid)).filter((r) => r.startsWith("settled")), [])
        const log = yield* SessionLog.open(sid)
        assert.deepStrictEqual(log.pendingInbox.map((r) => r.message.id), ["q", "r", "s", "u"])
        const { agent, model } = yield* agentOn(log, [
          S.textResponse("q done"),
          S.textResponse("r done"),
          S.textResponse("s done"),
          S.textResponse("u done")
        ])
        // Restored: the waking items start at once, in acceptance order; the parked one keeps its FIFO place.
        assert.deepStrictEqual((yield* agent.inbox).map((i) => [i.id, i.placement, i.waking]), [
          ["q", "queued", true],
          ["r", "queued", false],
          ["s", "queued", true],
          ["u", "queued", true]
        ])
        yield* agent.whenIdle
        const events = yield* agent.log
        assert.deepStrictEqual(prompts(events), [
          "turn/start",
          "user/message:p",
          "turn/start",
          "user/message:q",
          "turn/start",
          "user/message:r",
          "turn/start",
          "user/message:s",
          "turn/start",
          "user/message:u"
        ])
        assert.deepStrictEqual(events.flatMap((e) => e.type === "turn/start" ? [e.data.turn] : []), [1, 2, 3, 4, 5])
        assert.deepStrictEqual(events.flatMap((e) => e.type === "request/header" ? [e.data.reason] : []), [
          "initial",
          "resume"
        ])
        assert.strictEqual((yield* model.requests).length, 4)
        assert.deepStrictEqual(yield* agent.inbox, [])
        assertWellFormed(events)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("restoredInbox: park holds the restored items until a waking send, which runs after them, in order (R31)", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        yield* endsMidTurn((agent) =>
          Effect.all([agent.followup(prompt("q"), { id: mid("q") }), agent.steer(prompt("s"), { id: mid("s") })])
        )
        const log = yield* SessionLog.open(sid)
        const { agent, model } = yield* agentOn(
          log,
          [S.textResponse("q done"), S.textResponse("s done"), S.textResponse("w done")],
          { restoredInbox: "park" }
        )
        yield* TestClock.adjust(10_000)
        assert.strictEqual(yield* agent.status, "idle")
        assert.strictEqual((yield* model.requests).length, 0)
        assert.deepStrictEqual((yield* agent.inbox).map((i) => [i.id, i.waking]), [["q", false], ["s", false]])
        yield* agent.followup(prompt("w"), { id: mid("w") })
        yield* agent.whenIdle
        assert.deepStrictEqual(prompts(yield* agent.log).filter((t) => t.startsWith("user")), [
          "user/message:p",
          "user/message:q",
          "user/message:s",
          "user/message:w"
        ])
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("a resend after a restart returns the original id and delivers nothing twice (pending, logged or settled)", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const { agent } = yield* agentOn(log, [S.textResponse("one")])
          yield* agent.followup(prompt("done"), { id: mid("done") })
          yield* agent.whenIdle
          yield* agent.send(prompt("parked"), { target: "next-turn", wakeup: false, id: mid("parked") })
          yield* agent.send(prompt("dropped"), { target: "next-turn", wakeup: false, id: mid("dropped") })
          yield* agent.withdraw(mid("dropped"))
        }))
        const log = yield* SessionLog.open(sid)
        const { agent } = yield* agentOn(log, [S.textResponse("two")], { restoredInbox: "park" })
        const rec = yield* EventRecorder.make(agent)
        const before = (yield* agent.log).length
        for (const id of ["done", "parked", "dropped"]) {
          assert.strictEqual(yield* agent.followup(prompt(`again ${id}`), { id: mid(id) }), id)
          assert.strictEqual(yield* agent.steer(prompt(`again ${id}`), { id: mid(id) }), id)
        }
        assert.strictEqual((yield* agent.log).length, before)
        assert.deepStrictEqual(live(yield* rec.events, "agent/inbox/enqueue"), [])
        assert.strictEqual(yield* agent.status, "idle")
        assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["parked"])
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))
})

describe("the accepted-id memory", () => {
  it("is bounded: at most two generations of ids, the oldest forgotten first", () => {
    let snapshot = Inbox.empty
    const total = Inbox.GENERATION * 5 + 3
    for (let i = 0; i < total; i++) snapshot = Inbox.remember(snapshot, `id-${i}`)
    assert.isAtMost(
      Chunk.size(Chunk.fromIterable(snapshot.recent.current)) +
        Chunk.size(Chunk.fromIterable(snapshot.recent.previous)),
      2 * Inbox.GENERATION
    )
    assert.isTrue(Inbox.isRecent(snapshot, `id-${total - 1}`))
    assert.isFalse(Inbox.isRecent(snapshot, "id-0"))
  })

  it.scoped("an id older than the memory is answered by the store's index: the resend returns it and logs nothing", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const count = 2 * Inbox.GENERATION + 5
      for (let i = 0; i < count; i++) yield* agent.inject(context(`ctx ${i}`), { id: mid(`ctx-${i}`) })
      const before = (yield* agent.log).length
      assert.strictEqual(before, count)
      assert.strictEqual(yield* agent.inject(context("again"), { id: mid("ctx-0") }), "ctx-0")
      assert.strictEqual(yield* agent.followup(prompt("again"), { id: mid("ctx-1") }), "ctx-1")
      assert.strictEqual((yield* agent.log).length, before)
      assert.strictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))
})

describe("the agent on a durable log's commit model (ADR 0008)", () => {
  it.effect("store faults the writer retries are reported as agent/error (SESSION_STORE); the turn completes, nothing is reordered or dropped, and it settles once durable", () =>
    Effect.gen(function*() {
      const [faulty, faults] = yield* SessionStore.withFaults(yield* durableStore)
      const log = yield* SessionLog.make({ id: sid, commit: { retry: Schedule.forever } }).pipe(
        Effect.provideService(SessionStore.SessionStore, faulty)
      )
      const { agent } = yield* agentOn(log, [S.toolCallResponse(S.toolCall("noop")), S.textResponse("done")], {
        tools: [noop]
      })
      const rec = yield* EventRecorder.make(agent)
      yield* faults.failNext(3)
      yield* agent.followup(prompt("go"), { id: mid("go") })
      yield* agent.whenIdle
      const events = yield* rec.events
      const errors = live(events, "agent/error")
      assert.strictEqual(errors.length, 3)
      for (const error of errors) assert.strictEqual(error.error.code, "SESSION_STORE")
      const settled = live(events, "agent/settled")
      assert.deepStrictEqual(settled.map((s) => s.reason), [{ kind: "completed" }])
      // Everything the log holds is in the store, in order, once the turn settled (the turn/end barrier).
      const cursors = yield* log.cursors
      assert.strictEqual(cursors.durable, cursors.appended)
      const stored = yield* faulty.load(sid).pipe(
        Stream.map((r) => decodeRecord(r.text).type),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      assert.deepStrictEqual(
        stored.filter((t) => !t.startsWith("inbox/")),
        (yield* agent.log).map((e) => e.type)
      )
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.scoped, Effect.orDie))
})
