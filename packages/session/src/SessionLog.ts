/**
 * The append-only session log: the single source of truth for everything a model ever sees. Each append is
 * checked against the enclosure rules (R100) and JSON-losslessness, numbered (`seq` gap-free from 0), stamped
 * (`time` from `Clock`), committed to the `SessionStore` by one of two commit models (ADR 0008: write-through for
 * the memory store, write-behind group commit with durability barriers for durable stores), folded into the
 * derived history, and published to observers — or refused with a `SessionLogError` that leaves everything
 * unchanged. Opening a stored session repairs what a crash tore (R106).
 *
 * @since 0.0.0
 */
import type { Ids, SessionEvent, Store } from "@harness/domain"
import type { Queue, Schedule, Scope, Stream } from "effect"
import { Context, Effect, Layer } from "effect"
import type { History } from "./History.js"
import * as memoryStore from "./internal/memoryStore.js"
import * as opening from "./internal/openLog.js"
import * as internal from "./internal/sessionLog.js"
import * as section from "./internal/transaction.js"
import type { LogState } from "./LogCheck.js"
import type { SessionLogError } from "./SessionLogError.js"
import * as SessionStore from "./SessionStore.js"
import type { SessionStoreError } from "./SessionStoreError.js"

export {
  /**
   * A refused append, seed or load (defined in its own module so the implementation can construct it without
   * importing this one).
   *
   * @since 0.0.0
   * @category errors
   */
  SessionLogError
} from "./SessionLogError.js"

