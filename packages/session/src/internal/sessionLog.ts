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
  Context,
  DefaultServices,
  Effect,
  Either,
  Option,
  ParseResult,
  PubSub,
  Ref,
  Schedule,
  Schema,
  Stream,
  Tracer
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
import { type Commit, type Lease, type Service as Store, SessionStore, type StoredRecord } from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import * as closers from "./closers.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"
import * as MemoryStore from "./memoryStore.js"
import * as snapshot from "./snapshot.js"

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
 * The pending inbox, one stored value at a time: an acceptance adds its item, a settlement removes it, a logged
 * message carrying its id claims it (ADR 0017). `open`'s scan and the snapshot writer keep it the same way.
 */
const trackPending = (
  pending: Map<string, StoreRecords.InboxAccepted>,
  value: StoreRecords.InboxRecord | SessionEvent.SessionEvent
): void => {
  if (StoreRecords.isInboxRecord(value)) {
    if (value.type === "inbox/accepted") pending.set(value.message.id, value)
    else pending.delete(value.id)
    return
  }
  const logged = StoreRecords.messageIdOf(value)
  if (logged !== undefined) pending.delete(logged)
}

/**
 * Checks an event at the boundary: a copy that shares nothing with the caller's value. Returns the problem as a
 * sentence when the event does not match its schema or is not JSON-lossless.
 */
const encode = (candidate: unknown): Either.Either<SessionEvent.SessionEvent, string> =>
  Either.mapLeft(validate(candidate), formatIssue)

const storeError = (what: string) => (error: SessionStoreError) =>
  error.reason === "Busy"
    ? busyError(`${what}: ${error.message}`, error)
    : new SessionLogError({ reason: "store", message: `${what}: ${error.message} (${error.reason})` })

/** Another writer holds the session (or took it over from this log): `busy`, naming the holder when known. */
const busyError = (message: string, error: SessionStoreError) =>
  new SessionLogError({
    reason: "busy",
    message,
    ...(error.id === undefined ? {} : { session: error.id }),
    ...(error.holder === undefined ? {} : { holder: error.holder })
  })

/**
 * The store as a log writes it: every write carries the log's lease (the store's fence refuses it once the lease
 * was taken over, ADR 0044), and a log opened read-only writes nothing at all.
 */
const writerStore = (store: Store, lease: Lease | "read-only"): Store => {
  if (lease === "read-only") {
    const refuse = (id: Ids.SessionId) =>
      Effect.fail(
        new SessionStoreError({
          reason: "Conflict",
          message: `session ${JSON.stringify(id)} was opened read-only`,
          id
        })
      )
    return {
      ...store,
      append: (id) => refuse(id),
      truncate: (id) => refuse(id),
      saveSnapshot: (id) => refuse(id),
      remove: (id) => refuse(id)
    }
  }
  return {
    ...store,
    append: (id, commit, options) => store.append(id, commit, { ...options, lease }),
    truncate: (id, position) => store.truncate(id, position, { lease }),
    saveSnapshot: (id, snapshot) => store.saveSnapshot(id, snapshot, { lease })
  }
}

/** The log's error for the store's refusal of a commit of these events (its message made only on a refusal). */
const refusedCommit = (events: ReadonlyArray<SessionEvent.SessionEvent>) => (error: SessionStoreError) =>
  storeError(`the store refused ${describeBatch(events)}`)(error)

const invalidSeed = (message: string, seq?: number) =>
  new SessionLogError(
    seq === undefined ? { reason: "invalid-seed", message } : { reason: "invalid-seed", message, seq }
  )

/**
 * A typed input stamped with `seq` and `time`: that variant's event, built as one object literal in the schema's key
 * order. Not `{ ...input, seq, time }`: in V8 a spread followed by keys the source lacks gives every object a hidden
 * class of its own (a map, its descriptors and a property array, ~200 bytes the log would keep per event), and makes
 * every site that reads events megamorphic (ADR 0030).
 */
const stamp = (input: SessionEvent.SessionEventInput, seq: number, time: number): SessionEvent.SessionEvent =>
  // One variant's input plus `seq` and `time` is that variant's event; TypeScript cannot follow the union.
  (input.sourceEventSeqs === undefined
    ? { seq, time, type: input.type, data: input.data }
    : {
      seq,
      time,
      type: input.type,
      data: input.data,
      sourceEventSeqs: input.sourceEventSeqs
    }) as SessionEvent.SessionEvent

/** An inbox record stamped with `time`, one object literal in the schema's key order (see {@link stamp}). */
const stampInbox = (input: InboxRecordInput, time: number): StoreRecords.InboxRecord =>
  input.type === "inbox/accepted"
    ? { type: input.type, time, message: input.message, placement: input.placement, wakeup: input.wakeup }
    : { type: input.type, time, id: input.id, fate: input.fate }

/** The log right after its latest `turn/end`: where the writer may take a snapshot (ADR 0022). */
interface Checkpoint {
  readonly seq: number
  readonly state: LogState
  /** The history held in memory at that point (without a snapshot's prefix not yet decoded). */
  readonly history: History
}

/** What a log holds after its last event. */
interface LogData {
  /** The events from `base` on (older ones are in the store: ADR 0022). */
  readonly events: AppendOnly.AppendOnly<SessionEvent.SessionEvent>
  /** The `seq` of the first event in `events`. */
  readonly base: number
  readonly state: LogState
  readonly history: History
  readonly checkpoint: Checkpoint | undefined
}

const emptyData: LogData = {
  events: AppendOnly.empty(),
  base: 0,
  state: logCheck.initial,
  history: history.empty,
  checkpoint: undefined
}

/** Folds one event that passed `LogCheck.step` into the log's data. */
const advance = (data: LogData, event: SessionEvent.SessionEvent, state: LogState): LogData => {
  const folded = history.fold(data.history, event)
  return {
    events: AppendOnly.append(data.events, event),
    base: data.base,
    state,
    history: folded,
    checkpoint: event.type === "turn/end" ? { seq: event.seq, state, history: folded } : data.checkpoint
  }
}

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

