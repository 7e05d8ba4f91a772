/**
 * The memory backend of `SessionStore` and the fault injector. The store is one `Map` from the sessions' ids, in
 * creation order, to a cell holding each session's newest state; an append replaces the state in its cell
 * (atomically: the whole change runs synchronously). A state keeps its records as they were appended, in an
 * append-only array its successive states share (ADR 0030), and its event count; its figures, message ids and bytes
 * are derived from the records when first asked (ADR 0034, ADR 0040): an append is O(1), copies nothing and reads
 * none of its records. Records are immutable values (the session log never changes an event it appended), so the
 * store holds the very objects and encodes one only when it is read or measured.
 */
import type { Ids } from "@harness/domain"
import { Store } from "@harness/domain"
import { Clock, Effect, Option, Ref, Stream } from "effect"
import type {
  AppendOptions,
  Commit,
  Faults,
  InlineAppend,
  Lease,
  LoadOptions,
  Service,
  Snapshot,
  SnapshotHead,
  StoredRecord,
  WriteOptions
} from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"
import * as StoreCodec from "../StoreCodec.js"
import {
  type CommitFigures,
  commitRecords,
  contiguityIssue,
  positionIssue,
  snapshotIssue,
  utf8Length
} from "../StoreCodec.js"
import * as AppendOnly from "./appendOnly.js"

interface MemorySession {
  readonly header: Store.SessionHeader
  /** The records, by position, as they were appended. */
  readonly records: AppendOnly.AppendOnly<Store.StoreRecord>
  /** How many of the records are events (not inbox records): the `seq` the next event must have. */
  readonly events: number
  readonly derived: Derived
  readonly snapshot: Option.Option<Snapshot>
}

/**
 * What is derived from a session's records when first asked, and extended in place as more are asked for: shared with
 * the session's earlier states (only the newest state is ever read, and a truncation starts anew).
 */
interface Derived {
  /** The figures and the message ids below cover the first `folded` records (a summary, a message-id lookup). */
  folded: number
  turns: number
  firstPrompt: CommitFigures["firstPrompt"]
  /** Made with the first id met. */
  messageIds: Set<Ids.AgentMessageId> | undefined
  /** `bytes` is the UTF-8 length of the JSON texts of the first `measured` records (a summary only: costly). */
  measured: number
  bytes: number
}

/** A session's newest state (replaced, never mutated, by each change), and its writer lease. */
interface Cell {
  current: MemorySession
  /** The token of the session's current lease, if it is leased. */
  lease: number | undefined
}

const eventsIn = (records: ReadonlyArray<Store.StoreRecord>): number => {
  let events = 0
  for (const record of records) if (!Store.isInboxRecord(record)) events++
  return events
}

/**
 * The session with `records` appended, `events` of them events: one object literal, not a spread (V8 builds a
 * literal many times faster than it copies a spread, and this runs for every commit: ADR 0040).
 */
const appendRecords = (
  session: MemorySession,
  records: ReadonlyArray<Store.StoreRecord>,
  events: number
): MemorySession => ({
  header: session.header,
  records: AppendOnly.appendAll(session.records, records),
  events: session.events + events,
  derived: session.derived,
  snapshot: session.snapshot
})

/** The session's figures and message ids, folded up to its last record. */
const foldedOf = (session: MemorySession): Derived => {
  const { array, length } = session.records
  const derived = session.derived
  for (; derived.folded < length; derived.folded++) {
    const record = array[derived.folded]!
    if (record.type === "turn/start") derived.turns++
    if (derived.firstPrompt === undefined) {
      const text = Store.promptPreviewOf(record)
      if (text !== undefined) derived.firstPrompt = { text, position: derived.folded }
    }
    const messageId = Store.messageIdOf(record)
    if (messageId !== undefined) (derived.messageIds ??= new Set()).add(messageId)
  }
  return derived
}

const emptySession = (header: Store.SessionHeader): MemorySession => ({
  header,
  records: AppendOnly.empty(),
  events: 0,
  derived: { folded: 0, turns: 0, firstPrompt: undefined, messageIds: undefined, measured: 0, bytes: 0 },
  snapshot: Option.none()
})

/** The UTF-8 length of the records' JSON texts (what a SQL backend counts as it writes them). */
const bytesOf = (session: MemorySession): number => {
  const { array, length } = session.records
  const derived = session.derived
  for (; derived.measured < length; derived.measured++) {
    derived.bytes += utf8Length(JSON.stringify(array[derived.measured]))
  }
  return derived.bytes
}

