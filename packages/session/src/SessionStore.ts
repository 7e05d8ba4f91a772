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
import { Context, Effect, Layer, type Option, Schema, type Stream } from "effect"
import { Ids, type SessionEvent, Store } from "@harness/domain"
import * as internal from "./internal/memoryStore.js"

/**
 * What one `append` writes: events (contiguous with the stored events) and inbox records.
 *
 * Contract: a commit is stored all or nothing; its inbox records are stored first, then its events, each in
 * array order.
 *
 * @since 0.0.0
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
 * stored (`JSON.stringify` of the record when it was written), so a corrupt record reaches the caller, who decodes.
 *
 * @since 0.0.0
 */
export interface StoredRecord {
  readonly position: number
  readonly text: string
}

/**
 * A snapshot of a session, saved and loaded as the session decides: `seq` of the last event it covers,
 * `position` of the last record it covers, and `text` (the session's own encoding).
 *
 * @since 0.0.0
 */
export interface Snapshot {
  readonly seq: number
  readonly position: number
  readonly text: string
}

/**
 * Options of `append`. `sync: true` makes the commit durable against power loss too (an `fsync`, or SQLite's
 * `synchronous = FULL`); the log passes it at its durability barriers.
 *
 * @since 0.0.0
 */
export interface AppendOptions {
  readonly sync?: boolean
}

/**
 * Options of `load`. `after`: only records whose position is greater (absent: every record).
 *
 * @since 0.0.0
 */
export interface LoadOptions {
  readonly after?: number
}

/**
 * Why a store operation failed.
 *
 * - `NotFound`: no session with that id.
 * - `AlreadyExists`: `create` of an id that is stored.
 * - `Conflict`: the operation does not fit what is stored (an append whose events are not contiguous with the
 *   stored events, a position that is not a stored record's).
 * - `Io`: the backend failed (disk, connection, database).
 * - `Corrupt`: what the backend read back is not what it writes (a header that does not decode, a file that is not
 *   the store's format).
 * - `Injected`: a test's fault injector refused the operation.
 *
 * @since 0.0.0
 */
export const SessionStoreErrorReason = Schema.Literal("NotFound", "AlreadyExists", "Conflict", "Io", "Corrupt", "Injected")
/** @since 0.0.0 */
export type SessionStoreErrorReason = typeof SessionStoreErrorReason.Type

/**
 * A driver failure: `reason` says which, `message` says what happened, `id` names the session (absent only for
 * `list`).
 *
 * @since 0.0.0
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>("@harness/session/SessionStoreError")(
  "SessionStoreError",
  {
    reason: SessionStoreErrorReason,
    message: Schema.String,
    id: Schema.optionalWith(Ids.SessionId, { exact: true })
  }
) {}

/**
 * The driver contract. Every operation on an unknown id fails with `NotFound`. Operations on one session are
 * atomic with respect to each other; a session has one writer at a time (its log).
 *
 * @since 0.0.0
 */
export interface Service {
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
   * lose it; with `sync: true`, also durable against power loss. An empty commit stores nothing.
   */
  readonly append: (
    id: Ids.SessionId,
    commit: Commit,
    options?: AppendOptions
  ) => Effect.Effect<void, SessionStoreError>
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
  readonly truncate: (id: Ids.SessionId, position: number) => Effect.Effect<void, SessionStoreError>
  /**
   * A summary of every stored session, in creation order.
   */
  readonly list: Effect.Effect<ReadonlyArray<Store.SessionSummary>, SessionStoreError>
  /**
   * Deletes a session: its header, records and snapshot. Contract: afterwards its id is free for `create`.
   */
  readonly remove: (id: Ids.SessionId) => Effect.Effect<void, SessionStoreError>
  /**
   * Whether `messageId` was accepted in this session: a stored `inbox/accepted` record with that message id, or
   * a stored `user/message` or `steering/message` with that `messageId` (see `Store.messageIdOf`).
   *
   * Contract: answered from an index (O(log n) or better per call after the backend has opened the session),
   * never by scanning the records.
   */
  readonly hasMessage: (id: Ids.SessionId, messageId: Ids.AgentMessageId) => Effect.Effect<boolean, SessionStoreError>
  /**
   * Saves the session's snapshot, replacing the previous one.
   *
   * Contract: `position` must be a stored record's position, else `Conflict`.
   */
  readonly saveSnapshot: (id: Ids.SessionId, snapshot: Snapshot) => Effect.Effect<void, SessionStoreError>
  /**
   * The latest snapshot saved (and not dropped by `truncate`), if any.
   */
  readonly loadSnapshot: (id: Ids.SessionId) => Effect.Effect<Option.Option<Snapshot>, SessionStoreError>
}

/**
 * The driver tag.
 *
 * @since 0.0.0
 */
export class SessionStore extends Context.Tag("@harness/session/SessionStore")<SessionStore, Service>() {}

/**
 * Makes chosen appends fail, for tests.
 *
 * @since 0.0.0
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
 */
export class StoreFaults extends Context.Tag("@harness/session/StoreFaults")<StoreFaults, Faults>() {}

/**
 * A commit predicate for {@link Faults.failWhen}: true when any of the commit's events matches.
 *
 * @since 0.0.0
 */
export const anyEvent =
  (predicate: (event: SessionEvent.SessionEvent) => boolean) => (commit: Commit): boolean =>
    commit.events.some(predicate)

/**
 * For backends: the records of a commit in the order they are stored (inbox records first, then events).
 *
 * @since 0.0.0
 */
