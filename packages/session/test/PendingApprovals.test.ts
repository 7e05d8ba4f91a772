/**
 * The log's pending approvals (R237, ADR 0075): kept as the log records and opens — from the snapshot's head and
 * the records after it — so a resumed log answers them without reading every stored record; a head written before
 * heads listed them reads the store once, and the next snapshot lists them.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Ids, MessageSource, Store } from "@harness/domain"
import { ev, promptTurn, sessionId } from "@harness/testkit/Events"
import { Effect, Option, Ref, Stream } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { accepted } from "./historyResume.js"

const sid = sessionId("approvals-1")

const requested = (callId: string, turn: number): SessionLog.InboxRecordInput => ({
  type: "approval/requested",
  callId: callId as Ids.ToolCallId,
  turn,
  step: 1,
  name: "sh",
  arguments: `{"call":"${callId}"}`
})

const answered = (callId: string): SessionLog.InboxRecordInput => ({
  type: "approval/answered",
  callId: callId as Ids.ToolCallId,
  decision: "allow",
  by: "person"
})

/** The memory store posing as durable and write-behind (so the writer snapshots), with where its loads start. */
const durableStore = Effect.gen(function*() {
  const memory = yield* SessionStore.makeMemory
  const starts = yield* Ref.make<ReadonlyArray<number>>([])
  const store: SessionStore.Service = {
    ...memory,
    volatile: false,
    commitMode: "write-behind",
    load: (id, options) =>
      Stream.unwrap(Effect.as(Ref.update(starts, (s) => [...s, options?.after ?? -1]), memory.load(id, options)))
  }
  return { memory, store, starts: Ref.get(starts) }
})

const openWith = (store: SessionStore.Service, options?: SessionLog.OpenOptions) =>
  SessionLog.open(sid, options).pipe(Effect.provideService(SessionStore.SessionStore, store))

/** The pending approvals by folding every inbox record: what the log must agree with. */
const byFold = (log: SessionLog.Service) =>
  Effect.map(log.inboxRecords, (records) => {
    const open = new Map<string, Store.ApprovalRequested>()
    for (const record of records) Store.foldApprovals(open, record)
    return [...open.values()]
  })

const callIds = (approvals: ReadonlyArray<Store.ApprovalRequested>) => approvals.map((r) => r.callId)

/**
 * Turns 1..4, each asking for approval of one call; the calls of turns 1 and 3 answered. Snapshots every 8 events,
 * so later heads list the approvals pending then.
 */
const session = Effect.gen(function*() {
  const { memory, starts, store } = yield* durableStore
  const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 8 } }).pipe(
    Effect.provideService(SessionStore.SessionStore, store)
  )
  for (let turn = 1; turn <= 4; turn++) {
    yield* log.recordInbox([requested(`c${turn}`, turn)])
    if (turn === 3) yield* log.recordInbox([answered("c1"), answered("c3")])
    yield* log.appendAll(promptTurn(turn, `P${turn}`, `A${turn}`))
    yield* log.flush
  }
  // One more commit orders the writer's last snapshot.
  yield* log.append(ev.user("idle", MessageSource.plugin("p")))
  yield* log.flush
  return { log, memory, starts, store }
})