/**
 * One session's log.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  readonly id: Ids.SessionId
  /**
   * Appends one event and returns the appended envelope (`appendAll` of one event).
   *
   * Contract: appends are serialised (one at a time, under a one-permit lock). `seq` is the previous one plus 1,
   * `time` is `Clock.currentTimeMillis`. Before anything changes the event is validated and copied (so later
   * mutation of `input` changes nothing; a schema or JSON-losslessness failure is `invalid-event`) and checked
   * against the enclosure rules (`reason` = the `LogCheck.Rule` it breaks). Then, by {@link commitMode}:
   * - `write-through`: the event is written to the store inline (a driver failure is `store`, and nothing
   *   changes); only then do the events, the state and the history change and observers see it. From the store
   *   write on the append is uninterruptible, so memory never disagrees with the store.
   * - `write-behind`: the events, the state and the history change and observers see it at once; the writer
   *   fiber makes it durable later, in order, in one store commit per batch ({@link flush} waits for that). A
   *   store fault is retried and reported on {@link faults}, never failing the append; when `capacity` events
   *   are appended but not yet durable, `append` waits (interruptibly, before taking the lock) for the writer:
   *   back-pressure, never an unbounded buffer. After a failure retrying cannot cure (`Conflict`, `NotFound`,
   *   `Corrupt`) every append and flush fails with `store`.
   * Any refusal fails with `SessionLogError` (with the refused `seq`, except for `store`) and changes nothing, and
   * the next append gets the same `seq`. Cost per append does not grow with the log.
   */
  readonly append: <E extends SessionEvent.SessionEventInput>(
    input: E
  ) => Effect.Effect<Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>, SessionLogError>
  /**
   * Appends several events as one unit: one lock, one validation pass, one store commit (write-through) or one
   * enqueue (write-behind), one publication.
   *
   * Contract: all or nothing — if any event is refused (its `seq` is in the error), none is appended. The events
   * are checked in order against the state the earlier ones leave, so closers computed by `Closers.close` can be
   * appended in one call. Otherwise as {@link append}.
   */
  readonly appendAll: (
    inputs: ReadonlyArray<SessionEvent.SessionEventInput>
  ) => Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError>
  /**
   * {@link appendAll} for events the caller built itself, in typed code, from values that were validated where
   * they entered the process (ADR 0023): the agent's own `turn/*` and `step/*` records, messages it accepted
   * through `send` (decoded and frozen there), stream chunks it normalised with its JSON-lossless copy.
   *
   * Contract: as {@link appendAll} — serialised, numbered, stamped, checked against the enclosure rules, committed
   * and published all or nothing — except that the schema validation and its deep copy are skipped: the event is the
   * input plus `seq` and `time` (a shallow copy), so the caller must not mutate what it passed. Anything from
   * outside (a seed, a store, the wire, a hook's or a tool's output, a user's call) goes through {@link append} or
   * {@link appendAll}, which refuse an invalid event with `invalid-event`.
   */
  readonly appendTrusted: (
    inputs: ReadonlyArray<SessionEvent.SessionEventInput>
  ) => Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError>
  /**
   * Runs `body` as one transaction of the log (ADR 0051): inside it, `tx` appends — {@link Transaction.append},
   * {@link Transaction.appendAll}, {@link Transaction.appendTrusted} — and no other writer of the log appends,
   * flushes or runs a transaction until it ends. A writer whose own state must change atomically with its appends
   * (the agent's acceptance window, ADR 0028) runs its critical sections as transactions: its state and the log change
   * together, one permit per section.
   *
   * Contract:
   * - Exclusive and ordered: transactions and appends of the log run one at a time, in the order they get the log's
   *   writer permit; `body` and everything it appends are one unit for every other writer and for the log's order.
   * - Uninterruptible, the wait for the permit included: once started, `body` runs to its end (so keep it short and
   *   free of waits on anything but other transactions; a write-behind append inside may wait for the writer's room).
   * - Not rolled back: each `tx` append commits as it runs, exactly as a plain append would (validated, checked,
   *   written through or handed to the writer, published); a later failure of `body` fails the transaction and keeps
   *   what was appended. A refused `tx` append changes nothing, and `body` may go on.
   * - `tx` works only while the transaction runs: an append through it after `body` ended is a defect. Inside
   *   `body`, the log's own {@link append}, {@link appendAll}, {@link appendTrusted}, {@link flush} and `transaction`
   *   wait for the transaction that is running — forever: append through `tx`. Reads ({@link state},
   *   {@link history}, {@link events}, {@link cursors}) take no permit and see every `tx` append made so far.
   * - `body` is called, and a fresh `tx` made, each time the returned effect runs.
   */
  readonly transaction: <A, E, R>(body: (tx: Transaction) => Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The durability barrier: resolves once every event appended before the call is written to the store and made
   * durable against power loss (`sync`).
   *
   * Contract: events appended after the call may or may not be covered. With `write-behind` the batches written
   * while a flush waits are synced, and a flush that finds everything written but unsynced asks the store for a
   * sync; transient store faults delay it (they are retried), a failure retrying cannot cure fails it with `store`.
   * Interruptible: interrupting a flush abandons the wait, never the writes (a write-through flush's own store
   * write, made holding the lock, runs to its end and is accounted for before the interruption takes effect).
   */
  readonly flush: Effect.Effect<void, SessionLogError>
  /**
   * Flushes, then gives the session's writer lease up (ADR 0044): another process may then write the session.
   *
   * Contract: the lease is released even when the flush fails; afterwards every write of this log fails with
   * `busy`. A log that is never closed keeps its lease until its process ends (then the next writer takes it over).
   * A no-op on a log opened read-only.
   */
  readonly close: Effect.Effect<void, SessionLogError>
  /**
   * `appended`: the `seq` the next event gets (every event below it is in memory and was published); `durable`:
   * every event below it is written to the store. Equal under `write-through`.
   */
  readonly cursors: Effect.Effect<Cursors>
  /** The commit model this log runs (ADR 0008). */
  readonly commitMode: CommitMode
  /**
   * Whether the log's store outlives the process (every store but the memory store). The agent places its
   * acceptance barrier (a {@link flush} before `send` returns) only on durable logs (ADR 0017).
   */
  readonly durable: boolean
  /**
   * Records durable inbox records (ADR 0017): `inbox/accepted` when a message is accepted into the inbox,
   * `inbox/settled` when it leaves it without reaching the log (discarded, withdrawn, dropped by its admission).
   *
   * Contract: validated (`invalid-event` naming the record, and nothing changes) and stamped with `Clock` time;
   * then they ride with the next store commit, in order and before that commit's events (write-through: the next
   * append or {@link flush}; write-behind: the writer's next batch). They never change the events, the state or
   * the history. {@link flush} makes them durable. Cheap: no store round trip of its own. `trusted`: records the
   * caller built itself from decoded values (the agent's, from accepted messages) skip the schema pass, as
   * {@link appendTrusted} does for events (ADR 0023); the caller must hand over what the schema accepts.
   */
  readonly recordInbox: (
    records: ReadonlyArray<InboxRecordInput>,
    options?: { readonly trusted?: boolean }
  ) => Effect.Effect<void, SessionLogError>
  /**
   * The inbox `open` found (ADR 0017): every `inbox/accepted` record with no later `inbox/settled` for its id and
   * no event that logged its id (`user/message` or `steering/message` with that `messageId`), in acceptance order.
   * Empty for a session made by {@link make}.
   */
  readonly pendingInbox: ReadonlyArray<Store.InboxAccepted>
  /**
   * Whether `messageId` was ever accepted in this session: an `inbox/accepted` record or a logged message with that
   * id, whether still in memory waiting for the store or stored (answered from the store's index, never a scan).
   */
  readonly hasMessage: (messageId: Ids.AgentMessageId) => Effect.Effect<boolean, SessionLogError>
  /**
   * Every inbox record of the session in commit order: the stored ones, then those recorded but not yet written
   * (ADR 0050). What a receipt is computed from, with {@link events}; it reads the store, so it is for occasional
   * questions, not for every send.
   *
   * Contract: a record may appear twice when a commit lands during the read, never not at all.
   */
  readonly inboxRecords: Effect.Effect<ReadonlyArray<Store.InboxRecord>, SessionLogError>
  /**
   * The pending approvals (ADR 0054): every `approval/requested` record, stored or recorded, with no
   * `approval/answered` for its call, in request order — what a resumed agent restores (R167).
   *
   * Contract (R237): kept as the log opens and records, never by reading the store, except on a log opened from a
   * snapshot whose head does not list them (written before heads did): that one folds {@link inboxRecords}.
   */
  readonly pendingApprovals: Effect.Effect<ReadonlyArray<Store.ApprovalRequested>, SessionLogError>
  /**
   * Store faults the write-behind writer met, each reported once per failed attempt, in order; subscribes when
   * run. The writer retries them with the log's `retry` schedule and never reorders or drops an event. (With
   * `write-through` a fault fails the append itself and is not reported here.)
   */
  readonly faults: Stream.Stream<SessionStoreError>
  /** Subscribes to {@link faults}: subscribed when it returns (so no fault after it is missed), until the scope ends. */
  readonly subscribeFaults: Effect.Effect<Queue.Dequeue<SessionStoreError>, never, Scope.Scope>
  /**
   * Every event, seeded ones included, in `seq` order. Do not mutate the array.
   *
   * Contract: memory holds the events after the last snapshot (ADR 0022); older ones are read from the store when
   * this runs (a store that fails then is a defect) and kept until the next snapshot drops them again. Cheap when
   * nothing was dropped from memory.
   */
  readonly events: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>>
  /**
   * The events of the last turn: from the last `turn/start` on (every event after it included), empty when the log
   * has no turn. Do not mutate the array.
   *
   * Contract (R227): reads the store only for the part of that turn a snapshot dropped from memory, from the record
   * the snapshot names, never the whole session; a log opened from a snapshot written before snapshots named that
   * record reads the session back as {@link events} does (a store that fails then is a defect).
   */
  readonly lastTurn: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>>
  /**
   * The enclosure state after the last event: open turn and step, last turn number, last request header, and the
   * tool calls of the open step still owed a result (`owed`).
   */
  readonly state: Effect.Effect<LogState>
  /**
   * The derived model history after the last event, kept current per append (never rebuilt from the log). A log
   * opened from a snapshot decodes the snapshot's part of the history on the first read (once).
   */
  readonly history: Effect.Effect<History>
  /**
   * Subscribes to appended events. Contract: subscribed when it returns (so "subscribe, then append" misses
   * nothing); unbounded (a slow observer never blocks an append, which may run inside a transaction); events
   * arrive in `seq` order, each once it is committed to the log (written to the store under `write-through`;
   * appended in memory under `write-behind`, see {@link cursors}); refused appends are never seen. The
   * subscription ends with the scope.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<SessionEvent.SessionEvent>, never, Scope.Scope>
  /** The appended events as a stream; subscribes when run. */
  readonly changes: Stream.Stream<SessionEvent.SessionEvent>
}