export const commitRecords = (commit: Commit): ReadonlyArray<Store.StoreRecord> =>
  commit.inbox.length === 0 ? commit.events : commit.events.length === 0 ? commit.inbox : [...commit.inbox, ...commit.events]

/**
 * For backends: one record of a commit, encoded, with the facts summaries and the message index need.
 *
 * @since 0.0.0
 */
export interface EncodedRecord {
  /** The record's position: the session's record count before the commit plus its index in the commit. */
  readonly position: number
  /** `JSON.stringify` of the record: what the backend stores. */
  readonly text: string
  /** The UTF-8 length of `text`. */
  readonly bytes: number
  readonly time: number
  /** `inbox` for an inbox record, `turn` for a `turn/start` event, `event` for any other event. */
  readonly kind: "inbox" | "event" | "turn"
  /** `Store.messageIdOf` the record. */
  readonly messageId: Ids.AgentMessageId | undefined
  /** `Store.promptPreviewOf` the record. */
  readonly preview: string | undefined
}

/**
 * For backends: the records of `commit` in stored order, encoded, with positions from `from`.
 *
 * @since 0.0.0
 */
export const encodeCommit = (commit: Commit, from: number): ReadonlyArray<EncodedRecord> =>
  commitRecords(commit).map((record, i) => {
    const text = JSON.stringify(record)
    return {
      position: from + i,
      text,
      bytes: utf8Length(text),
      time: record.time,
      kind: Store.isInboxRecord(record) ? "inbox" : record.type === "turn/start" ? "turn" : "event",
      messageId: Store.messageIdOf(record),
      preview: Store.promptPreviewOf(record)
    }
  })

/**
 * For backends: what a commit adds to a session's figures (see `Store.SessionSummary`).
 *
 * @since 0.0.0
 */
export interface CommitFigures {
  readonly records: number
  readonly events: number
  readonly turns: number
  readonly bytes: number
  /** The time of the commit's last record (absent for an empty commit). */
  readonly lastActivity: number | undefined
  /** The commit's first prompt preview and its position, if it has one. */
  readonly firstPrompt: { readonly text: string; readonly position: number } | undefined
}

/**
 * For backends: the figures of encoded records.
 *
 * @since 0.0.0
 */
export const figuresOf = (records: ReadonlyArray<EncodedRecord>): CommitFigures => {
  let events = 0
  let turns = 0
  let bytes = 0
  let firstPrompt: CommitFigures["firstPrompt"] = undefined
  for (const record of records) {
    bytes += record.bytes
    if (record.kind !== "inbox") events++
    if (record.kind === "turn") turns++
    if (firstPrompt === undefined && record.preview !== undefined) {
      firstPrompt = { text: record.preview, position: record.position }
    }
  }
  return { records: records.length, events, turns, bytes, lastActivity: records.at(-1)?.time, firstPrompt }
}

/**
 * For backends: the UTF-8 length of a string (what `bytes` counts).
 *
 * @since 0.0.0
 */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next < 0xe000) {
        bytes += 4
        i++
      } else bytes += 3 // a lone surrogate is written as U+FFFD
    } else bytes += 3
  }
  return bytes
}

/**
 * For backends: why `commit` does not continue a session that stores `storedEvents` events (the `Conflict`
 * message), or `undefined` when it does.
 *
 * @since 0.0.0
 */
export const contiguityIssue = (storedEvents: number, commit: Commit): string | undefined => {
  const events = commit.events
  for (let i = 0; i < events.length; i++) {
    const expected = storedEvents + i
    if (events[i]!.seq !== expected) {
      return `event ${i} of the commit has seq ${events[i]!.seq} but the session needs seq ${expected} (it stores ${storedEvents} events)`
    }
  }
  return undefined
}

/**
 * For backends: the `Conflict` message for a position that is not a whole number, or `undefined`.
 *
 * @since 0.0.0
 */
export const positionIssue = (position: number): string | undefined =>
  Number.isSafeInteger(position) && position >= 0 ? undefined : `${position} is not a record position (a whole number from 0)`

/**
 * A memory backend: one fresh, empty store.
 *
 * Contract: the conformance suite's backend semantics, with everything in one `Ref`: each record is encoded once
 * at append (so the store keeps its own copy, and `bytes` counts the UTF-8 length of the header's and records'
 * JSON texts, as the SQL backends do); an append costs O(log n) in the session's size; `truncate` and the
 * summaries it recomputes cost O(n).
 *
 * @since 0.0.0
 */
export const makeMemory: Effect.Effect<Service> = internal.makeMemory

/**
 * The memory backend as a layer (a fresh store each time the layer is built).
 *
 * @since 0.0.0
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.effect(SessionStore, makeMemory)

/**
 * Wraps any driver so tests can make chosen appends fail.
 *
 * Contract: a failing append fails with `Injected` before the wrapped driver is called, so nothing is stored;
 * every other operation is the wrapped driver's.
 *
 * @since 0.0.0
 */
export const withFaults: (store: Service) => Effect.Effect<readonly [Service, Faults]> = internal.withFaults

/**
 * The memory backend with a fault injector.
 *
 * @since 0.0.0
 */
export const layerMemoryWithFaults: Layer.Layer<SessionStore | StoreFaults> = Layer.effectContext(
  Effect.gen(function*() {
    const [store, faults] = yield* withFaults(yield* makeMemory)
    return Context.make(SessionStore, store).pipe(Context.add(StoreFaults, faults))
  })
)