/** A random (version 4) UUID from the `Random` service, so seeded tests get stable ids. */
export const randomSessionId: Effect.Effect<Ids.SessionId> = Ids.randomUuid(Ids.SessionId)

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
  /**
   * Opened (and replaced) whenever the writer makes progress or breaks. A latch, not a `Deferred`: a `Deferred` costs
   * V8 a fresh chain of maps each time (ADR 0036). Write-behind only: a write-through append waits for the store
   * itself, and nobody awaits a write-through log's writer (a latch was ≈ 1 KB of every idle agent, ADR 0038).
   */
  readonly progress: Effect.Latch | undefined
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

/** The default number of events between snapshots on a durable store (ADR 0022). */
export const defaultSnapshotEvery = 10_000

/**
 * Whether a snapshot at `seq` is due after one at `lastSeq`: at least `every` events later, and at least an eighth of
 * what the last one covered (each snapshot rewrites the whole history, so a fixed interval would make a long
 * session's snapshots cost more than its appends; this bounds them to about 9 histories in all).
 */
const snapshotDue = (every: number, lastSeq: number, seq: number): boolean =>
  every > 0 && seq - lastSeq >= Math.max(every, (lastSeq + 1) / 8)

/** Events between snapshots: `snapshotEvery`, else the default on durable stores and never on volatile ones (0). */
const snapshotEveryOf = (store: Store, options: CommitOptions | undefined): number => {
  const every = options?.snapshotEvery ?? (store.volatile === true ? 0 : defaultSnapshotEvery)
  return Number.isFinite(every) && every > 0 ? Math.ceil(every) : 0
}

/** Where a log's snapshot bookkeeping starts (ADR 0022). */
interface SnapshotStart {
  /** Events between snapshots; 0: never. */
  readonly every: number
  /** The position the next stored record gets. */
  readonly records: number
  /** The pending inbox after the last stored record. */
  readonly pending: ReadonlyArray<StoreRecords.InboxAccepted>
  /** The `seq` the last snapshot covers (-1: none). */
  readonly lastSeq: number
  /**
   * The history events up to `lastSeq`, as a snapshot holds them (comma-separated JSON texts); `undefined` while
   * they are only in the body of the snapshot the log was opened from (read by `prefix.load` when needed).
   */
  readonly historyText: string | undefined
  readonly historyMessages: number
  /** The history prefix of the snapshot the log was opened from: not in the log's `history`, read on demand. */
  readonly prefix: Prefix | undefined
}

/**
 * The history up to a snapshot the log was opened from (ADR 0027): its body is read and decoded once, on first use
 * (the first `history` read, or the writer's next snapshot, which extends its text).
 */
interface Prefix {
  readonly seq: number
  /** Its number of messages: as the head says until the body is read, then as read. */
  readonly messages: number
  readonly load: Effect.Effect<snapshot.Body>
}

const freshSnapshots = (every: number, records: number): SnapshotStart => ({
  every,
  records,
  pending: [],
  lastSeq: -1,
  historyText: "",
  historyMessages: 0,
  prefix: undefined
})

/**
 * The stored events with `seq` below `below`, decoded and checked to be contiguous from 0 (the part of the log
 * a snapshot let `open` skip). A store failure or a record that is not what the log said is a defect: the
 * accessors that need this cannot fail (ADR 0022).
 */