const summaryOf = (session: MemorySession): Store.SessionSummary => {
  const { firstPrompt, turns } = foldedOf(session)
  const { array, length } = session.records
  return StoreCodec.summaryOf(session.header, {
    records: length,
    events: session.events,
    turns,
    bytes: bytesOf(session),
    lastActivity: array[length - 1]?.time,
    firstPrompt
  })
}

const refusal = (id: Ids.SessionId, reason: SessionStoreError["reason"], message: string) =>
  new SessionStoreError({ reason, message, id })

const fail = (id: Ids.SessionId, reason: SessionStoreError["reason"], message: string) =>
  Effect.fail(refusal(id, reason, message))

const missing = (id: Ids.SessionId) => refusal(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)

const notFound = (id: Ids.SessionId) => Effect.fail(missing(id))

// Records are encoded as a chunk is read: a chunk of 4 KB records stays near 1 MB.
const loadChunkSize = 256

/**
 * The holder of every memory store's leases: a memory store lives in one process and knows no other, so a lease is
 * only ever taken over by a later log of the same process.
 */
const memoryHolder = (since: number): Store.LeaseHolder => ({ pid: 0, host: "memory", since })

/**
 * A memory store's lease: its holder and its release built when read (a log holds its lease as long as it lives; an
 * object with a prebuilt release effect was ≈ 0.3 KB of every idle agent, ADR 0079).
 */
class MemoryLease implements Lease {
  readonly id: Ids.SessionId
  readonly token: number
  readonly #since: number
  readonly #cell: Cell
  constructor(id: Ids.SessionId, token: number, since: number, cell: Cell) {
    this.id = id
    this.token = token
    this.#since = since
    this.#cell = cell
  }
  get holder(): Store.LeaseHolder {
    return memoryHolder(this.#since)
  }
  get release(): Effect.Effect<void> {
    return Effect.sync(() => {
      if (this.#cell.lease === this.token) this.#cell.lease = undefined
    })
  }
}

/** The fence: a write under anything but the session's current lease (none, when it is not leased) is refused. */
const fenced = (id: Ids.SessionId, cell: Cell, lease: Lease | undefined): SessionStoreError | undefined =>
  cell.lease === undefined
    ? lease === undefined
      ? undefined
      : refusal(id, "Busy", `the writer lease of session ${JSON.stringify(id)} was released`)
    : lease !== undefined && lease.id === id && lease.token === cell.lease
    ? undefined
    : refusal(
      id,
      "Busy",
      lease === undefined
        ? `session ${JSON.stringify(id)} is leased by a writer: a write must carry its lease`
        : `the writer lease of session ${JSON.stringify(id)} was taken over by a later writer`
    )

/**
 * A memory store: its operations are methods of one prototype, so a store made for one log (`SessionLog.memory`,
 * which nobody else sees) holds only its sessions (ADR 0076). Everything is read and changed by synchronous code: every
 * change below is atomic without a `Ref`. A `Map` keeps its keys in insertion order: the sessions in creation order.
 * Not a value to spread (`{ ...store }` has no operations): {@link makeMemory} hands out a copy with its operations
 * as own closures.
 */
class MemoryStore implements Service {
  readonly volatile = true
  readonly #sessions = new Map<Ids.SessionId, Cell>()
  /** The last lease token handed out: tokens grow across the store, so no lease outlives its session's id. */
  #tokens = 0

  /**
   * Runs `f` on the stored session and keeps the state it returns, in one synchronous step (so atomically); `f`
   * returns the result and the session's next state.
   */
  #modify<A>(
    id: Ids.SessionId,
    lease: Lease | undefined,
    f: (session: MemorySession) => readonly [Effect.Effect<A, SessionStoreError>, MemorySession]
  ): Effect.Effect<A, SessionStoreError> {
    return Effect.suspend(() => {
      const cell = this.#sessions.get(id)
      if (cell === undefined) return notFound(id)
      const refused = fenced(id, cell, lease)
      if (refused !== undefined) return Effect.fail(refused)
      const [result, next] = f(cell.current)
      cell.current = next
      return result
    })
  }

  #read<A>(id: Ids.SessionId, f: (session: MemorySession) => A): Effect.Effect<A, SessionStoreError> {
    return Effect.suspend(() => {
      const cell = this.#sessions.get(id)
      return cell === undefined ? notFound(id) : Effect.succeed(f(cell.current))
    })
  }

