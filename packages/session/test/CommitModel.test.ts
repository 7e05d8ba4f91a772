/**
 * The log's commit model (ADR 0008): write-through over the memory store, write-behind group commit with a writer
 * fiber over durable stores, `appendAll`, `flush` barriers, store faults retried and reported, back-pressure.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Ids, MessageSource, SessionEvent, Store } from "@harness/domain"
import { block, ev, messageId, promptTurn, sessionId, stamp, toolTurn } from "@harness/testkit/Events"
import {
  Chunk,
  Deferred,
  Effect,
  Exit,
  FastCheck,
  Fiber,
  Option,
  Queue,
  Ref,
  Schedule,
  Schema,
  Stream,
  TestClock
} from "effect"
import * as LogCheck from "../src/LogCheck.js"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { assertConsistent } from "./fixtures.js"

const sid = sessionId("commit-1")
const decodeRow = Schema.decodeSync(Schema.parseJson(SessionEvent.SessionEvent))
const decodeRecord = Schema.decodeSync(Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord)))

interface Recorded {
  readonly events: number
  readonly sync: boolean
}

/**
 * A memory store with a fault injector that records every append that reached the store (events, sync) and can
 * hold appends at a gate until the test opens it.
 */
const instrumented = Effect.gen(function*() {
  const [faulty, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
  const commits = yield* Ref.make(Chunk.empty<Recorded>())
  const gate = yield* Ref.make<Deferred.Deferred<void> | undefined>(undefined)
  const store: SessionStore.Service = {
    ...faulty,
    append: (id, commit, options) =>
      Effect.gen(function*() {
        const held = yield* Ref.get(gate)
        if (held !== undefined) yield* Deferred.await(held)
        yield* faulty.append(id, commit, options)
        yield* Ref.update(commits, Chunk.append({ events: commit.events.length, sync: options?.sync === true }))
      })
  }
  return {
    store,
    faults,
    commits: Effect.map(Ref.get(commits), Chunk.toReadonlyArray),
    /** Holds every store append until the returned effect is run. */
    hold: Effect.gen(function*() {
      const d = yield* Deferred.make<void>()
      yield* Ref.set(gate, d)
      return Effect.zipRight(Ref.set(gate, undefined), Deferred.succeed(d, undefined))
    })
  }
})

const stored = (store: SessionStore.Service, id: Ids.SessionId) =>
  Effect.map(
    Stream.runCollect(store.load(id)),
    (records) => Chunk.toReadonlyArray(records).map((r) => decodeRow(r.text))
  )

/** The store's records, decoded: its events, and its inbox records with the number of events stored before each. */
const storedRecords = (store: SessionStore.Service, id: Ids.SessionId) =>
  Effect.map(Stream.runCollect(store.load(id)), (records) => {
    const events: Array<SessionEvent.SessionEvent> = []
    const inbox: Array<{ readonly record: Store.InboxRecord; readonly eventsBefore: number }> = []
    for (const r of Chunk.toReadonlyArray(records)) {
      const record = decodeRecord(r.text)
      if (Store.isInboxRecord(record)) inbox.push({ record, eventsBefore: events.length })
      else events.push(record)
    }
    return { events, inbox }
  })

const writeBehind = (store: SessionStore.Service, commit: SessionLog.CommitOptions = {}) =>
  SessionLog.make({ id: sid, commit: { mode: "write-behind", ...commit } }).pipe(
    Effect.provideService(SessionStore.SessionStore, store)
  )

/** Lets forked fibers (the writer) run to their next suspension. */
const settle = TestClock.adjust(0)

describe("SessionLog commit model: write-through (memory store)", () => {
  it.effect("the memory store is write-through: appended is durable at once, flush has nothing to wait for", () =>
    Effect.gen(function*() {
      const log = yield* SessionLog.memory({ id: sid })
      assert.strictEqual(log.commitMode, "write-through")
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      assert.deepStrictEqual(yield* log.cursors, { appended: 8, durable: 8 })
      yield* log.flush
    }))

  it.effect("appendAll is one store commit and one publication, all or nothing", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* instrumented
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      const queue = yield* log.subscribe
      const events = yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      assert.deepStrictEqual(events.map((e) => e.seq), [0, 1, 2, 3, 4, 5, 6, 7])
      assert.deepStrictEqual(yield* commits, [{ events: 8, sync: false }])
      assert.strictEqual((yield* Queue.takeAll(queue)).length, 8)
      // the third event breaks a rule: nothing of the batch is appended, the error names its seq
      const error = yield* Effect.flip(log.appendAll([ev.turnStart(2), ev.stepStart(2, 1), ev.stepStart(2, 2)]))
      assert.strictEqual(error.reason, "nested-step")
      assert.strictEqual(error.seq, 10)
      assert.strictEqual((yield* log.events).length, 8)
      assert.strictEqual((yield* log.state).nextSeq, 8)
      assert.strictEqual((yield* commits).length, 1)
      assert.deepStrictEqual(yield* stored(store, sid), yield* log.events)
      // the refused batch's first events were folded before the refusal: the next batch takes their seqs, and
      // neither the log nor an earlier read of it ever shows them
      const before = yield* log.events
      const refused = yield* Effect.flip(log.appendAll([ev.user("refused", undefined, "refused"), ev.turnEnd(9)]))
      assert.strictEqual(refused.seq, 9)
      yield* log.appendAll(promptTurn(2, "Again", "Sure"))
      const after = yield* log.events
      assert.strictEqual(before.length, 8)
      assert.deepStrictEqual(after.map((e) => e.seq), Array.from({ length: 16 }, (_, i) => i))
      assert.isFalse(after.some((e) => JSON.stringify(e).includes("refused")))
      assert.deepStrictEqual(yield* stored(store, sid), after)
      yield* assertConsistent(log)
    }).pipe(Effect.scoped))
})