const storedEvents = (
  id: Ids.SessionId,
  store: Store,
  below: number
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
  Effect.suspend(() => {
    const out: Array<SessionEvent.SessionEvent> = []
    return store.load(id).pipe(
      Stream.takeWhile(() => out.length < below),
      Stream.runForEachChunk((chunk) =>
        Effect.suspend(() => {
          for (const record of chunk) {
            if (out.length >= below) break
            const decoded = decodeRecord(record.text)
            if (Either.isLeft(decoded)) {
              return Effect.fail(corrupt(id, record.position, `it is not a record: ${decoded.left}`))
            }
            const value = decoded.right
            if (StoreRecords.isInboxRecord(value)) continue
            if (value.seq !== out.length) {
              return Effect.fail(
                corrupt(id, record.position, `it holds seq ${value.seq} where the log needs seq ${out.length}`)
              )
            }
            out.push(value)
          }
          return Effect.void
        })
      ),
      Effect.mapError((error) =>
        error instanceof SessionLogError ? error : storeError(`cannot load session ${JSON.stringify(id)}`)(error)
      ),
      Effect.flatMap(() =>
        out.length === below ? Effect.succeed(out) : Effect.fail(
          new SessionLogError({
            reason: "store",
            message: `session ${JSON.stringify(id)} stores ${out.length} events before seq ${below}`
          })
        )
      ),
      Effect.orDie
    )
  })

const brokenError = (id: Ids.SessionId, error: SessionStoreError) =>
  error.reason === "Busy"
    ? busyError(`session ${JSON.stringify(id)} stopped writing: another writer took it over: ${error.message}`, error)
    : new SessionLogError({
      reason: "store",
      message: `session ${
        JSON.stringify(id)
      } stopped writing: the store refused a commit and retrying cannot help: ${error.message} (${error.reason})`
    })

/**
 * Runs `effect` holding one permit of `lock`, released on every exit. Uninterruptible, the wait for the permit
 * included: `Semaphore.take` counts a permit as taken while the waiter is still interruptible, so an interruption at
 * that instant would leak it.
 *
 * A free lock is taken in one synchronous step (`withPermitsIfAvailable`): `take` suspends the fiber even when the
 * permit is free (it is an async registration that resumes at once), which costs the fiber a trip out of its run
 * loop and back per section (ADR 0041). Only a held lock is waited for with `take`; the region being uninterruptible
 * already, a plain `matchCauseEffect` then releases it (`ensuring` would mask interruption a second time, ADR 0028).
 */
export const holding = <A, E, R>(lock: Effect.Semaphore, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptible(Effect.flatMap(
    lock.withPermitsIfAvailable(1)(effect),
    (held) =>
      held._tag === "Some" ? Effect.succeed(held.value) : Effect.zipRight(
        lock.take(1),
        Effect.matchCauseEffect(effect, {
          onFailure: (cause) => Effect.zipRight(lock.release(1), Effect.failCause(cause)),
          onSuccess: (a) => Effect.as(lock.release(1), a)
        })
      )
  ))

// ---------------------------------------------------------------------------------------------------------------
// Snapshots (ADR 0022)
// ---------------------------------------------------------------------------------------------------------------

/** The snapshot bookkeeping after a store commit of `inbox` then `events` (in commit order). */
type AfterCommit = (
  inbox: ReadonlyArray<StoreRecords.InboxRecord>,
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  checkpoint: Checkpoint | undefined
) => Effect.Effect<void>

const noSnapshots: AfterCommit = () => Effect.void

/**
 * A log's snapshot bookkeeping: takes a snapshot when one is due (best effort). Made only for a log that takes
 * snapshots (none on a volatile store unless asked): a log that never takes one builds none of it (ADR 0038).
 */
const snapshotKeeper = (
  id: Ids.SessionId,
  store: Store,
  shared: Ref.Ref<Shared>,
  snapshots: SnapshotStart
): AfterCommit => {
  // Mutated only by whoever commits (the writer fiber under write-behind, the lock holder under write-through),
  // one commit at a time, in commit order.
  const snap = {
    records: snapshots.records,
    pending: new Map(snapshots.pending.map((r) => [r.message.id as string, r])),
    lastSeq: snapshots.lastSeq,
    historyText: snapshots.historyText,
    historyMessages: snapshots.historyMessages
  }
  /** The number of messages in the opened snapshot's history (as its head says until its body is read). */
  let prefixMessages = snapshots.prefix?.messages ?? 0
  const prefix = snapshots.prefix
  /** The text the next snapshot extends: the opened snapshot's body is read for it the first time. */
  const baseText: Effect.Effect<string> = Effect.suspend(() => {
    const known = snap.historyText
    if (known !== undefined || prefix === undefined) return Effect.succeed(known ?? "")
    return Effect.map(prefix.load, (body) => {
      // The log's own derivation wins over the head's count when the body had to be derived from the log.
      prefixMessages = body.history.length
      snap.historyText = body.historyText
      snap.historyMessages = body.history.length
      return body.historyText
    })
  })
  // Events are dropped from memory only on durable stores (the memory store holds the same events anyway).
  const trim = store.volatile !== true

  /** Takes a snapshot at the checkpoint (the last event of this commit or an earlier one of it): best effort. */
  const takeSnapshot = (
    checkpoint: Checkpoint,
    position: number,
    pending: ReadonlyArray<StoreRecords.InboxAccepted>
  ) =>
    // A base that cannot be read (a store failure while the history is derived from the log is a defect there)
    // skips this snapshot: the writer fiber must go on.
    Effect.flatMap(Effect.zip(Effect.option(Effect.sandbox(baseText)), Ref.get(shared)), ([base, s]) => {
      if (Option.isNone(base)) return Effect.void
      const text = base.value
      const from = snap.lastSeq + 1
      if (from < s.data.base) return Effect.void // cannot happen: memory keeps every event after the last snapshot
      const covered = AppendOnly.slice(s.data.events, from - s.data.base, checkpoint.seq + 1 - s.data.base)
      const last = covered[covered.length - 1]
      if (last === undefined || last.seq !== checkpoint.seq) return Effect.void
      const added = snapshot.appendHistoryText(text, covered)
      const messages = snap.historyMessages + added.added
      // Never write a snapshot that disagrees with the log's own history.
      if (messages !== prefixMessages + checkpoint.history.length) return Effect.void
      const { body, head } = snapshot.encode({
        seq: checkpoint.seq,
        position,
        last: JSON.stringify(last),
        state: checkpoint.state,
        inbox: pending,
        messages,
        historyText: added.text
      })
      return store.saveSnapshot(id, { seq: checkpoint.seq, position, head, body }).pipe(
        Effect.zipRight(Effect.sync(() => {
          snap.lastSeq = checkpoint.seq
          snap.historyText = added.text
          snap.historyMessages = messages
        })),
        Effect.zipRight(
          trim
            ? Ref.update(shared, (now) => {
              const cut = Math.min(checkpoint.seq + 1, now.writer.durable)
              return cut <= now.data.base ? now : {
                ...now,
                data: { ...now.data, events: AppendOnly.drop(now.data.events, cut - now.data.base), base: cut }
              }
            })
            : Effect.void
        ),
        // A snapshot is an optimisation: the log is correct without it, so a refused save changes nothing.
        Effect.ignore
      )
    })

  return (
    inbox: ReadonlyArray<StoreRecords.InboxRecord>,
    events: ReadonlyArray<SessionEvent.SessionEvent>,
    checkpoint: Checkpoint | undefined
  ): Effect.Effect<void> =>
    Effect.suspend(() => {
      const start = snap.records
      for (const record of inbox) trackPending(snap.pending, record)
      const due = checkpoint !== undefined && events.length > 0 && checkpoint.seq >= events[0]!.seq &&
        checkpoint.seq <= events.at(-1)!.seq && snapshotDue(snapshots.every, snap.lastSeq, checkpoint.seq)
      let pending: ReadonlyArray<StoreRecords.InboxAccepted> = []
      for (const event of events) {
        trackPending(snap.pending, event)
        if (due && event.seq === checkpoint.seq) pending = [...snap.pending.values()]
      }
      snap.records = start + inbox.length + events.length
      if (!due) return Effect.void
      return takeSnapshot(checkpoint, start + inbox.length + (checkpoint.seq - events[0]!.seq), pending)
    })
}

// ---------------------------------------------------------------------------------------------------------------
// The writer (write-behind)
// ---------------------------------------------------------------------------------------------------------------

/** A write-behind log's writer: what starts it, and what waits for it. */
interface WriterControl {
  /** Starts the writer if it is not running. */
  readonly kick: Effect.Effect<void>
  /** Waits (interruptibly) until `done` holds of the writer; fails when the writer broke first. */
  readonly awaitWriter: (done: (writer: Writer, appended: number) => boolean) => Effect.Effect<void, SessionLogError>
  /** Back-pressure: waits, interruptibly and before an append takes the lock, for room in the buffer. */
  readonly awaitRoom: Effect.Effect<void, SessionLogError>
}

/**
 * The writer fiber of a write-behind log and its bookkeeping. Made only for a write-behind log: a write-through
 * log commits under its lock and builds none of it (ADR 0038).
 */
const writerOf = (
  id: Ids.SessionId,
  store: Store,
  shared: Ref.Ref<Shared>,
  settings: Settings,
  faults: PubSub.PubSub<SessionStoreError>,
  afterCommit: AfterCommit
): WriterControl => {
  /**
   * Marks progress: applies `f` to the writer (one atomic step, so a concurrent `recordInbox` or `flush` is never
   * lost), opens the current progress latch and installs a fresh one.
   */
  const signal = (f: (writer: Writer) => Omit<Writer, "progress">) =>
    Effect.flatMap(Effect.makeLatch(false), (progress) =>
      Effect.flatMap(
        Ref.modify(shared, (s): readonly [Effect.Latch | undefined, Shared] => [
          s.writer.progress,
          { ...s, writer: { ...f(s.writer), progress } }
        ]),
        (previous) => Effect.sync(() => previous?.unsafeOpen())
      ))

  /** Waits (interruptibly) until `done` holds of the writer; fails when the writer broke first. */
  const awaitWriter = (done: (writer: Writer, appended: number) => boolean): Effect.Effect<void, SessionLogError> =>
    Effect.flatMap(Ref.get(shared), (s) => {
      if (done(s.writer, s.data.state.nextSeq)) return Effect.void
      if (s.writer.broken !== undefined) return Effect.fail(brokenError(id, s.writer.broken))
      // Only a write-behind log waits for its writer, and it always has a latch.
      return Effect.zipRight(s.writer.progress!.await, awaitWriter(done))
    })

  type Job =
    | {
      readonly _tag: "write"
      readonly events: ReadonlyArray<SessionEvent.SessionEvent>
      readonly inbox: ReadonlyArray<StoreRecords.InboxRecord>
      readonly sync: boolean
      readonly checkpoint: Checkpoint | undefined
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
      const events = AppendOnly.slice(s.data.events, w.durable - s.data.base, end - s.data.base)
      // Every inbox record recorded so far goes with this batch: a record is never stored after an event that
      // was appended after it (so an accepted message is never stored after the event that logged it).
      const inbox = Chunk.toReadonlyArray(w.inbox)
      const sync = w.syncTo > w.durable || w.inboxSyncTo > w.inboxWritten
      return [{ _tag: "write", events, inbox, sync, checkpoint: s.data.checkpoint }, s]
    }
    if (w.broken === undefined && owesSync(w)) {
      return [{ _tag: "write", events: [], inbox: [], sync: true, checkpoint: undefined }, s]
    }
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

  // One generator function per log, run once for the log's lifetime: not a per-call one.
  // eslint-disable-next-line no-restricted-syntax
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
      // After the batch is reported durable, so a barrier never waits for a snapshot.
      yield* afterCommit(job.inbox, job.events, job.checkpoint)
    }
  })

  /** Starts the writer if it is not running. */
  const kick = Effect.flatMap(
    Ref.modify(shared, (s): readonly [boolean, Shared] =>
      s.writer.running || s.writer.broken !== undefined
        ? [false, s]
        : [true, { ...s, writer: { ...s.writer, running: true } }]),
    (start) => start ? Effect.asVoid(Effect.forkDaemon(writerLoop)) : Effect.void
  )
  return { kick, awaitWriter, awaitRoom: awaitWriter((w, appended) => appended - w.durable < settings.capacity) }
}

