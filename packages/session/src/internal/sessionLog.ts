/**
 * The session log's implementation: validation at the boundary, the serialised append path with its two commit
 * models (write-through for the memory store, write-behind group commit with a writer fiber for durable stores),
 * durability barriers, seeding, and opening a stored session with crash repair (R106). Everything the append path
 * touches is persistent (`Chunk`, small immutable state objects), so its cost does not grow with the log.
 */
import { Ids, SessionEvent, Store as StoreRecords } from "@harness/domain"
import {
  Chunk,
  Clock,
  Deferred,
  Effect,
  Either,
  ParseResult,
  PubSub,
  Random,
  Ref,
  Schedule,
  Schema,
  Stream
} from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import type {
  CommitMode,
  CommitOptions,
  Cursors,
  InboxRecordInput,
  MakeOptions,
  OpenOptions,
  Service
} from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import { type Service as Store, SessionStore, type SessionStoreError, type StoredRecord } from "../SessionStore.js"
import * as closers from "./closers.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"

// Compiled once. `validate` checks an event and copies it (excess keys refused); a stored record is decoded from its
// JSON text by `decodeJson`. The encoded form of `SessionEvent` is its type form (the schema has no
// transformations: a test walks its AST to keep it so), so the store JSON-encodes the validated copy directly.
const validate = Schema.validateEither(SessionEvent.SessionEvent, { onExcessProperty: "error" })
const validateInbox = Schema.validateEither(StoreRecords.InboxRecord, { onExcessProperty: "error" })
// An inbox record is checked with `is` first (no allocation; the agent hands over messages it already decoded and
// froze), and validated in full only to name what is wrong.
const isInboxRecord = Schema.is(StoreRecords.InboxRecord, { onExcessProperty: "error" })
const StoredRecordSchema = Schema.Union(SessionEvent.SessionEvent, StoreRecords.InboxRecord)
const decodeJson = Schema.decodeEither(Schema.parseJson(StoredRecordSchema))
// The fast path of a load: `JSON.parse` and an exact type check (no excess keys), which allocates nothing but the
// parsed value; only a record that fails it is decoded in full (stripping excess keys, or naming what is wrong).
const isExactRecord = Schema.is(StoredRecordSchema, { onExcessProperty: "error" })

/** Decodes one stored record's text; the problem as a sentence when it is not a record. */
const decodeRecord = (text: string): Either.Either<SessionEvent.SessionEvent | StoreRecords.InboxRecord, string> => {
  try {
    const parsed: unknown = JSON.parse(text)
    if (isExactRecord(parsed)) return Either.right(parsed)
  } catch {
    // Not JSON: the full decode below names the problem.
  }
  return Either.mapLeft(decodeJson(text), formatIssue)
}

const formatIssue = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)

/**
 * Checks an event at the boundary: a copy that shares nothing with the caller's value. Returns the problem as a
 * sentence when the event does not match its schema or is not JSON-lossless.
 */
const encode = (candidate: unknown): Either.Either<SessionEvent.SessionEvent, string> =>
  Either.mapLeft(validate(candidate), formatIssue)

const storeError = (what: string) => (error: SessionStoreError) =>
  new SessionLogError({ reason: "store", message: `${what}: ${error.message} (${error.reason})` })

const invalidSeed = (message: string, seq?: number) =>
  new SessionLogError(
    seq === undefined ? { reason: "invalid-seed", message } : { reason: "invalid-seed", message, seq }
  )

/** What a log holds after its last event. */
interface LogData {
  readonly events: Chunk.Chunk<SessionEvent.SessionEvent>
  readonly state: LogState
  readonly history: History
}

const emptyData: LogData = { events: Chunk.empty(), state: logCheck.initial, history: history.empty }

/** Folds one event that passed `LogCheck.step` into the log's data. */
const advance = (data: LogData, event: SessionEvent.SessionEvent, state: LogState): LogData => ({
  events: Chunk.append(data.events, event),
  state,
  history: history.fold(data.history, event)
})

const describeViolations = (violations: ReadonlyArray<{ seq: number; rule: string; message: string }>) => {
  const shown = violations.slice(0, 5).map((v) => `seq ${v.seq}: ${v.rule}: ${v.message}`).join("; ")
  const more = violations.length > 5 ? ` (and ${violations.length - 5} more)` : ""
  return `${violations.length} rule(s): ${shown}${more}`
}

