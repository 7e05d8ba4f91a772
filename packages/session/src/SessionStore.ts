/**
 * The storage driver behind every session: the contract every backend keeps (memory here; SQLite, JSONL and
 * PostgreSQL in `@harness/store-*`), the memory backend, and a fault injector for tests that must prove a refused
 * append leaves everything consistent.
 *
 * A session is stored as a header and one ordered stream of records: the log's events and the durable inbox's
 * records, in commit order. A backend JSON-encodes records with `JSON.stringify` (their schemas have no
 * transformations, so that is their encoding) and hands them back as the text it stored: disk is untrusted, and
 * the session decodes with Schema.
 *
 * Every backend runs the exported conformance suite (`@harness/session/test/conformance`).
 *
 * @since 0.0.0
 */
import type { Ids, SessionEvent, Store } from "@harness/domain"
import { Context, Effect, Layer, type Option, type Stream } from "effect"
import * as internal from "./internal/memoryStore.js"

/**
 * What one `append` writes: events (contiguous with the stored events) and inbox records.
 *
 * Contract: a commit is stored all or nothing; its inbox records are stored first, then its events, each in
 * array order.
 *
 * @since 0.0.0
 * @category models
 */
export interface Commit {
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  readonly inbox: ReadonlyArray<Store.InboxRecord>
}

/**
 * One stored record (an event or an inbox record) as `load` returns it.
 *
 * Contract: `position` is the record's index in the session's record stream (0 for the first record, then 1, 2, …
 * with no gaps), so a caller knows the position of every record it committed; `text` is exactly what the backend
 * stored (`JSON.stringify` of the record when it was written; the memory store, which keeps the record itself,
 * encodes it when it is read), so a corrupt record reaches the caller, who decodes.
 *
 * @since 0.0.0
 * @category models
 */
export interface StoredRecord {
  readonly position: number
  readonly text: string
}

/**
 * A snapshot of a session as the session saves it: `seq` of the last event it covers, `position` of the last
 * record it covers, a small `head` and a `body` (both the session's own encoding). The head is what `open` reads;
 * the body (a long session's history) is read later, when it is needed (ADR 0027).
 *
 * @since 0.0.0
 * @category models
 */
export interface Snapshot {
  readonly seq: number
  readonly position: number
  readonly head: string
  readonly body: string
}

/**
 * A saved snapshot as `loadSnapshot` returns it: its `seq`, `position` and `head`, and `body`, which reads its
 * body when run (ADR 0027).
 *
 * Contract: loading a snapshot never reads its body. `body` yields exactly the body saved with this head while the
 * store still holds this snapshot, and `Option.none()` once it does not (replaced by a later save, dropped by
 * `truncate` or `remove`, or its body missing or not the one saved with this head): never another snapshot's body.
 *
 * @since 0.0.0
 * @category models
 */
export interface SnapshotHead {
  readonly seq: number
  readonly position: number
  readonly head: string
  readonly body: Effect.Effect<Option.Option<string>, SessionStoreError>
}

/**
 * Options of `append`. `sync: true` makes the commit durable against power loss too (an `fsync`, or SQLite's
 * `synchronous = FULL`); the log passes it at its durability barriers.
 *
 * @since 0.0.0
 * @category models
 */
export interface AppendOptions {
  readonly sync?: boolean
  /** The writer lease the append is made under (see {@link WriteOptions}). */
  readonly lease?: Lease | undefined
}

/**
 * Options of the writes `truncate` and `saveSnapshot`: `lease`, the writer lease the write is made under.
 *
 * Contract (the fence, ADR 0044): while a session is leased, a write that does not carry its current lease fails
 * with `Busy` and stores nothing — a write without a lease, and a write under a lease that was taken over since.
 * A session nobody leases accepts writes without one.
 *
 * @since 0.0.0
 * @category models
 */
export interface WriteOptions {
  readonly lease?: Lease | undefined
}

/**
 * A session's writer lease, as `lease` returns it: the session, the fencing `token` (greater than every earlier
 * lease's of the session in this store), the `holder` (this process) and `release`.
 *
 * @since 0.0.0
 * @category models
 */