describe("pending approvals (R237, ADR 0075)", () => {
  it.effect("kept as the log records: asked, answered, in request order; the same as the fold of every record", () =>
    Effect.gen(function*() {
      const { log } = yield* session
      assert.deepStrictEqual(callIds(yield* log.pendingApprovals), ["c2", "c4"])
      assert.deepStrictEqual(yield* log.pendingApprovals, yield* byFold(log))
      // recorded, not yet written: already pending
      yield* log.recordInbox([requested("c5", 4), accepted("held")])
      assert.deepStrictEqual(callIds(yield* log.pendingApprovals), ["c2", "c4", "c5"])
      yield* log.recordInbox([answered("c2")])
      assert.deepStrictEqual(callIds(yield* log.pendingApprovals), ["c4", "c5"])
      assert.deepStrictEqual(yield* log.pendingApprovals, yield* byFold(log))
    }))

  it.effect("opened from a snapshot, the head's approvals and the records after it: no read of the session", () =>
    Effect.gen(function*() {
      const { log, memory, starts, store } = yield* session
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      const head = JSON.parse(saved.head) as { readonly approvals?: ReadonlyArray<{ readonly callId: string }> }
      assert.deepStrictEqual(head.approvals?.map((r) => r.callId), ["c2", "c4"])
      // One asked and one answered after the snapshot: the scan from it folds them in.
      yield* log.recordInbox([requested("c5", 4), answered("c4")])
      yield* log.append(ev.user("after", MessageSource.plugin("p")))
      yield* log.close
      const before = (yield* starts).length
      const reopened = yield* openWith(store)
      assert.deepStrictEqual(callIds(yield* reopened.pendingApprovals), ["c2", "c5"])
      assert.deepStrictEqual((yield* starts).slice(before), [saved.position - 1], "only the records after it")
      assert.deepStrictEqual(yield* reopened.pendingApprovals, yield* byFold(reopened))
      // A full replay agrees.
      const replayed = yield* openWith({ ...store, loadSnapshot: () => Effect.succeed(Option.none()) }, {
        readOnly: true
      })
      assert.deepStrictEqual(yield* replayed.pendingApprovals, yield* reopened.pendingApprovals)
    }))

  it.effect("a head written before heads listed them: the store is read, and the next snapshot lists them", () =>
    Effect.gen(function*() {
      const { log, memory, starts, store } = yield* session
      yield* log.close
      const saved = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      const head = JSON.parse(saved.head) as Record<string, unknown>
      const body = Option.getOrThrow(yield* saved.body)
      yield* Effect.acquireUseRelease(
        memory.lease(sid),
        (lease) =>
          memory.saveSnapshot(sid, { ...saved, head: JSON.stringify({ ...head, approvals: undefined }), body }, {
            lease
          }),
        (lease) => lease.release
      )
      const old = yield* openWith(store, { commit: { snapshotEvery: 8 } })
      const before = (yield* starts).length
      assert.deepStrictEqual(callIds(yield* old.pendingApprovals), ["c2", "c4"])
      assert.include((yield* starts).slice(before), -1, "read back from the start")
      // The next snapshot learns them: its head lists them, and a resume from it reads nothing more.
      yield* old.recordInbox([requested("c5", 5)])
      yield* old.appendAll(promptTurn(5, "P5", "A5"))
      yield* old.flush
      yield* old.append(ev.user("idle again", MessageSource.plugin("p")))
      yield* old.close
      const next = Option.getOrThrow(yield* memory.loadSnapshot(sid))
      assert.isAbove(next.seq, saved.seq)
      const listed = JSON.parse(next.head) as { readonly approvals?: ReadonlyArray<{ readonly callId: string }> }
      assert.deepStrictEqual(listed.approvals?.map((r) => r.callId), ["c2", "c4", "c5"])
      const resumed = yield* openWith(store)
      const from = (yield* starts).length
      assert.deepStrictEqual(callIds(yield* resumed.pendingApprovals), ["c2", "c4", "c5"])
      assert.deepStrictEqual((yield* starts).slice(from), [])
    }))

  it.effect("a new log has none; a crash while a call waits keeps it pending through the repair (R166)", () =>
    Effect.gen(function*() {
      const { store } = yield* durableStore
      const log = yield* SessionLog.make({ id: sid, commit: { snapshotEvery: 4 } }).pipe(
        Effect.provideService(SessionStore.SessionStore, store)
      )
      assert.deepStrictEqual(yield* log.pendingApprovals, [])
      yield* log.appendAll(promptTurn(1, "P1", "A1"))
      yield* log.appendAll([ev.user("Run", MessageSource.user, "p2"), ev.turnStart(2), ev.stepStart(2, 1)])
      yield* log.recordInbox([requested("c2", 2)])
      yield* log.flush
      const reopened = yield* openWith(store)
      assert.deepStrictEqual(callIds(yield* reopened.pendingApprovals), ["c2"])
      assert.deepStrictEqual(yield* reopened.pendingApprovals, yield* byFold(reopened))
    }))
})