const makeService: (
  id: Ids.SessionId,
  store: Store,
  lease: Lease | "read-only",
  initial: LogData,
  settings: Settings,
  snapshots: SnapshotStart,
  pendingInbox?: ReadonlyArray<StoreRecords.InboxAccepted>
) => Effect.Effect<Service> = Effect.fnUntraced(function*(
  id: Ids.SessionId,
  reader: Store,
  lease: Lease | "read-only",
  initial: LogData,
  settings: Settings,
  snapshots: SnapshotStart,
  pendingInbox: ReadonlyArray<StoreRecords.InboxAccepted> = []
) {
  // Every write below carries the lease; reads (`LogReads`) go to the store itself.
  const store = writerStore(reader, lease)
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
      progress: writeBehind ? yield* Effect.makeLatch(false) : undefined
    }
  })
  const lock = yield* Effect.makeSemaphore(1)
  // Made by the first subscriber (events published before anyone subscribes reach nobody anyway): an agent never
  // subscribes, and the PubSub with its scope was ≈ 0.7 KB of every idle agent and a step of every append.
  let observers: PubSub.PubSub<SessionEvent.SessionEvent> | undefined
  const observed = Effect.suspend(() =>
    observers !== undefined ? Effect.succeed(observers) : Effect.map(
      PubSub.unbounded<SessionEvent.SessionEvent>(),
      // A concurrent first subscriber may have made one meanwhile: its PubSub wins, this one is dropped.
      (made) => (observers ??= made)
    )
  )
  /** Republishes committed events to the log's subscribers, if it has any; succeeds with the events. */
  const notify = (
    events: Array<SessionEvent.SessionEvent>
  ): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
    observers === undefined ? Effect.succeed(events) : Effect.as(PubSub.publishAll(observers, events), events)
  // Only the writer fiber reports faults: a write-through log has no PubSub for them (≈ 1 KB of an idle agent).
  const faults = writeBehind ? yield* PubSub.unbounded<SessionStoreError>() : undefined

  // A memory store's own append as a plain function: commits inside an append's synchronous step (ADR 0037).
  const appendNowOf = lease === "read-only" ? undefined : MemoryStore.appendNowOf(reader)
  const appendNow = appendNowOf === undefined || lease === "read-only"
    ? undefined
    : (sessionId: Ids.SessionId, commit: Commit) => appendNowOf(sessionId, commit, lease)
  const afterCommit = snapshots.every === 0 ? noSnapshots : snapshotKeeper(id, store, shared, snapshots)
  const prefix = snapshots.prefix

  const prefixHistory: Effect.Effect<History> | undefined = prefix === undefined
    ? undefined
    : Effect.map(prefix.load, (body) => body.history)

  // The writer exists only on a write-behind log: the one log with a faults PubSub.
  const background = faults === undefined ? undefined : writerOf(id, store, shared, settings, faults, afterCommit)

  /**
   * Validates (unless `trusted`) and checks inputs against the current state: the events and the data after them,
   * or the refusal. A trusted input is the caller's own typed construction from values validated where they entered
   * (ADR 0023): it is stamped with `seq` and `time` by a shallow copy instead of being validated and deep-copied.
   * The enclosure rules (`LogCheck.step`) are checked either way.
   */
  const prepare = (
    current: LogData,
    inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
    time: number,
    trusted: boolean
  ): Either.Either<
    { readonly events: Array<SessionEvent.SessionEvent>; readonly next: LogData },
    SessionLogError
  > => {
    let next = current
    const events: Array<SessionEvent.SessionEvent> = []
    for (const input of inputs) {
      const seq = next.state.nextSeq
      let event: SessionEvent.SessionEvent
      if (trusted) {
        event = stamp(input, seq, time)
      } else {
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
        event = encoded.right
      }
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
  // more than the append itself; turns and steps carry the spans. Written as a flat chain (one state read, the
  // clock read synchronously, one synchronous preparation, then the commit): every interpreter step here is paid
  // a dozen times per turn (ADR 0023).
  const appendLocked = (
    inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
    trusted: boolean
  ): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError> =>
    Effect.clockWith((clock) =>
      Effect.flatten(Ref.modify(shared, (s) => appendTo(s, inputs, clock.unsafeCurrentTimeMillis(), trusted)))
    )

  /** One append decided in one synchronous step from the log's state: what runs next, and the state after it. */
  const appendTo = (
    s: Shared,
    inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
    time: number,
    trusted: boolean
  ): readonly [Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError>, Shared] => {
    const { data: current, writer } = s
    if (writer.broken !== undefined) return [Effect.fail(brokenError(id, writer.broken)), s]
    const prepared = prepare(current, inputs, time, trusted)
    if (Either.isLeft(prepared)) return [Effect.fail(prepared.left), s]
    const { events, next } = prepared.right
    if (events.length === 0) return [Effect.succeed(events), s]
    // Write-behind: accepted in memory now; the writer makes it durable (in order, in batches).
    if (background !== undefined) return [Effect.zipLeft(notify(events), background.kick), { ...s, data: next }]
    // Write-through: the commit point is the store write; memory and observers follow it, then the snapshot
    // bookkeeping (none without snapshots). Inbox records recorded since the last commit ride with it (before its
    // events). A memory store commits right here, in this synchronous step (ADR 0037).
    const inbox = Chunk.toReadonlyArray(writer.inbox)
    const commit = { events, inbox }
    if (appendNow === undefined) {
      const written = Effect.mapError(store.append(id, commit), refusedCommit(events))
      return [Effect.flatMap(written, () => committed(next, inbox, events)), s]
    }
    const refusal = appendNow(id, commit)
    if (refusal !== undefined) return [Effect.fail(refusedCommit(events)(refusal)), s]
    return [announce(next, inbox, events), committedState(s, next, inbox)]
  }

  /**
   * The log's state once the store took a write-through commit of `next`'s events and `inbox`. One object literal,
   * not a spread of the writer: V8 builds a literal many times faster than it copies a spread (ADR 0040).
   */
  const committedState = (s: Shared, next: LogData, inbox: ReadonlyArray<StoreRecords.InboxRecord>): Shared => {
    const w = s.writer
    return {
      data: next,
      writer: {
        durable: next.state.nextSeq,
        synced: w.synced,
        syncTo: w.syncTo,
        inbox: inbox.length === 0 ? w.inbox : Chunk.drop(w.inbox, inbox.length),
        inboxWritten: w.inboxWritten + inbox.length,
        inboxSynced: w.inboxSynced,
        inboxSyncTo: w.inboxSyncTo,
        running: w.running,
        broken: w.broken,
        progress: w.progress
      }
    }
  }

  /** After a write-through commit is in the log's state: observers, then the snapshot bookkeeping. */
  const announce = (
    next: LogData,
    inbox: ReadonlyArray<StoreRecords.InboxRecord>,
    events: Array<SessionEvent.SessionEvent>
  ): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
    afterCommit === noSnapshots
      ? notify(events)
      : Effect.zipLeft(notify(events), afterCommit(inbox, events, next.checkpoint))

  /** Write-through, after an effectful store took the commit: the log's state, then `announce`. */
  const committed = (
    next: LogData,
    inbox: ReadonlyArray<StoreRecords.InboxRecord>,
    events: Array<SessionEvent.SessionEvent>
  ): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
    Effect.flatMap(Ref.update(shared, (s) => committedState(s, next, inbox)), () => announce(next, inbox, events))

  const recordInbox = (
    inputs: ReadonlyArray<InboxRecordInput>,
    options?: { readonly trusted?: boolean }
  ): Effect.Effect<void, SessionLogError> =>
    inputs.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (time) => {
      const records: Array<StoreRecords.InboxRecord> = []
      for (const input of inputs) {
        const candidate = stampInbox(input, time)
        if (options?.trusted === true || isInboxRecord(candidate)) {
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
      return background === undefined ? add : Effect.zipRight(add, background.kick)
    })

  const hasMessage = (messageId: Ids.AgentMessageId): Effect.Effect<boolean, SessionLogError> =>
    Effect.flatMap(Ref.get(shared), (s) => {
      const unwritten = Chunk.some(s.writer.inbox, (r) => StoreRecords.messageIdOf(r) === messageId) ||
        (s.writer.durable < s.data.state.nextSeq &&
          AppendOnly.someFrom(
            s.data.events,
            s.writer.durable - s.data.base,
            (e) => StoreRecords.messageIdOf(e) === messageId
          ))
      return unwritten ? Effect.succeed(true) : store.hasMessage(id, messageId).pipe(
        Effect.mapError(storeError(`cannot look up message ${JSON.stringify(messageId)}`))
      )
    })

  // Under the lock an append waits on nothing but the store (write-through) or on nothing at all (write-behind).
  const appendBatch = (inputs: ReadonlyArray<SessionEvent.SessionEventInput>, trusted: boolean) => {
    const locked = holding(lock, appendLocked(inputs, trusted))
    return background === undefined ? locked : Effect.zipRight(background.awaitRoom, locked)
  }

  const flush = (): Effect.Effect<void, SessionLogError> =>
    Effect.suspend(() => {
      if (background === undefined) {
        // Every event is written already; recorded inbox records are written now, and a durable store still
        // needs its sync. Held like an append (`holding`): an interruption landing while the store writes must not
        // leave the records it wrote pending, to be written (and restored) a second time.
        return Effect.flatMap(
          Ref.get(shared),
          (s) =>
            s.writer.synced >= s.data.state.nextSeq && Chunk.isEmpty(s.writer.inbox)
              ? Effect.void
              : holding(
                lock,
                Effect.flatMap(Ref.get(shared), (now) => {
                  const inbox = Chunk.toReadonlyArray(now.writer.inbox)
                  return store.append(id, { events: [], inbox }, { sync: true }).pipe(
                    Effect.mapError(storeError("the store refused to sync")),
                    Effect.tap(() => afterCommit(inbox, [], undefined)),
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
                })
              )
        )
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
            Effect.zipRight(Effect.annotateCurrentSpan("harness.log.seq", target), background.kick),
            background.awaitWriter((w) => w.synced >= target && w.inboxSynced >= inboxTarget)
          )
      )
    }).pipe(Effect.withSpan("SessionLog.flush", { attributes: { "harness.session.id": id }, captureStackTrace: false }))

  const reads = new LogReads({ id, store: reader, shared, flush, faults, observed, prefix: prefixHistory })
  const close = lease === "read-only"
    ? Effect.void
    : Effect.ensuring(flush(), lease.release).pipe(
      Effect.withSpan("SessionLog.close", { attributes: { "harness.session.id": id }, captureStackTrace: false })
    )
  return Object.assign(
    reads,
    {
      id,
      // The appended event is the validated copy of `input` with `seq` and `time` added, so its `type` is
      // `input.type`; TypeScript cannot see that through the union, hence the cast.
      append: <E extends SessionEvent.SessionEventInput>(input: E) =>
        Effect.map(appendBatch([input], false), (events) => events[0]!) as Effect.Effect<
          Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>,
          SessionLogError
        >,
      appendAll: (inputs) => appendBatch(inputs, false),
      appendTrusted: (inputs) => appendBatch(inputs, true),
      lock,
      appendHeld: (inputs, options) => {
        const held = appendLocked(inputs, options?.trusted === true)
        return background === undefined ? held : Effect.zipRight(background.awaitRoom, held)
      },
      commitMode: settings.mode,
      durable: store.volatile !== true,
      recordInbox,
      pendingInbox,
      hasMessage,
      close
    } satisfies Omit<Service, keyof LogReads>
  )
})

/**
 * The log's effects and streams, built each time they are read: getters on one prototype, so an idle log holds none
 * of them (ADR 0040; its subscriptions and streams are made only when used, ADR 0023). The operations stay the
 * object's own closures: a destructured log works, and a destructured read is read while destructuring.
 */
class LogReads implements
  Pick<
    Service,
    "flush" | "cursors" | "faults" | "subscribeFaults" | "events" | "state" | "history" | "subscribe" | "changes"
  >
{
  readonly #id: Ids.SessionId
  readonly #store: Store
  readonly #shared: Ref.Ref<Shared>
  readonly #flush: () => Effect.Effect<void, SessionLogError>
  /** The write-behind writer's faults; a write-through log has none. */
  readonly #faults: PubSub.PubSub<SessionStoreError> | undefined
  /** The subscribers' PubSub, made by the first of them. */
  readonly #observed: Effect.Effect<PubSub.PubSub<SessionEvent.SessionEvent>>
  /** The history of the events a snapshot left to the store, if any. */
  readonly #prefix: Effect.Effect<History> | undefined
  constructor(parts: {
    readonly id: Ids.SessionId
    readonly store: Store
    readonly shared: Ref.Ref<Shared>
    readonly flush: () => Effect.Effect<void, SessionLogError>
    readonly faults: PubSub.PubSub<SessionStoreError> | undefined
    readonly observed: Effect.Effect<PubSub.PubSub<SessionEvent.SessionEvent>>
    readonly prefix: Effect.Effect<History> | undefined
  }) {
    this.#id = parts.id
    this.#store = parts.store
    this.#shared = parts.shared
    this.#flush = parts.flush
    this.#faults = parts.faults
    this.#observed = parts.observed
    this.#prefix = parts.prefix
  }
  get flush() {
    return this.#flush()
  }
  get cursors() {
    return Effect.map(Ref.get(this.#shared), (s): Cursors => ({
      appended: s.data.state.nextSeq,
      durable: s.writer.durable
    }))
  }
  get faults(): Stream.Stream<SessionStoreError> {
    return this.#faults === undefined ? Stream.never : Stream.fromPubSub(this.#faults)
  }
  // A write-through log never reports one: its subscribers get a queue nothing is offered to.
  get subscribeFaults() {
    return this.#faults === undefined
      ? Effect.flatMap(PubSub.unbounded<SessionStoreError>(), PubSub.subscribe)
      : PubSub.subscribe(this.#faults)
  }
  get events() {
    const id = this.#id
    const store = this.#store
    const shared = this.#shared
    return Effect.flatMap(Ref.get(shared), (s) => {
      if (s.data.base === 0) return Effect.succeed(AppendOnly.slice(s.data.events, 0))
      // Read back once and kept (until the next snapshot drops them again): callers that read `events` often
      // (goal accounting) pay the store read once per snapshot, not per call.
      return Effect.flatMap(storedEvents(id, store, s.data.base), (older) => Ref.modify(shared, keepReadBack(older, s)))
    })
  }
  get state() {
    return Effect.map(Ref.get(this.#shared), (s) => s.data.state)
  }
  get history() {
    const shared = this.#shared
    return this.#prefix === undefined
      ? Effect.map(Ref.get(shared), (s) => s.data.history)
      : Effect.flatMap(
        this.#prefix,
        (prefix) => Effect.map(Ref.get(shared), (s) => history.concat(prefix, s.data.history))
      )
  }
  get subscribe() {
    return Effect.flatMap(this.#observed, PubSub.subscribe)
  }
  get changes() {
    return Stream.unwrap(Effect.map(this.#observed, (pubsub) => Stream.fromPubSub(pubsub)))
  }
}

/**
 * The whole log, `older` (read back from the store) then the events in memory; kept as the log's data when no append
 * or trim replaced it since `seen` was read (a concurrent one simply wins: the data stays consistent either way).
 */
const keepReadBack =
  (older: ReadonlyArray<SessionEvent.SessionEvent>, seen: Shared) =>
  (now: Shared): readonly [ReadonlyArray<SessionEvent.SessionEvent>, Shared] => {
    if (now.data.base !== seen.data.base) return [older.concat(AppendOnly.slice(seen.data.events, 0)), now]
    const events = older.concat(AppendOnly.slice(now.data.events, 0))
    return [events, { ...now, data: { ...now.data, events: AppendOnly.fromArray(events), base: 0 } }]
  }

const describeBatch = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.length === 1
    ? `${events[0]!.type} at seq ${events[0]!.seq}`
    : `${events.length} events at seqs ${events[0]!.seq}–${events.at(-1)!.seq}`

// ---------------------------------------------------------------------------------------------------------------
// make, open (with crash repair)
// ---------------------------------------------------------------------------------------------------------------

const defaultTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/**
 * A new log, in the span `SessionLog.make` when the program provided a tracer of its own — as the agent's spans are
 * made only then (ADR 0028). Every agent's creation runs this: with Effect's default tracer nobody reads the span,
 * and making it (and capturing its call site) was ≈ 15 % of the time to create an agent (ADR 0039).
 */
export const make = (options?: MakeOptions): Effect.Effect<Service, SessionLogError, SessionStore> =>
  Effect.tracerWith((tracer) =>
    tracer === defaultTracer
      ? makeLog(options)
      : Effect.withSpan(makeLog(options), "SessionLog.make", { captureStackTrace: false })
  )

const makeLog = Effect.fnUntraced(function*(options?: MakeOptions) {
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
  const lease = yield* leaseOf(store, id)
  const every = snapshotEveryOf(store, options?.commit)
  return yield* makeService(
    id,
    store,
    lease,
    initial,
    settingsOf(store, options?.commit),
    freshSnapshots(every, events.length)
  )
})

/** Takes the session's writer lease: `busy` (naming the holder) when another process writes it (ADR 0044). */
const leaseOf = (store: Store, id: Ids.SessionId) =>
  store.lease(id).pipe(Effect.mapError(storeError(`cannot write session ${JSON.stringify(id)}`)))

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
  /** The stored text of the last kept record. */
  readonly lastText: string | undefined
}

/** A scan from a snapshot (ADR 0022): the log at the snapshot, and the record the store must hold where it ends. */
interface ScanFrom {
  readonly data: LogData
  readonly kept: number
  readonly inbox: Map<string, StoreRecords.InboxAccepted>
  readonly position: number
  readonly text: string
}

/** A snapshot that does not agree with the stored records: `open` ignores it. */
class Disagrees {
  readonly _tag = "Disagrees"
  constructor(readonly what: string) {}
}

const fromSnapshot = (start: snapshot.Start): ScanFrom => ({
  data: { ...emptyData, base: start.seq + 1, state: start.state },
  kept: start.position + 1,
  inbox: new Map(start.inbox.map((r) => [r.message.id as string, r])),
  position: start.position,
  text: start.last
})

/**
 * Scans a stored session (R106): folds the records into the log until the first bad one, then only looks for a
 * later valid `turn/end` (which makes the bad record corruption instead of a torn tail). From a snapshot, it starts
 * at the snapshot's last record, which must be exactly the one the snapshot names (else `Disagrees`).
 */
const scan = (id: Ids.SessionId, store: Store, from?: ScanFrom): Effect.Effect<Scan, SessionLogError | Disagrees> =>
  Effect.suspend(() => {
    // A plain loop over each loaded chunk with one mutable accumulator: `Stream.runFold` recurses once per element
    // of a chunk (`foldChunkSplit`), which overflows the stack on a backend that loads big chunks (JSONL, W7).
    let acc: Scan = {
      data: from?.data ?? emptyData,
      kept: from?.kept ?? 0,
      bad: undefined,
      committedAfterBad: false,
      violation: undefined,
      inbox: from?.inbox ?? new Map(),
      lastText: from?.text
    }
    let check = from
    let disagrees: Disagrees | undefined
    const step = (record: StoredRecord): void => {
      if (check !== undefined) {
        if (record.position !== check.position || record.text !== check.text) {
          disagrees = new Disagrees(
            record.position !== check.position
              ? `the store holds no record at position ${check.position}`
              : `the record at position ${check.position} is not the one the snapshot covers`
          )
        }
        check = undefined
        return
      }
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
        trackPending(acc.inbox, value)
        acc = { ...acc, kept: acc.kept + 1, lastText: record.text }
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
      trackPending(acc.inbox, value)
      acc = { ...acc, data: advance(acc.data, value, checked.state), kept: acc.kept + 1, lastText: record.text }
    }
    return store.load(id, from === undefined ? undefined : { after: from.position - 1 }).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.suspend(() => {
          for (const record of chunk) {
            step(record)
            if (disagrees !== undefined) return Effect.fail(disagrees)
          }
          return Effect.void
        })
      ),
      Effect.mapError((error) =>
        error instanceof Disagrees ? error : storeError(`cannot load session ${JSON.stringify(id)}`)(error)
      ),
      Effect.flatMap(() =>
        check !== undefined
          ? Effect.fail(new Disagrees(`the store holds no record at position ${check.position}`))
          : Effect.succeed(acc)
      )
    )
  })

/** A snapshot's decoded head, and the store's reader of its body. */
interface Found {
  readonly start: snapshot.Start
  readonly body: Effect.Effect<Option.Option<string>, SessionStoreError>
}

/**
 * The session's snapshot as a starting point, if its head loads and decodes; otherwise none (the log is replayed).
 * Its body is not read here (ADR 0027).
 */
const startOf = (id: Ids.SessionId, store: Store): Effect.Effect<Found | undefined> =>
  store.loadSnapshot(id).pipe(
    Effect.map((found) => {
      if (found._tag === "None") return undefined
      const decoded = snapshot.decodeHead(found.value.head, found.value.seq, found.value.position)
      return Either.isRight(decoded) ? { start: decoded.right, body: found.value.body } : undefined
    }),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The history up to the snapshot `open` started from, read once when first needed: its body when it is there and
 * decodes as its head says, else derived from the stored events it covers (a snapshot is never trusted over the log).
 */
const prefixOf = (id: Ids.SessionId, store: Store, found: Found): Effect.Effect<Prefix> =>
  Effect.map(
    Effect.cached(
      found.body.pipe(
        Effect.map((body) =>
          Option.isSome(body) ? snapshot.decodeBody(body.value, found.start) : Either.left("its body is gone")
        ),
        Effect.orElseSucceed(() => Either.left("its body cannot be read")),
        Effect.flatMap((decoded) =>
          Either.isRight(decoded) ? Effect.succeed(decoded.right) : Effect.map(
            storedEvents(id, store, found.start.seq + 1),
            (events): snapshot.Body => {
              let folded = history.empty
              for (const event of events) folded = history.fold(folded, event)
              return { history: folded, historyText: snapshot.appendHistoryText("", events).text }
            }
          )
        )
      )
    ),
    (load): Prefix => ({ seq: found.start.seq, messages: found.start.messages, load })
  )

/** The snapshot bookkeeping an opened log starts with: fresh, or from the snapshot `open` started from. */
const snapshotStart = (
  id: Ids.SessionId,
  store: Store,
  every: number,
  records: number,
  pending: ReadonlyArray<StoreRecords.InboxAccepted>,
  used: Found | undefined
): Effect.Effect<SnapshotStart> =>
  used === undefined
    ? Effect.succeed({ ...freshSnapshots(every, records), pending })
    : Effect.map(prefixOf(id, store, used), (prefix): SnapshotStart => ({
      every,
      records,
      pending,
      lastSeq: used.start.seq,
      historyText: undefined,
      historyMessages: used.start.messages,
      prefix
    }))

export const open = Effect.fn("SessionLog.open")(function*(id: Ids.SessionId, options?: OpenOptions) {
  const reader = yield* SessionStore
  const readOnly = options?.readOnly === true
  // The lease comes first: the scan, the repair and every later write happen under it, so nothing another writer
  // commits is read half or cut (ADR 0044). A read-only log takes none, and repairs nothing.
  const lease = readOnly ? "read-only" : yield* leaseOf(reader, id)
  const opened = openLeased(id, reader, lease, options)
  return yield* lease === "read-only" ? opened : Effect.tapErrorCause(opened, () => lease.release)
})

const openLeased = Effect.fnUntraced(function*(
  id: Ids.SessionId,
  reader: Store,
  lease: Lease | "read-only",
  options: OpenOptions | undefined
) {
  const readOnly = lease === "read-only"
  const store = writerStore(reader, lease)
  const every = snapshotEveryOf(store, options?.commit)
  // From the latest snapshot when it agrees with the log; a snapshot is never trusted over the log, so a snapshot
  // scan that fails in any way (disagreement, corruption, a broken rule) is redone from the start (ADR 0022).
  const start = yield* startOf(id, store)
  const attempt = start === undefined ? undefined : yield* Effect.either(scan(id, store, fromSnapshot(start.start)))
  const fromStart = attempt !== undefined && Either.isRight(attempt) && attempt.right.violation === undefined &&
      !(attempt.right.bad !== undefined && attempt.right.committedAfterBad)
    ? attempt.right
    : undefined
  const used = fromStart === undefined ? undefined : start
  const found = fromStart ?? (yield* Effect.catchIf(
    scan(id, store),
    (error): error is Disagrees => error instanceof Disagrees,
    (error) => Effect.die(error)
  ))
  if (found.violation !== undefined) return yield* found.violation
  if (readOnly) {
    if (found.bad !== undefined && found.committedAfterBad) {
      return yield* corrupt(id, found.bad.position, found.bad.what)
    }
    // As stored, up to a torn tail (not cut: a writer may be committing it right now).
    const pending = [...found.inbox.values()]
    const snapshots = yield* snapshotStart(id, store, 0, found.kept, pending, used)
    return yield* makeService(id, reader, lease, found.data, settingsOf(store, options?.commit), snapshots, pending)
  }
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
    const time = AppendOnly.last(data.events)?.time ?? 0
    const events: Array<SessionEvent.SessionEvent> = []
    for (const input of repair) {
      // Built here from the log's own state: typed, so the copy is trusted; `step` still checks the rules.
      const event = stamp(input, data.state.nextSeq, time)
      const checked = logCheck.step(data.state, event)
      if ("violation" in checked) return yield* corrupt(id, found.kept, `repair failed: ${checked.violation.message}`)
      events.push(event)
      data = advance(data, event, checked.state)
    }
    yield* store.append(id, { events, inbox: [] }, { sync: true }).pipe(
      Effect.mapError(storeError(`cannot write the repair of session ${JSON.stringify(id)}`))
    )
  }
  const records = found.kept + repair.length
  const lastText = repair.length > 0 ? JSON.stringify(AppendOnly.last(data.events)) : found.lastText
  const pending = [...found.inbox.values()]
  let snapshots = yield* snapshotStart(id, store, every, records, pending, used)
  // A long replay is paid once: when `open` folded at least `every` events past the last snapshot, it takes one
  // where the log now ends (no turn is open after repair).
  const end = data.state.nextSeq - 1
  if (
    lastText !== undefined && data.state.openTurn === undefined && snapshotDue(every, snapshots.lastSeq, end) &&
    data.base === snapshots.lastSeq + 1
  ) {
    // From a snapshot, its history is read now: the new snapshot extends it.
    const prefix = snapshots.prefix
    const loaded = prefix === undefined ? undefined : yield* Effect.option(Effect.sandbox(prefix.load))
    const base = loaded === undefined ? undefined : Option.getOrUndefined(loaded)
    const prefixMessages = base?.history.length ?? 0
    const added = snapshot.appendHistoryText(
      base?.historyText ?? snapshots.historyText ?? "",
      AppendOnly.slice(data.events, 0)
    )
    const messages = prefixMessages + added.added
    if ((prefix === undefined || base !== undefined) && messages === prefixMessages + data.history.length) {
      const { body, head } = snapshot.encode({
        seq: end,
        position: records - 1,
        last: lastText,
        state: data.state,
        inbox: pending,
        messages,
        historyText: added.text
      })
      const saved = yield* Effect.either(store.saveSnapshot(id, { seq: end, position: records - 1, head, body }))
      if (Either.isRight(saved)) {
        snapshots = {
          ...snapshots,
          lastSeq: end,
          historyText: added.text,
          historyMessages: messages,
          prefix: prefix === undefined ? undefined : { ...prefix, messages: prefixMessages }
        }
        if (store.volatile !== true) data = { ...data, events: AppendOnly.empty(), base: end + 1 }
      }
    }
  }
  return yield* makeService(id, reader, lease, data, settingsOf(store, options?.commit), snapshots, pending)
})