export interface Lease {
  readonly id: Ids.SessionId
  readonly token: number
  readonly holder: Store.LeaseHolder
  /**
   * Gives the lease up, if it is still this one (a lease taken over since is left alone). Afterwards writes under
   * it fail with `Busy`. Never fails: a lease that cannot be given up expires.
   */
  readonly release: Effect.Effect<void>
}

/**
 * Options of `load`. `after`: only records whose position is greater (absent: every record).
 *
 * @since 0.0.0
 * @category models
 */
export interface LoadOptions {
  readonly after?: number
}

import type { SessionStoreError } from "./SessionStoreError.js"

export {
  /**
   * A store failure, re-exported from `SessionStoreError` (defined there so backends can construct it).
   *
   * @since 0.0.0
   * @category errors
   */
  SessionStoreError,
  /**
   * The kinds of store failure, re-exported from `SessionStoreError`.
   *
   * @since 0.0.0
   * @category errors
   */
  SessionStoreErrorReason
} from "./SessionStoreError.js"

/**
 * The driver contract. Every operation on an unknown id fails with `NotFound`. Operations on one session are
 * atomic with respect to each other; a session has one writer at a time, enforced by the store: its writer lease
 * (`lease`) and the fence on every write (ADR 0044). Reads (`load`, `header`, `list`, `hasMessage`,
 * `loadSnapshot`) never write and never wait for a lease.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  /**
   * The commit model a `SessionLog` uses over this store unless told otherwise (ADR 0008): `write-through` (each
   * append is written inline, under the log's lock: cheap for the memory store) or `write-behind` (group commit by
   * a writer fiber, with durability barriers: the durable backends). Absent means `write-through`.
   */
  readonly commitMode?: "write-through" | "write-behind" | undefined
  /**
   * Whether the store keeps nothing beyond the process (the memory store). A log over a volatile store skips
   * nothing it must do for correctness, but callers may skip durability barriers that only matter for a crash
   * (the agent's acceptance barrier, ADR 0017). Absent means durable.
   */
  readonly volatile?: boolean | undefined
  /**
   * Creates a session with its header and, optionally, its first records (a seeded or forked session).
   *
   * Contract: atomic — afterwards the session exists with exactly the header and the commit, or (on failure) not
   * at all; `AlreadyExists` if `header.id` is stored; the commit's events must start at seq 0 (else `Conflict`).
   */
  readonly create: (header: Store.SessionHeader, commit?: Commit) => Effect.Effect<void, SessionStoreError>
  /**
   * Appends one commit.
   *
   * Contract: all or nothing; the commit's events are contiguous with the stored events (the first one's `seq`
   * is the number of stored events, each next one's one more), else `Conflict` and nothing is stored; its records
   * get the next positions, inbox records first. Success means written so that a crash of this process cannot
   * lose it; with `sync: true`, also durable against power loss. An empty commit stores nothing; with `sync: true`
   * it makes every commit stored so far durable against power loss (the barrier of a log whose writes already
   * went out unsynced).
   */
  readonly append: (
    id: Ids.SessionId,
    commit: Commit,
    options?: AppendOptions
  ) => Effect.Effect<void, SessionStoreError>
  /**
   * Optional capability: {@link append} as a plain function, for a store whose append does no I/O and never waits
   * (the memory store). A `SessionLog` over such a store commits inside its append's own synchronous step instead of
   * running an effect per commit (ADR 0037).
   *
   * Contract: `twin` is the very `append` function this is the twin of, and `run(id, commit, options)` does exactly
   * what that `append` does, synchronously: it returns the refusal, or `undefined` once committed. The log uses it
   * only while `twin === store.append`: a wrapper that replaces `append` (`{ ...store, append: mine }`: a fault
   * injector, a counting test store, a decorator) keeps the spread capability but no longer matches it, so its own
   * `append` is always called.
   */
  readonly inlineAppend?: InlineAppend | undefined
  /**
   * Every stored record whose position is greater than `options.after`, in position order.
   *
   * Contract: streamed — a backend never holds the whole session in memory to serve it; `NotFound` fails the
   * stream before its first element. Records committed while the stream runs may or may not be included.
   */
  readonly load: (id: Ids.SessionId, options?: LoadOptions) => Stream.Stream<StoredRecord, SessionStoreError>
  /**
   * The header the session was created with. Contract: `Corrupt` if the stored header does not decode.
   */
  readonly header: (id: Ids.SessionId) => Effect.Effect<Store.SessionHeader, SessionStoreError>
  /**
   * Physically drops the record at `position` and every record after it (a torn tail).
   *
   * Contract: afterwards the session holds exactly its first `position` records (a `position` at or past the
   * end drops nothing; a negative or fractional one is a `Conflict`); its summary and message ids follow, and a
   * snapshot covering a dropped record is dropped too. The next append continues after the kept records.
   */
  readonly truncate: (
    id: Ids.SessionId,
    position: number,
    options?: WriteOptions
  ) => Effect.Effect<void, SessionStoreError>
  /**
   * A summary of every stored session, in creation order.
   *
   * Contract: a session the store cannot read (a header that does not decode, a damaged file) is left out, never
   * failing the list; {@link damaged} names it. A failure of the backend itself is `Io`.
   */
  readonly list: Effect.Effect<ReadonlyArray<Store.SessionSummary>, SessionStoreError>
  /**
   * The stored sessions `list` leaves out because they cannot be read, each with its id and what is wrong.
   *
   * Contract: `remove` deletes such a session by that id.
   */
  readonly damaged: Effect.Effect<ReadonlyArray<Store.DamagedSession>, SessionStoreError>
  /**
   * Takes the session's writer lease (ADR 0044): from now on its writes are fenced (see {@link WriteOptions}) and
   * only writes under this lease are stored. The store keeps the lease alive while it is held (renewing it where
   * it expires) until `release`, or until this process ends.
   *
   * Contract: `NotFound` for an unknown id. A lease held by another live process fails at once with `Busy`, whose
   * `holder` names it — never a wait. A lease whose holder is gone (its process no longer runs on this host, or it
   * was not renewed within the store's lease time) is taken over. A lease held by this very process (an earlier
   * log of the session, through this store or another) is taken over too, and the earlier lease is fenced.
   */
  readonly lease: (id: Ids.SessionId) => Effect.Effect<Lease, SessionStoreError>
  /**
   * Deletes a session: its header, records and snapshot. Contract: afterwards its id is free for `create`; a
   * session leased by another live process is `Busy` (its lease is fenced like a write).
   */
  readonly remove: (id: Ids.SessionId, options?: WriteOptions) => Effect.Effect<void, SessionStoreError>
  /**
   * Whether `messageId` was accepted in this session: a stored `inbox/accepted` record with that message id, or
   * a stored `user/message` or `steering/message` with that `messageId` (see `Store.messageIdOf`).
   *
   * Contract: answered from an index (O(log n) or better per call after the backend has opened the session),
   * never by scanning the records.
   */
  readonly hasMessage: (id: Ids.SessionId, messageId: Ids.AgentMessageId) => Effect.Effect<boolean, SessionStoreError>
  /**
   * Saves the session's snapshot (head and body together), replacing the previous one.
   *
   * Contract: `position` must be a stored record's position and `seq` a whole number from 0, else `Conflict` (nothing
   * stored). A crash during a save leaves the previous snapshot or this one, never this head with another body (a
   * body that does not belong to the loaded head reads as `Option.none()`). A store may tell snapshots apart by
   * `seq`, `position` and `head`: a caller that saves two bodies under one head must not rely on a head loaded
   * before the second save reading `Option.none()` (a head the session log writes describes its body).
   */
  readonly saveSnapshot: (
    id: Ids.SessionId,
    snapshot: Snapshot,
    options?: WriteOptions
  ) => Effect.Effect<void, SessionStoreError>
  /**
   * The latest snapshot saved (and not dropped by `truncate`), if any: its head, and its body as an effect that
   * reads it. A snapshot stored in a format this store no longer writes is none (the session then replays its log).
   */
  readonly loadSnapshot: (id: Ids.SessionId) => Effect.Effect<Option.Option<SnapshotHead>, SessionStoreError>
}