describe("SessionLog commit model: write-behind", () => {
  it.effect("durable stores default to write-behind", () =>
    Effect.gen(function*() {
      const store = { ...(yield* SessionStore.makeMemory), commitMode: "write-behind" as const }
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      assert.strictEqual(log.commitMode, "write-behind")
    }))

  it.scoped("append publishes at once; the writer group-commits what accumulated while it wrote; flush is the barrier", () =>
    Effect.gen(function*() {
      const { commits, hold, store } = yield* instrumented
      const log = yield* writeBehind(store)
      const queue = yield* log.subscribe
      const release = yield* hold
      yield* log.append(ev.user("first"))
      yield* settle // the writer takes the first event and waits at the gate
      const turns = [...promptTurn(1, "Hi", "Hello"), ...promptTurn(2, "Again", "Sure")]
      for (const input of turns) yield* log.append(input)
      // appended and published, not durable yet
      assert.strictEqual((yield* Queue.takeAll(queue)).length, 1 + turns.length)
      assert.deepStrictEqual(yield* log.cursors, { appended: 17, durable: 0 })
      assert.deepStrictEqual(yield* stored(store, sid), [])
      const flushed = yield* Effect.fork(log.flush)
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(flushed)))
      yield* release
      yield* Fiber.join(flushed)
      // one commit for the first event, one for the sixteen that came while it was written (synced: a flush waited)
      assert.deepStrictEqual(yield* commits, [{ events: 1, sync: false }, { events: 16, sync: true }])
      assert.deepStrictEqual(yield* log.cursors, { appended: 17, durable: 17 })
      assert.deepStrictEqual(yield* stored(store, sid), yield* log.events)
      yield* assertConsistent(log)
    }))

  it.effect("maxBatch bounds a commit", () =>
    Effect.gen(function*() {
      const { commits, hold, store } = yield* instrumented
      const log = yield* writeBehind(store, { maxBatch: 5 })
      const release = yield* hold
      yield* log.appendAll([...promptTurn(1, "Hi", "Hello"), ...promptTurn(2, "Again", "Sure")])
      yield* release
      yield* log.flush
      assert.deepStrictEqual((yield* commits).map((c) => c.events), [5, 5, 5, 1])
      assert.deepStrictEqual(yield* stored(store, sid), yield* log.events)
    }))

  it.effect("a flush after everything was written unsynced asks the store for a sync (an empty synced commit)", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* instrumented
      const log = yield* writeBehind(store)
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      yield* settle
      assert.deepStrictEqual(yield* commits, [{ events: 8, sync: false }])
      yield* log.flush
      assert.deepStrictEqual(yield* commits, [{ events: 8, sync: false }, { events: 0, sync: true }])
      yield* log.flush // nothing new: no store call
      assert.strictEqual((yield* commits).length, 2)
    }))

  it.scoped("store faults are retried on the schedule and reported on faults, nothing reordered or dropped", () =>
    Effect.gen(function*() {
      const { faults, store } = yield* instrumented
      const log = yield* writeBehind(store, { retry: Schedule.spaced("1 second") })
      const reported = yield* Queue.unbounded<SessionStore.SessionStoreError>()
      yield* log.faults.pipe(Stream.runForEach((e) => Queue.offer(reported, e)), Effect.forkScoped)
      yield* settle
      yield* faults.failNext(3)
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      const flushed = yield* Effect.fork(log.flush)
      yield* settle
      assert.strictEqual((yield* Queue.takeAll(reported)).pipe(Chunk.size), 1)
      // appends go on while the store is down
      yield* log.append(ev.user("while down"))
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      assert.isTrue(Option.isNone(yield* Fiber.poll(flushed)))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(flushed)
      const errors = Chunk.toReadonlyArray(yield* Queue.takeAll(reported))
      assert.strictEqual(errors.length, 2)
      assert.isTrue(errors.every((e) => e.reason === "Injected"))
      yield* log.flush
      assert.deepStrictEqual(yield* stored(store, sid), yield* log.events)
      assert.strictEqual((yield* log.events).length, 9)
    }))

  it.effect("a failure retrying cannot cure (Conflict) stops the writer: flush and append fail with store", () =>
    Effect.gen(function*() {
      const { store } = yield* instrumented
      // The log's own lease, kept by the test: a write under it passes the fence (ADR 0044).
      const leases: Array<SessionStore.Lease> = []
      const log = yield* writeBehind({
        ...store,
        lease: (id) => Effect.tap(store.lease(id), (lease) => Effect.sync(() => leases.push(lease)))
      })
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      yield* log.flush
      // an event sneaks in behind the log's back, under its own lease
      const intruder = stamp([ev.user("intruder")], { start: 8 })
      yield* store.append(sid, { events: intruder, inbox: [] }, { lease: leases[0]! })
      yield* log.append(ev.user("mine"))
      const error = yield* Effect.flip(log.flush)
      assert.strictEqual(error.reason, "store")
      assert.include(error.message, "Conflict")
      assert.strictEqual((yield* Effect.flip(log.append(ev.user("more")))).reason, "store")
    }))

  it.effect("a second writer fences the first (ADR 0044): its writes fail with busy and store nothing", () =>
    Effect.gen(function*() {
      const { store } = yield* instrumented
      const log = yield* writeBehind(store)
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      yield* log.flush
      // an unleased write is refused while the log holds the session
      const refused = yield* Effect.flip(store.append(sid, { events: stamp([ev.user("x")], { start: 8 }), inbox: [] }))
      assert.strictEqual(refused.reason, "Busy")
      // a later log of this process takes the session over
      const second = yield* SessionLog.open(sid).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* log.append(ev.user("stale"))
      const error = yield* Effect.flip(log.flush)
      assert.strictEqual(error.reason, "busy")
      assert.strictEqual(error.session, sid)
      yield* second.append(ev.user("fresh"))
      yield* second.flush
      const stored = yield* SessionLog.open(sid, { readOnly: true }).pipe(
        Effect.provideService(SessionStore.SessionStore, store),
        Effect.flatMap((reader) => reader.events)
      )
      const after = stored.slice(8).map((e) => JSON.stringify(e))
      assert.strictEqual(after.length, 1, "the stale writer stored nothing")
      assert.include(after[0], "fresh")
    }))

  it.scoped("bounded buffer: append waits (back-pressure) while capacity events are not durable", () =>
    Effect.gen(function*() {
      const { hold, store } = yield* instrumented
      const log = yield* writeBehind(store, { capacity: 3 })
      const release = yield* hold
      yield* log.append(ev.user("1"))
      yield* log.append(ev.user("2"))
      yield* log.append(ev.user("3"))
      const fourth = yield* Effect.fork(log.append(ev.user("4")))
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fourth)))
      assert.strictEqual((yield* log.cursors).appended, 3)
      // the wait is interruptible: a cancelled appender leaves nothing behind
      const fifth = yield* Effect.fork(log.append(ev.user("5")))
      yield* settle
      yield* Fiber.interrupt(fifth)
      yield* release
      const appended = yield* Fiber.join(fourth)
      assert.strictEqual(appended.seq, 3)
      yield* log.flush
      assert.deepStrictEqual((yield* stored(store, sid)).map((e) => e.seq), [0, 1, 2, 3])
    }))

  // Random appends, inbox records, faults switched on and off, clock advances and barriers: every event reported
  // durable is in the store, in order; the store never holds anything the log did not append; the inbox records it
  // holds are a prefix of those recorded, in order, each before every event appended after it was recorded (a
  // record rides with the next commit, before its events, and a failed commit's records are retried, never
  // dropped); at the end, with the store back, one flush makes the store equal the log, every inbox record stored
  // once, and checkLog is clean.
  type Op =
    | { readonly _tag: "append"; readonly count: number; readonly batch: boolean }
    | { readonly _tag: "inbox"; readonly count: number }
    | { readonly _tag: "faults"; readonly on: boolean }
    | { readonly _tag: "tick"; readonly ms: number }
    | { readonly _tag: "flush" }
  const op: FastCheck.Arbitrary<Op> = FastCheck.oneof(
    FastCheck.record({
      _tag: FastCheck.constant("append" as const),
      count: FastCheck.integer({ min: 1, max: 12 }),
      batch: FastCheck.boolean()
    }),
    FastCheck.record({ _tag: FastCheck.constant("inbox" as const), count: FastCheck.integer({ min: 1, max: 3 }) }),
    FastCheck.record({ _tag: FastCheck.constant("faults" as const), on: FastCheck.boolean() }),
    FastCheck.record({ _tag: FastCheck.constant("tick" as const), ms: FastCheck.integer({ min: 0, max: 3000 }) }),
    FastCheck.record({ _tag: FastCheck.constant("flush" as const) })
  )
  const script = Array.from({ length: 40 }, (_, i) =>
    i % 2 === 0
      ? promptTurn(i + 1, `prompt ${i}`, `answer ${i}`)
      : toolTurn(i + 1, `tools ${i}`, [{ id: `c${i}`, name: "t", args: "{}", result: "ok" }], "done")).flat()

  /** Requires the forked flush to have succeeded by now (a flush that never ends fails the run, never hangs it). */
  const flushedBy = (flushed: Fiber.RuntimeFiber<void, unknown>) =>
    Effect.gen(function*() {
      yield* settle
      const exit = yield* Fiber.poll(flushed)
      assert.isTrue(Option.isSome(exit), "the flush ended once the store was back")
      assert.isTrue(Exit.isSuccess(Option.getOrThrow(exit)), "the flush succeeded")
    })
  it.effect.prop(
    "store-fault property: durable ⊆ store = prefix of the log, in order; nothing dropped once the store is back",
    [FastCheck.array(op, { maxLength: 30 }), FastCheck.integer({ min: 1, max: 8 })],
    ([ops, maxBatch]) =>
      Effect.gen(function*() {
        const { faults, store } = yield* instrumented
        const log = yield* writeBehind(store, { maxBatch, retry: Schedule.spaced("500 millis") })
        let next = 0
        /** The inbox records recorded, each with the number of events appended when it was. */
        const recorded: Array<{ readonly record: SessionLog.InboxRecordInput; readonly appendedBefore: number }> = []
        const inboxChecks = (
          inStore: ReadonlyArray<{ readonly record: Store.InboxRecord; readonly eventsBefore: number }>
        ) => {
          assert.isAtMost(inStore.length, recorded.length)
          for (const [i, { eventsBefore, record }] of inStore.entries()) {
            const { time: _, ...input } = record
            assert.deepStrictEqual(input, recorded[i]!.record, `inbox record ${i} in order`)
            assert.isAtMost(eventsBefore, recorded[i]!.appendedBefore, `inbox record ${i} before later events`)
          }
        }
        for (const o of ops) {
          switch (o._tag) {
            case "inbox": {
              const appendedBefore = (yield* log.cursors).appended
              const records = Array.from({ length: o.count }, (_, i): SessionLog.InboxRecordInput => {
                const id = messageId(`inbox-${recorded.length + i}`)
                return (recorded.length + i) % 3 === 2
                  ? { type: "inbox/settled", id: messageId(`inbox-${recorded.length + i - 1}`), fate: "discarded" }
                  : {
                    type: "inbox/accepted",
                    message: { id, content: [block.text(`queued ${id}`)], source: MessageSource.user },
                    placement: "queued",
                    wakeup: true
                  }
              })
              yield* log.recordInbox(records)
              recorded.push(...records.map((record) => ({ record, appendedBefore })))
              break
            }
            case "append": {
              const inputs = script.slice(next, next + o.count)
              next += inputs.length
              if (o.batch) yield* log.appendAll(inputs)
              else for (const input of inputs) yield* log.append(input)
              break
            }
            case "faults":
              yield* (o.on ? faults.failWhen(() => true) : faults.clear)
              break
            case "tick":
              yield* TestClock.adjust(o.ms)
              break
            case "flush": {
              yield* faults.clear
              const flushed = yield* Effect.fork(log.flush)
              // at most one retry interval before the writer tries again
              yield* TestClock.adjust("1 second")
              yield* flushedBy(flushed)
              const { appended, durable } = yield* log.cursors
              assert.strictEqual(durable, appended)
              break
            }
          }
          yield* settle
          const inStore = yield* storedRecords(store, sid)
          const events = yield* log.events
          const { durable } = yield* log.cursors
          // what the store holds is exactly the log's first `durable` events
          assert.deepStrictEqual(inStore.events, events.slice(0, durable))
          assert.isAtMost(durable, events.length)
          inboxChecks(inStore.inbox)
        }
        yield* faults.clear
        const flushed = yield* Effect.fork(log.flush)
        yield* TestClock.adjust("1 second")
        yield* flushedBy(flushed)
        const events = yield* log.events
        assert.deepStrictEqual(events.map((e) => e.seq), script.slice(0, next).map((_, i) => i))
        const inStore = yield* storedRecords(store, sid)
        assert.deepStrictEqual(inStore.events, events)
        // every inbox record recorded is stored, once (a flush makes them durable)
        assert.strictEqual(inStore.inbox.length, recorded.length)
        inboxChecks(inStore.inbox)
        assert.deepStrictEqual(LogCheck.checkLog(events).filter((v) => v.rule !== "unclosed-turn"), [])
        yield* assertConsistent(log)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 30 } }
  )
})