/**
 * The appends of one {@link Service.transaction}, available only while it runs: the log's {@link Service.append},
 * {@link Service.appendAll} and {@link Service.appendTrusted}, made inside the section the transaction holds.
 *
 * @since 0.0.0
 * @category models
 */
export type Transaction = Pick<Service, "append" | "appendAll" | "appendTrusted">

/**
 * The tag of the current session's log.
 *
 * @since 0.0.0
 * @category services
 */
export class SessionLog extends Context.Tag("@harness/session/SessionLog")<SessionLog, Service>() {}

/**
 * An inbox record as a caller hands it to {@link Service.recordInbox}: the log stamps `time`.
 *
 * @since 0.0.0
 * @category models
 */
export type InboxRecordInput =
  | Omit<Store.InboxAccepted, "time">
  | Omit<Store.InboxSettled, "time">
  | Omit<Store.InboxRevised, "time">
  | Omit<Store.ApprovalRequested, "time">
  | Omit<Store.ApprovalAnswered, "time">

/**
 * How a log commits to its store (ADR 0008).
 *
 * @since 0.0.0
 * @category models
 */
export type CommitMode = "write-through" | "write-behind"

/**
 * The log's cursors (see {@link Service.cursors}).
 *
 * @since 0.0.0
 * @category models
 */