/**
 * A store's `append` as a plain function (see {@link Service.inlineAppend}).
 *
 * @since 0.0.0
 * @category models
 */
export interface InlineAppend {
  /** The `append` function this one is the synchronous twin of. */
  readonly twin: Service["append"]
  /** Appends `commit`: the refusal, or `undefined` once committed. */
  readonly run: (id: Ids.SessionId, commit: Commit, options?: AppendOptions) => SessionStoreError | undefined
}

/**
 * The driver tag.
 *
 * @since 0.0.0
 * @category services
 */
export class SessionStore extends Context.Tag("@harness/session/SessionStore")<SessionStore, Service>() {}

/**
 * Makes chosen appends fail, for tests.
 *
 * @since 0.0.0
 * @category models
 */
export interface Faults {
  /**
   * From now on, every append whose commit matches `predicate` fails with `Injected` and stores nothing.
   * Replaces any earlier predicate.
   */
  readonly failWhen: (predicate: (commit: Commit, id: Ids.SessionId) => boolean) => Effect.Effect<void>
  /**
   * The next `count` appends fail with `Injected` (whatever their commits), then appends go through again.
   * Replaces any earlier count.
   */
  readonly failNext: (count: number) => Effect.Effect<void>
  /** Stops injecting failures (both kinds). */
  readonly clear: Effect.Effect<void>
}