  /** {@link append} as a plain function: the refusal, or `undefined` once committed. */
  appendNow(id: Ids.SessionId, commit: Commit, lease: Lease | undefined): SessionStoreError | undefined {
    const cell = this.#sessions.get(id)
    if (cell === undefined) return missing(id)
    const refused = fenced(id, cell, lease)
    if (refused !== undefined) return refused
    const session = cell.current
    const issue = contiguityIssue(session.events, commit)
    if (issue !== undefined) return refusal(id, "Conflict", issue)
    const records = commitRecords(commit)
    if (records.length > 0) cell.current = appendRecords(session, records, commit.events.length)
    return undefined
  }

  // Declared, and bound to this very `append` (the prototype's): a wrapper that replaces `append` is never bypassed
  // (ADR 0037). Built when read (a log reads it once).
  get inlineAppend(): InlineAppend {
    return { twin: this.append, run: (id, commit, options) => this.appendNow(id, commit, options?.lease) }
  }

  create(header: Store.SessionHeader, commit?: Commit): Effect.Effect<void, SessionStoreError> {
    const id = header.id
    const issue = commit === undefined ? undefined : contiguityIssue(0, commit)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    return Effect.suspend(() => {
      if (this.#sessions.has(id)) {
        return fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`)
      }
      const session = emptySession(header)
      this.#sessions.set(id, {
        current: commit === undefined ? session : appendRecords(session, commitRecords(commit), commit.events.length),
        lease: undefined
      })
      return Effect.void
    })
  }

  append(id: Ids.SessionId, commit: Commit, options?: AppendOptions): Effect.Effect<void, SessionStoreError> {
    return Effect.suspend(() => {
      const refused = this.appendNow(id, commit, options?.lease)
      return refused === undefined ? Effect.void : Effect.fail(refused)
    })
  }

  load(id: Ids.SessionId, options?: LoadOptions): Stream.Stream<StoredRecord, SessionStoreError> {
    return Stream.unwrap(this.#read(id, (session) => {
      const after = options?.after ?? -1
      const start = Math.max(0, Math.floor(after) + 1)
      // Lazily, a chunk at a time, over the session as it was when the load started; each record encoded as
      // it is read.
      const { array, length } = session.records
      return Stream.fromIteratorSucceed(
        (function*() {
          for (let position = start; position < length; position++) {
            yield { position, text: JSON.stringify(array[position]) }
          }
        })(),
        loadChunkSize
      )
    }))
  }

  header(id: Ids.SessionId): Effect.Effect<Store.SessionHeader, SessionStoreError> {
    return this.#read(id, (session) => session.header)
  }

  truncate(id: Ids.SessionId, position: number, options?: WriteOptions): Effect.Effect<void, SessionStoreError> {
    const issue = positionIssue(position)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    return this.#modify(id, options?.lease, (session) => {
      if (position >= session.records.length) return [Effect.void, session]
      // The kept records, counted and (when asked) folded again.
      const records = AppendOnly.slice(session.records, 0, position)
      const kept = appendRecords(emptySession(session.header), records, eventsIn(records))
      const snapshot = Option.filter(session.snapshot, (s) => s.position < position)
      return [Effect.void, { ...kept, snapshot }]
    })
  }

  get list(): Effect.Effect<ReadonlyArray<Store.SessionSummary>> {
    return Effect.sync(() => Array.from(this.#sessions.values(), (cell) => summaryOf(cell.current)))
  }

  // A memory store keeps values, never text it could fail to read back.
  get damaged(): Effect.Effect<ReadonlyArray<Store.DamagedSession>> {
    return Effect.succeed([])
  }

  // Every lease of a memory store is this process's own: removing the session takes it over.
  remove(id: Ids.SessionId): Effect.Effect<void, SessionStoreError> {
    return Effect.suspend(() => this.#sessions.delete(id) ? Effect.void : notFound(id))
  }

  lease(id: Ids.SessionId): Effect.Effect<Lease, SessionStoreError> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.suspend(() => {
        const cell = this.#sessions.get(id)
        if (cell === undefined) return notFound(id)
        const token = ++this.#tokens
        cell.lease = token
        return Effect.succeed(new MemoryLease(id, token, now, cell))
      }))
  }

  hasMessage(id: Ids.SessionId, messageId: Ids.AgentMessageId): Effect.Effect<boolean, SessionStoreError> {
    return this.#read(id, (session) => foldedOf(session).messageIds?.has(messageId) === true)
  }

  saveSnapshot(id: Ids.SessionId, snapshot: Snapshot, options?: WriteOptions): Effect.Effect<void, SessionStoreError> {
    return this.#modify(id, options?.lease, (session) => {
      const issue = snapshotIssue(snapshot) ??
        (snapshot.position < session.records.length
          ? undefined
          : `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${session.records.length})`)
      if (issue !== undefined) return [fail(id, "Conflict", issue), session]
      const { body, head, position, seq } = snapshot
      return [Effect.void, { ...session, snapshot: Option.some({ seq, position, head, body }) }]
    })
  }

  loadSnapshot(id: Ids.SessionId): Effect.Effect<Option.Option<SnapshotHead>, SessionStoreError> {
    return this.#read(id, (session) =>
      Option.map(session.snapshot, (saved): SnapshotHead => ({
        seq: saved.seq,
        position: saved.position,
        head: saved.head,
        // This snapshot's body while the session still holds this very snapshot (a new object per save).
        body: Effect.sync(() => {
          const now = this.#sessions.get(id)?.current.snapshot
          return now !== undefined && Option.isSome(now) && now.value === saved
            ? Option.some(saved.body)
            : Option.none()
        })
      })))
  }
}

/** A memory store for one log's own use (`SessionLog.memory`): nobody else sees it, so nobody spreads it. */
export const makeOwnMemory: Effect.Effect<Service> = Effect.sync(() => new MemoryStore())

/**
 * A memory store as a value: its operations are its own closures over a {@link MemoryStore}, so a caller may spread
 * it (`{ ...store, append: mine }`) as any store.
 */
export const makeMemory: Effect.Effect<Service> = Effect.sync((): Service => {
  const store = new MemoryStore()
  const append: Service["append"] = (id, commit, options) => store.append(id, commit, options)
  return {
    volatile: true,
    // Declared, and bound to this very `append`: a wrapper that replaces `append` is never bypassed (ADR 0037).
    inlineAppend: { twin: append, run: (id, commit, options) => store.appendNow(id, commit, options?.lease) },
    create: (header, commit) => store.create(header, commit),
    append,
    load: (id, options) => store.load(id, options),
    header: (id) => store.header(id),
    truncate: (id, position, options) => store.truncate(id, position, options),
    list: store.list,
    damaged: store.damaged,
    remove: (id) => store.remove(id),
    lease: (id) => store.lease(id),
    hasMessage: (id, messageId) => store.hasMessage(id, messageId),
    saveSnapshot: (id, snapshot, options) => store.saveSnapshot(id, snapshot, options),
    loadSnapshot: (id) => store.loadSnapshot(id)
  }
})

const injected = (id: Ids.SessionId, commit: Commit) =>
  fail(
    id,
    "Injected",
    `injected failure of an append of ${commit.events.length} event(s) and ${commit.inbox.length} inbox record(s) to session ${
      JSON.stringify(id)
    }`
  )

interface FaultState {
  readonly predicate: Option.Option<(commit: Commit, id: Ids.SessionId) => boolean>
  readonly next: number
}

export const withFaults = (store: Service): Effect.Effect<readonly [Service, Faults]> =>
  Effect.map(Ref.make<FaultState>({ predicate: Option.none(), next: 0 }), (state) => {
    const faults: Faults = {
      failWhen: (predicate) => Ref.update(state, (s) => ({ ...s, predicate: Option.some(predicate) })),
      failNext: (count) => Ref.update(state, (s) => ({ ...s, next: Math.max(0, Math.floor(count)) })),
      clear: Ref.set(state, { predicate: Option.none(), next: 0 })
    }
    const wrapped: Service = {
      ...store,
      append: (id, commit, options) =>
        Effect.flatMap(
          Ref.modify(state, (s): readonly [boolean, FaultState] =>
            s.next > 0
              ? [true, { ...s, next: s.next - 1 }]
              : [Option.isSome(s.predicate) && s.predicate.value(commit, id), s]),
          (failing) => failing ? injected(id, commit) : store.append(id, commit, options)
        )
    }
    return [wrapped, faults] as const
  })