export interface Cursors {
  readonly appended: number
  readonly durable: number
}

/**
 * How a log commits.
 *
 * - `mode`: the commit model (default: the store's `commitMode`, else `write-through`).
 * - `maxBatch`: the most events the writer puts in one store commit (default 1024).
 * - `capacity`: how many events may be appended but not yet durable before `append` waits (default 16 384).
 * - `retry`: the schedule transient store faults are retried with (default: exponential from 10 ms, at most 2 s
 *   apart, forever: an event is never dropped).
 * - `snapshotEvery`: the least number of events between two snapshots (ADR 0022): the log saves one after a store
 *   commit that holds a `turn/end` once that many events (and at least an eighth of what the last snapshot
 *   covered) were committed since the last one, and `open` saves one after replaying that many. Default 10 000 on
 *   a durable store; none on a volatile one (the memory store) unless given; 0 turns snapshots off.
 *
 * @since 0.0.0
 * @category models
 */
export interface CommitOptions {
  readonly mode?: CommitMode | undefined
  readonly maxBatch?: number | undefined
  readonly capacity?: number | undefined
  readonly retry?: Schedule.Schedule<unknown, SessionStoreError> | undefined
  readonly snapshotEvery?: number | undefined
}

/**
 * Options of {@link make}.
 *
 * @since 0.0.0
 * @category models
 */
export interface MakeOptions {
  /** The session id; a random UUID when absent. */
  readonly id?: Ids.SessionId | undefined
  /**
   * An existing log to continue (fork, resume). Contract: it must be gap-free from seq 0, pass `checkLog` and be
   * balanced (no open turn), else `invalid-seed`. It is written to the store as the new session's first rows.
   */
  readonly seed?: ReadonlyArray<SessionEvent.SessionEvent> | undefined
  /** The session's parent, written in its header (a fork, R112). */
  readonly parent?: Store.SessionParent | undefined
  /** The session's title, written in its header. */
  readonly title?: string | undefined
  /** How the log commits. */
  readonly commit?: CommitOptions | undefined
}

/**
 * Options of {@link open}.
 *
 * @since 0.0.0
 * @category models
 */
export interface OpenOptions {
  /** How the log commits. */
  readonly commit?: CommitOptions | undefined
  /**
   * Opens the session to read it only (`sessions show`, `export`, `fork`'s parent): no lease is taken, nothing is
   * repaired or cut (a torn tail is left out, an open turn stays open), and every write fails with `store`. It
   * never disturbs the session's writer. Default `false`.
   */
  readonly readOnly?: boolean | undefined
}

