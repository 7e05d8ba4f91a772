/**
 * The log's commit state and the write-behind writer (ADR 0008): what is appended, written and synced (`Shared`,
 * one `Ref` per log), the commit settings, and the writer fiber of a write-behind log, which makes appended events
 * durable in order, one store commit per batch, retrying transient faults and reporting them, with back-pressure
 * and the waits the durability barrier uses.
 */
import type { Ids, SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Chunk, Effect, Either, PubSub, Ref, Schedule } from "effect"
import type { CommitMode, CommitOptions } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import type { Service as Store } from "../SessionStore.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import { busyError, type Checkpoint, type LogData } from "./logRecords.js"

/** Store failures a retry can cure; the others mean the store and the log disagree, and retrying cannot help. */
const isTransient = (error: SessionStoreError): boolean => error.reason === "Io" || error.reason === "Injected"

/** The default retry schedule of the writer: exponential from 10 ms, capped at 2 s between tries, forever. */
const defaultRetry: Schedule.Schedule<unknown, SessionStoreError> = Schedule.exponential("10 millis").pipe(
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

export interface Shared {
  readonly data: LogData
  readonly writer: Writer
}

export interface Settings {
  readonly mode: CommitMode
  readonly maxBatch: number
  readonly capacity: number
  readonly retry: Schedule.Schedule<unknown, SessionStoreError>
}

/** The snapshot bookkeeping run after each store commit of `inbox` then `events` (in commit order). */
export type AfterCommit = (
  inbox: ReadonlyArray<StoreRecords.InboxRecord>,
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  checkpoint: Checkpoint | undefined
) => Effect.Effect<void>

export const settingsOf = (store: Store, options: CommitOptions | undefined): Settings => ({
  mode: options?.mode ?? store.commitMode ?? "write-through",
  maxBatch: Math.max(1, options?.maxBatch ?? 1024),
  capacity: Math.max(1, options?.capacity ?? 16_384),
  retry: options?.retry ?? defaultRetry
})

/** The error every append and flush fails with once the writer stopped for good. */
export const brokenError = (id: Ids.SessionId, error: SessionStoreError) =>
  error.reason === "Busy"
    ? busyError(`session ${JSON.stringify(id)} stopped writing: another writer took it over: ${error.message}`, error)
    : new SessionLogError({
      reason: "store",
      message: `session ${
        JSON.stringify(id)
      } stopped writing: the store refused a commit and retrying cannot help: ${error.message} (${error.reason})`
    })

/** A write-behind log's writer: what starts it, and what waits for it. */
export interface WriterControl {
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
export const writerOf = (
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