/**
 * Checks a whole log that is to be continued (a seed): gap-free from 0, no violation, no open turn. Returns what
 * the log holds after it.
 */
const checkContinuable = (
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<LogData, SessionLogError> => {
  const violations = logCheck.checkLog(events)
  if (violations.length > 0) {
    return Effect.fail(
      invalidSeed(`the log cannot be continued, it breaks ${describeViolations(violations)}`, violations[0]!.seq)
    )
  }
  let data = emptyData
  for (const event of events) {
    const checked = logCheck.step(data.state, event)
    // checkLog found nothing, so every step succeeds; the guard keeps the types honest.
    if ("violation" in checked) return Effect.fail(invalidSeed(checked.violation.message, event.seq))
    data = advance(data, event, checked.state)
  }
  return Effect.succeed(data)
}

const hex = (byte: number) => byte.toString(16).padStart(2, "0")

/** A random (version 4) UUID from the `Random` service, so seeded tests get stable ids. */
export const randomSessionId: Effect.Effect<Ids.SessionId> = Effect.map(
  Effect.all(Array.from({ length: 16 }, () => Random.nextIntBetween(0, 256))),
  (bytes) => {
    bytes[6] = (bytes[6]! & 0x0f) | 0x40
    bytes[8] = (bytes[8]! & 0x3f) | 0x80
    const h = bytes.map(hex).join("")
    return Ids.SessionId.make(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`)
  }
)

// ---------------------------------------------------------------------------------------------------------------
// The commit model
// ---------------------------------------------------------------------------------------------------------------

/** Store failures a retry can cure; the others mean the store and the log disagree, and retrying cannot help. */
const isTransient = (error: SessionStoreError): boolean => error.reason === "Io" || error.reason === "Injected"

/** The default retry schedule of the writer: exponential from 10 ms, capped at 2 s between tries, forever. */
export const defaultRetry: Schedule.Schedule<unknown, SessionStoreError> = Schedule.exponential("10 millis").pipe(
  Schedule.union(Schedule.spaced("2 seconds"))
)

/**
 * The writer's bookkeeping. Events `[0, durable)` are written, `[0, synced)` synced. Inbox records are counted
 * apart (`inboxWritten`, `inboxSynced`, `inboxSyncTo` over the records recorded since the log was made); `inbox`
 * holds the recorded ones not yet written, in order.
 */
interface Writer {
  readonly durable: number
  readonly synced: number
  /** A barrier waits for `[0, syncTo)` to be synced. */
  readonly syncTo: number
  readonly inbox: Chunk.Chunk<StoreRecords.InboxRecord>
  readonly inboxWritten: number
  readonly inboxSynced: number
  readonly inboxSyncTo: number
  readonly running: boolean
  /** A store failure retrying cannot cure; the log refuses everything afterwards. */
  readonly broken: SessionStoreError | undefined
  /** Completed (and replaced) whenever the writer makes progress or breaks. */
  readonly progress: Deferred.Deferred<void>
}

interface Shared {
  readonly data: LogData
  readonly writer: Writer
}

interface Settings {
  readonly mode: CommitMode
  readonly maxBatch: number
  readonly capacity: number
  readonly retry: Schedule.Schedule<unknown, SessionStoreError>
}

const settingsOf = (store: Store, options: CommitOptions | undefined): Settings => ({
  mode: options?.mode ?? store.commitMode ?? "write-through",
  maxBatch: Math.max(1, options?.maxBatch ?? 1024),
  capacity: Math.max(1, options?.capacity ?? 16_384),
  retry: options?.retry ?? defaultRetry
})

const brokenError = (id: Ids.SessionId, error: SessionStoreError) =>
  new SessionLogError({
    reason: "store",
    message: `session ${
      JSON.stringify(id)
    } stopped writing: the store refused a commit and retrying cannot help: ${error.message} (${error.reason})`
  })

const makeService = (
  id: Ids.SessionId,
  store: Store,
  initial: LogData,
  settings: Settings,
  pendingInbox: ReadonlyArray<StoreRecords.InboxAccepted> = []
): Effect.Effect<Service> =>
  Effect.gen(function*() {
    const writeBehind = settings.mode === "write-behind"
    const stored = initial.state.nextSeq
    const shared = yield* Ref.make<Shared>({
      data: initial,
      writer: {
        durable: stored,
        synced: stored,
        syncTo: stored,
        inbox: Chunk.empty(),
        inboxWritten: 0,
        inboxSynced: 0,
        inboxSyncTo: 0,
        running: false,
        broken: undefined,
        progress: yield* Deferred.make<void>()
      }
    })
    const lock = yield* Effect.makeSemaphore(1)
    const observers = yield* PubSub.unbounded<SessionEvent.SessionEvent>()
    const faults = yield* PubSub.unbounded<SessionStoreError>()

    /**
     * Marks progress: applies `f` to the writer (one atomic step, so a concurrent `recordInbox` or `flush` is never
     * lost), completes the current progress signal and installs a fresh one.
     */
    const signal = (f: (writer: Writer) => Omit<Writer, "progress">) =>
      Effect.flatMap(Deferred.make<void>(), (progress) =>
        Effect.flatMap(
          Ref.modify(shared, (s): readonly [Deferred.Deferred<void>, Shared] => [
            s.writer.progress,
            { ...s, writer: { ...f(s.writer), progress } }
          ]),
          (previous) => Deferred.succeed(previous, undefined)
        ))

    /** Waits (interruptibly) until `done` holds of the writer; fails when the writer broke first. */
    const awaitWriter = (done: (writer: Writer, appended: number) => boolean): Effect.Effect<void, SessionLogError> =>
      Effect.flatMap(Ref.get(shared), (s) => {
        if (done(s.writer, s.data.state.nextSeq)) return Effect.void
        if (s.writer.broken !== undefined) return Effect.fail(brokenError(id, s.writer.broken))
        return Effect.zipRight(Deferred.await(s.writer.progress), awaitWriter(done))
      })

    type Job =
      | {
        readonly _tag: "write"
        readonly events: ReadonlyArray<SessionEvent.SessionEvent>
        readonly inbox: ReadonlyArray<StoreRecords.InboxRecord>
        readonly sync: boolean
      }
      | { readonly _tag: "stop" }

    /** Whether a barrier waits for a sync the writer has not made yet. */
    const owesSync = (w: Writer) => w.synced < w.syncTo || w.inboxSynced < w.inboxSyncTo

    /** The next thing the writer does; stopping clears `running` in the same step, so no append is stranded. */
    const nextJob = Ref.modify(shared, (s): readonly [Job, Shared] => {
      const w = s.writer
      const appended = s.data.state.nextSeq
      if (w.broken === undefined && (w.durable < appended || Chunk.isNonEmpty(w.inbox))) {
        const end = Math.min(appended, w.durable + settings.maxBatch)
        const events = Chunk.toReadonlyArray(Chunk.take(Chunk.drop(s.data.events, w.durable), end - w.durable))
        // Every inbox record recorded so far goes with this batch: a record is never stored after an event that
        // was appended after it (so an accepted message is never stored after the event that logged it).
        const inbox = Chunk.toReadonlyArray(w.inbox)
        return [{ _tag: "write", events, inbox, sync: w.syncTo > w.durable || w.inboxSyncTo > w.inboxWritten }, s]
      }
      if (w.broken === undefined && owesSync(w)) return [{ _tag: "write", events: [], inbox: [], sync: true }, s]
      return [{ _tag: "stop" }, { ...s, writer: { ...w, running: false } }]
    })

    /**
     * One store write, retried on transient faults (each reported on `faults`), never reordered or skipped. Its span
     * (ADR 0024) is a child of the span that started the writer.
     */
    const write = (
      events: ReadonlyArray<SessionEvent.SessionEvent>,
      inbox: ReadonlyArray<StoreRecords.InboxRecord>,
      sync: boolean
    ) =>
      store.append(id, { events, inbox }, { sync }).pipe(
        Effect.tapError((error) => PubSub.publish(faults, error)),
        Effect.retry({ schedule: settings.retry, while: isTransient }),
        Effect.withSpan("SessionLog.commit", {
          attributes: {
            "harness.session.id": id,
            "harness.log.events": events.length,
            ...(events.length === 0 ? {} : { "harness.log.first_seq": events[0]!.seq }),
            "harness.log.inbox_records": inbox.length,
            "harness.log.sync": sync
          },
          captureStackTrace: false
        })
      )

    const writerLoop: Effect.Effect<void> = Effect.gen(function*() {
      for (;;) {
        const job = yield* nextJob
        if (job._tag === "stop") return
        const count = job.events.length
        const inboxCount = job.inbox.length
        const sync = job.sync
        const outcome = yield* Effect.either(write(job.events, job.inbox, sync))
        if (Either.isLeft(outcome)) {
          yield* signal((writer) => ({ ...writer, running: false, broken: outcome.left }))
          return
        }
        yield* signal((writer) => {
          const durable = writer.durable + count
          const inboxWritten = writer.inboxWritten + inboxCount
          return {
            ...writer,
            durable,
            synced: sync ? durable : writer.synced,
            inbox: Chunk.drop(writer.inbox, inboxCount),
            inboxWritten,
            inboxSynced: sync ? inboxWritten : writer.inboxSynced
          }
        })
      }
    })

    /** Starts the writer if it is not running (write-behind). */
    const kick = Effect.flatMap(
      Ref.modify(shared, (s): readonly [boolean, Shared] =>
        s.writer.running || s.writer.broken !== undefined
          ? [false, s]
          : [true, { ...s, writer: { ...s.writer, running: true } }]),
      (start) => start ? Effect.asVoid(Effect.forkDaemon(writerLoop)) : Effect.void
    )

    /** Validates and checks inputs against the current state: the events and the data after them, or the refusal. */
    const prepare = (
      current: LogData,
      inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
      time: number
    ): Either.Either<
      { readonly events: Array<SessionEvent.SessionEvent>; readonly next: LogData },
      SessionLogError
    > => {
      let next = current
      const events: Array<SessionEvent.SessionEvent> = []
      for (const input of inputs) {
        const seq = next.state.nextSeq
        const encoded = encode({ ...input, seq, time })
        if (Either.isLeft(encoded)) {
          return Either.left(
            new SessionLogError({
              reason: "invalid-event",
              message: `the ${input.type} event is invalid: ${encoded.left}`,
              seq
            })
          )
        }
        const event = encoded.right
        const checked = logCheck.step(next.state, event)
        if ("violation" in checked) {
          const { message, rule } = checked.violation
          return Either.left(new SessionLogError({ reason: rule, message, seq }))
        }
        events.push(event)
        next = advance(next, event, checked.state)
      }
      return Either.right({ events, next })
    }

    // Untraced on purpose: the agent appends every stream chunk, and a span (with its stack capture) would cost
    // more than the append itself; turns and steps carry the spans.
    const appendLocked = Effect.fnUntraced(function*(inputs: ReadonlyArray<SessionEvent.SessionEventInput>) {
      const { data: current, writer } = yield* Ref.get(shared)
      if (writer.broken !== undefined) return yield* brokenError(id, writer.broken)
      const time = yield* Clock.currentTimeMillis
      const prepared = prepare(current, inputs, time)
      if (Either.isLeft(prepared)) return yield* prepared.left
      const { events, next } = prepared.right
      if (events.length === 0) return events
      if (writeBehind) {
        // Accepted in memory now; the writer makes it durable (in order, in batches).
        yield* Ref.update(shared, (s) => ({ ...s, data: next }))
        yield* PubSub.publishAll(observers, events)
        yield* kick
        return events
      }
      // Write-through: the commit point is the store write; memory and observers follow it. Inbox records
      // recorded since the last commit ride with it (before its events).
      const inbox = Chunk.toReadonlyArray(writer.inbox)
      yield* store.append(id, { events, inbox }).pipe(
        Effect.mapError(storeError(`the store refused ${describeBatch(events)}`)),
        Effect.zipRight(Ref.update(shared, (s) => ({
          data: next,
          writer: {
            ...s.writer,
            durable: next.state.nextSeq,
            inbox: Chunk.drop(s.writer.inbox, inbox.length),
            inboxWritten: s.writer.inboxWritten + inbox.length
          }
        }))),
        Effect.zipRight(PubSub.publishAll(observers, events))
      )
      return events
    })

    const recordInbox = (inputs: ReadonlyArray<InboxRecordInput>): Effect.Effect<void, SessionLogError> =>
      inputs.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (time) => {
        const records: Array<StoreRecords.InboxRecord> = []
        for (const input of inputs) {
          const candidate = { ...input, time }
          if (isInboxRecord(candidate)) {
            records.push(candidate)
            continue
          }
          const checked = validateInbox(candidate)
          if (Either.isLeft(checked)) {
            return Effect.fail(
              new SessionLogError({
                reason: "invalid-event",
                message: `the ${input.type} record is invalid: ${formatIssue(checked.left)}`
              })
            )
          }
          records.push(checked.right)
        }
        // No lock: every commit drops from the front exactly the records it wrote, so records added while a commit
        // is in flight stay pending for the next one.
        const add = Ref.update(shared, (s) => ({
          ...s,
          writer: { ...s.writer, inbox: Chunk.appendAll(s.writer.inbox, Chunk.unsafeFromArray(records)) }
        }))
        return writeBehind ? Effect.zipRight(add, kick) : add
      })

    const hasMessage = (messageId: Ids.AgentMessageId): Effect.Effect<boolean, SessionLogError> =>
      Effect.flatMap(Ref.get(shared), (s) => {
        const unwritten = Chunk.some(s.writer.inbox, (r) => StoreRecords.messageIdOf(r) === messageId) ||
          (s.writer.durable < s.data.state.nextSeq &&
            Chunk.some(Chunk.drop(s.data.events, s.writer.durable), (e) => StoreRecords.messageIdOf(e) === messageId))
        return unwritten ? Effect.succeed(true) : store.hasMessage(id, messageId).pipe(
          Effect.mapError(storeError(`cannot look up message ${JSON.stringify(messageId)}`))
        )
      })

    /** Back-pressure (write-behind): waits, interruptibly and before taking the lock, for room in the buffer. */
    const awaitRoom: Effect.Effect<void, SessionLogError> = writeBehind
      ? awaitWriter((w, appended) => appended - w.durable < settings.capacity)
      : Effect.void

    // Uninterruptible, lock wait included: `Semaphore.take` counts a permit as taken while the waiter is still
    // interruptible, so an interruption at that instant would leak it and block every later append. Under the lock
    // an append waits on nothing but the store (write-through) or on nothing at all (write-behind).
    const appendBatch = (inputs: ReadonlyArray<SessionEvent.SessionEventInput>) =>
      Effect.zipRight(awaitRoom, Effect.uninterruptible(lock.withPermits(1)(appendLocked(inputs))))

    const flush: Effect.Effect<void, SessionLogError> = Effect.suspend(() => {
      if (!writeBehind) {
        // Every event is written already; recorded inbox records are written now, and a durable store still
        // needs its sync.
        return Effect.flatMap(Ref.get(shared), (s) =>
          s.writer.synced >= s.data.state.nextSeq && Chunk.isEmpty(s.writer.inbox)
            ? Effect.void
            : lock.withPermits(1)(Effect.flatMap(Ref.get(shared), (now) => {
              const inbox = Chunk.toReadonlyArray(now.writer.inbox)
              return store.append(id, { events: [], inbox }, { sync: true }).pipe(
                Effect.mapError(storeError("the store refused to sync")),
                Effect.zipRight(Ref.update(shared, (x) => ({
                  ...x,
                  writer: {
                    ...x.writer,
                    synced: Math.max(x.writer.synced, now.data.state.nextSeq),
                    inbox: Chunk.drop(x.writer.inbox, inbox.length),
                    inboxWritten: x.writer.inboxWritten + inbox.length,
                    inboxSynced: x.writer.inboxWritten + inbox.length
                  }
                })))
              )
            })))
      }
      return Effect.flatMap(
        Ref.modify(shared, (s): readonly [readonly [number, number], Shared] => {
          const target = s.data.state.nextSeq
          const inboxTarget = s.writer.inboxWritten + Chunk.size(s.writer.inbox)
          return [[target, inboxTarget], {
            ...s,
            writer: {
              ...s.writer,
              syncTo: Math.max(s.writer.syncTo, target),
              inboxSyncTo: Math.max(s.writer.inboxSyncTo, inboxTarget)
            }
          }]
        }),
        ([target, inboxTarget]) =>
          Effect.zipRight(
            Effect.zipRight(Effect.annotateCurrentSpan("harness.log.seq", target), kick),
            awaitWriter((w) =>
              w.synced >= target && w.inboxSynced >= inboxTarget
            )
          )
      )
    }).pipe(Effect.withSpan("SessionLog.flush", { attributes: { "harness.session.id": id }, captureStackTrace: false }))

    return {
      id,
      // The appended event is the validated copy of `input` with `seq` and `time` added, so its `type` is
      // `input.type`; TypeScript cannot see that through the union, hence the cast.
      append: <E extends SessionEvent.SessionEventInput>(input: E) =>
        Effect.map(appendBatch([input]), (events) => events[0]!) as Effect.Effect<
          Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>,
          SessionLogError
        >,
      appendAll: appendBatch,
      flush,
      cursors: Effect.map(Ref.get(shared), (s): Cursors => ({
        appended: s.data.state.nextSeq,
        durable: s.writer.durable
      })),
      commitMode: settings.mode,
      durable: store.volatile !== true,
      recordInbox,
      pendingInbox,
      hasMessage,
      faults: Stream.fromPubSub(faults),
      subscribeFaults: PubSub.subscribe(faults),
      events: Effect.map(Ref.get(shared), (s) => Chunk.toReadonlyArray(s.data.events)),
      state: Effect.map(Ref.get(shared), (s) => s.data.state),
      history: Effect.map(Ref.get(shared), (s) => s.data.history),
      subscribe: PubSub.subscribe(observers),
      changes: Stream.fromPubSub(observers)
    } satisfies Service
  })

const describeBatch = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.length === 1
    ? `${events[0]!.type} at seq ${events[0]!.seq}`
    : `${events.length} events at seqs ${events[0]!.seq}–${events.at(-1)!.seq}`

// ---------------------------------------------------------------------------------------------------------------
// make, open (with crash repair)
// ---------------------------------------------------------------------------------------------------------------

export const make = Effect.fn("SessionLog.make")(function*(options?: MakeOptions) {
  const store = yield* SessionStore
  const id = options?.id ?? (yield* randomSessionId)
  const seed = options?.seed ?? []
  const events: Array<SessionEvent.SessionEvent> = []
  for (const [index, candidate] of seed.entries()) {
    const encoded = encode(candidate)
    if (Either.isLeft(encoded)) return yield* invalidSeed(`seed event ${index} is invalid: ${encoded.left}`, index)
    events.push(encoded.right)
  }
  const initial = yield* checkContinuable(events)
  const createdAt = yield* Clock.currentTimeMillis
  const header: StoreRecords.SessionHeader = {
    id,
    version: 1,
    createdAt,
    ...(options?.parent === undefined ? {} : { parent: options.parent }),
    ...(options?.title === undefined ? {} : { title: options.title })
  }
  yield* store.create(header, { events, inbox: [] }).pipe(
    Effect.mapError(storeError(`cannot create session ${JSON.stringify(id)}`))
  )
  return yield* makeService(id, store, initial, settingsOf(store, options?.commit))
})

const corrupt = (id: Ids.SessionId, position: number, what: string, seq?: number) =>
  new SessionLogError({
    reason: "corrupt",
    message: `session ${JSON.stringify(id)} is corrupt at stored record ${position}: ${what}`,
    session: id,
    position,
    ...(seq === undefined ? {} : { seq })
  })

/** The first bad record of a scan: a record that does not decode, or an event out of `seq` order. */
interface BadRecord {
  readonly position: number
  readonly what: string
}

/** What the load scan found. */
interface Scan {
  /** The log up to the first bad record (or the whole log). */
  readonly data: LogData
  /** Records before the first bad record. */
  readonly kept: number
  readonly bad: BadRecord | undefined
  /** Whether a valid `turn/end` follows the first bad record: then the bad record is corruption, not a torn tail. */
  readonly committedAfterBad: boolean
  /** A rule violation among the kept records: always corruption. */
  readonly violation: SessionLogError | undefined
  /**
   * The kept `inbox/accepted` records still pending, by message id in acceptance order (a `Map` keeps insertion
   * order): one is removed by its `inbox/settled` or by the event that logged its id. Mutated by the fold.
   */
  readonly inbox: Map<string, StoreRecords.InboxAccepted>
}

/**
 * Scans a stored session (R106): folds the records into the log until the first bad one, then only looks for a
 * later valid `turn/end` (which makes the bad record corruption instead of a torn tail).
 */
const scan = (id: Ids.SessionId, store: Store): Effect.Effect<Scan, SessionLogError> =>
  Effect.suspend(() => {
    // A plain loop over each loaded chunk with one mutable accumulator: `Stream.runFold` recurses once per element
    // of a chunk (`foldChunkSplit`), which overflows the stack on a backend that loads big chunks (JSONL, W7).
    let acc: Scan = {
      data: emptyData,
      kept: 0,
      bad: undefined,
      committedAfterBad: false,
      violation: undefined,
      inbox: new Map()
    }
    const step = (record: StoredRecord): void => {
      if (acc.violation !== undefined || acc.committedAfterBad) return
      const decoded = decodeRecord(record.text)
      if (acc.bad !== undefined) {
        if (Either.isRight(decoded) && decoded.right.type === "turn/end") acc = { ...acc, committedAfterBad: true }
        return
      }
      if (Either.isLeft(decoded)) {
        acc = { ...acc, bad: { position: record.position, what: `it is not a record: ${decoded.left}` } }
        return
      }
      const value = decoded.right
      if (StoreRecords.isInboxRecord(value)) {
        if (value.type === "inbox/accepted") acc.inbox.set(value.message.id, value)
        else acc.inbox.delete(value.id)
        acc = { ...acc, kept: acc.kept + 1 }
        return
      }
      const expected = acc.data.state.nextSeq
      if (value.seq !== expected) {
        acc = {
          ...acc,
          bad: { position: record.position, what: `it holds seq ${value.seq} where the log needs seq ${expected}` }
        }
        return
      }
      const checked = logCheck.step(acc.data.state, value)
      if ("violation" in checked) {
        const { message, rule } = checked.violation
        acc = {
          ...acc,
          violation: corrupt(id, record.position, `seq ${value.seq} breaks the rule ${rule}: ${message}`, value.seq)
        }
        return
      }
      const logged = StoreRecords.messageIdOf(value)
      if (logged !== undefined) acc.inbox.delete(logged)
      acc = { ...acc, data: advance(acc.data, value, checked.state), kept: acc.kept + 1 }
    }
    return store.load(id).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.sync(() => {
          for (const record of chunk) step(record)
        })
      ),
      Effect.mapError(storeError(`cannot load session ${JSON.stringify(id)}`)),
      Effect.map(() => acc)
    )
  })

export const open = Effect.fn("SessionLog.open")(function*(id: Ids.SessionId, options?: OpenOptions) {
  const store = yield* SessionStore
  const found = yield* scan(id, store)
  if (found.violation !== undefined) return yield* found.violation
  if (found.bad !== undefined) {
    // A bad record before a committed turn/end is corruption; after the last one it is a torn tail.
    if (found.committedAfterBad) return yield* corrupt(id, found.bad.position, found.bad.what)
    yield* store.truncate(id, found.bad.position).pipe(
      Effect.mapError(storeError(`cannot truncate the torn tail of session ${JSON.stringify(id)}`))
    )
  } else {
    // Lets a backend cut bytes of a commit a crash tore (JSONL), which its framing already hides from `load`.
    yield* store.truncate(id, found.kept).pipe(
      Effect.mapError(storeError(`cannot truncate the torn tail of session ${JSON.stringify(id)}`))
    )
  }
  let data = found.data
  const repair = closers.repair(data.state)
  if (repair.length > 0) {
    // The closers continue the log's numbering, stamped with the last real event's time (R106), made durable.
    const time = Chunk.last(data.events).pipe((last) => last._tag === "Some" ? last.value.time : 0)
    const events: Array<SessionEvent.SessionEvent> = []
    for (const input of repair) {
      // Built here from the log's own state: typed, so the copy is trusted; `step` still checks the rules.
      const event = { ...input, seq: data.state.nextSeq, time } as SessionEvent.SessionEvent
      const checked = logCheck.step(data.state, event)
      if ("violation" in checked) return yield* corrupt(id, found.kept, `repair failed: ${checked.violation.message}`)
      events.push(event)
      data = advance(data, event, checked.state)
    }
    yield* store.append(id, { events, inbox: [] }, { sync: true }).pipe(
      Effect.mapError(storeError(`cannot write the repair of session ${JSON.stringify(id)}`))
    )
  }
  return yield* makeService(id, store, data, settingsOf(store, options?.commit), [...found.inbox.values()])
})