/**
 * Creates a new session in the store (optionally seeded): validates the seed (`invalid-seed`, before anything is
 * stored), creates the session (`store` if the id already exists) and writes the seed rows in one append, then
 * takes its writer lease (ADR 0044; {@link Service.close} gives it up).
 *
 * @example
 * ```ts
 * import { SessionLog, SessionStore } from "@harness/session"
 * import { Effect } from "effect"
 *
 * // A new session in a memory store; `events` is what was appended so far (nothing yet).
 * const program = Effect.gen(function*() {
 *   const log = yield* SessionLog.make({ title: "scratch" })
 *   return yield* log.events
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.0.0
 * @category constructors
 */
export const make: (options?: MakeOptions) => Effect.Effect<Service, SessionLogError, SessionStore.SessionStore> =
  internal.make

/**
 * Opens a stored session, repairs what a crash tore (R106), and continues it.
 *
 * Contract: first the session's writer lease is taken (ADR 0044): when another live process writes the session,
 * `open` fails at once with `busy`, naming the holder, and reads nothing; a holder that is gone is taken over. The
 * scan, the repair and every later write happen under the lease, so a repair only ever cuts what no live writer
 * is committing; {@link Service.close} gives the lease up. With `readOnly`, no lease is taken and nothing is
 * repaired or cut (see {@link OpenOptions}).
 *
 * The stored records are scanned in order (streamed). The last valid
 * `turn/end` marks the committed region:
 * - a record that does not decode, or an event out of `seq` order, before it is corruption: `corrupt`, naming
 *   the session, the stored record's position and what is wrong, and nothing is changed;
 * - the first such record after it starts a torn tail: that record and everything after it are discarded and
 *   physically truncated (`SessionStore.truncate`);
 * - a decoded event that breaks an enclosure rule is `corrupt` wherever it is (a crash cannot produce it);
 * - inbox records are folded into {@link Service.pendingInbox} (accepted, neither settled nor logged);
 * - a log that then ends inside a turn is closed by `Closers.repair` (`TOOL_OUTCOME_UNKNOWN` for a recorded call
 *   without a result, `TOOL_NOT_STARTED` for an unrecorded one, `step/end`, `turn/end { interrupted }`), with
 *   `seq`s continuing the log and the last real event's `time`, written in one synced commit before `open`
 *   returns. A `user/message` after the last `turn/end` is committed history, not a tail.
 *
 * From a snapshot (ADR 0022): when the store holds one that decodes and agrees with the log (the record it ends at
 * is exactly the one it names), the scan starts after it, from its state and pending inbox, and everything above
 * applies to the records after it (its pending approvals too, when its head lists them, R237); a snapshot that does
 * not decode or agree, or a scan from it that finds corruption or a broken rule, is ignored and the whole log is
 * replayed instead. After replaying at least
 * `commit.snapshotEvery` events, `open` saves a snapshot where the log now ends.
 *
 * @since 0.0.0
 * @category constructors
 */
export const open: (
  id: Ids.SessionId,
  options?: OpenOptions
) => Effect.Effect<Service, SessionLogError, SessionStore.SessionStore> = opening.open

/**
 * A new session over its own fresh memory store: the default of every agent.
 *
 * @since 0.0.0
 * @category constructors
 */
export const memory = (options?: MakeOptions): Effect.Effect<Service, SessionLogError> =>
  // A store of the log's own (nobody else sees it): its operations on a prototype, not closures of its own (ADR 0076).
  Effect.provideServiceEffect(make(options), SessionStore.SessionStore, memoryStore.makeOwnMemory)

/**
 * A layer providing a new memory session.
 *
 * @since 0.0.0
 * @category layers
 */
export const layerMemory = (options?: MakeOptions): Layer.Layer<SessionLog, SessionLogError> =>
  Layer.effect(SessionLog, memory(options))

/**
 * Runs `effect` holding one permit of `semaphore`, released on every exit; uninterruptible, the wait for the permit
 * included (a plain `withPermits` interrupted as the permit is handed over leaks it). The log's own transactions
 * take their permit this way; it serves any semaphore a writer keeps beside the log (the goal package's).
 *
 * @since 0.0.0
 * @category utils
 */
export const holding: <A, E, R>(semaphore: Effect.Semaphore, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> =
  section.holding