/**
 * The fault-injector tag, provided by {@link layerMemoryWithFaults}.
 *
 * @since 0.0.0
 * @category services
 */
export class StoreFaults extends Context.Tag("@harness/session/StoreFaults")<StoreFaults, Faults>() {}

export {
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.addFigures`).
   *
   * @since 0.0.0
   * @category utils
   */
  addFigures,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.anyEvent`).
   *
   * @since 0.0.0
   * @category utils
   */
  anyEvent,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.CommitFigures`).
   *
   * @since 0.0.0
   * @category utils
   */
  type CommitFigures,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.commitRecords`).
   *
   * @since 0.0.0
   * @category utils
   */
  commitRecords,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.contiguityIssue`).
   *
   * @since 0.0.0
   * @category utils
   */
  contiguityIssue,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.encodeCommit`).
   *
   * @since 0.0.0
   * @category utils
   */
  encodeCommit,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.EncodedRecord`).
   *
   * @since 0.0.0
   * @category utils
   */
  type EncodedRecord,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.figuresOf`).
   *
   * @since 0.0.0
   * @category utils
   */
  figuresOf,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.positionIssue`).
   *
   * @since 0.0.0
   * @category utils
   */
  positionIssue,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.snapshotIssue`).
   *
   * @since 0.0.0
   * @category utils
   */
  snapshotIssue,
  /**
   * Re-exported from `StoreCodec` for backends (see `StoreCodec.summaryOf`).
   *
   * @since 0.0.0
   * @category utils
   */
  summaryOf
} from "./StoreCodec.js"

/**
 * A memory backend: one fresh, empty store.
 *
 * Contract: the conformance suite's backend semantics, with everything in memory: the store keeps the records it
 * is given (records are immutable values; a caller must not change one after appending it) and encodes each with
 * `JSON.stringify` when it is read, so `load` returns the text a durable backend would have written; `bytes`
 * counts the UTF-8 length of the header's and records' JSON texts, as the SQL backends do (measured when a
 * summary first asks); an append costs O(1) and copies nothing; `truncate` costs O(n).
 *
 * @since 0.0.0
 * @category constructors
 */
export const makeMemory: Effect.Effect<Service> = internal.makeMemory

/**
 * The memory backend as a layer (a fresh store each time the layer is built).
 *
 * @since 0.0.0
 * @category layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.effect(SessionStore, makeMemory)

/**
 * Wraps any driver so tests can make chosen appends fail.
 *
 * Contract: a failing append fails with `Injected` before the wrapped driver is called, so nothing is stored;
 * every other operation is the wrapped driver's.
 *
 * @since 0.0.0
 * @category constructors
 */
export const withFaults: (store: Service) => Effect.Effect<readonly [Service, Faults]> = internal.withFaults

/**
 * The memory backend with a fault injector.
 *
 * @since 0.0.0
 * @category layers
 */
export const layerMemoryWithFaults: Layer.Layer<SessionStore | StoreFaults> = Layer.effectContext(
  Effect.gen(function*() {
    const [store, faults] = yield* withFaults(yield* makeMemory)
    return Context.make(SessionStore, store).pipe(Context.add(StoreFaults, faults))
  })
)
