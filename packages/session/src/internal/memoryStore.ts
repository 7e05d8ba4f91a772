/**
 * The memory backend of `SessionStore` and the fault injector. All sessions live in one `Ref`; each session keeps
 * its records' JSON texts in an append-only array its successive states share (ADR 0030), its figures folded as
 * records arrive, and its message ids in a set only the newest state adds to — an append is O(1) and never copies
 * stored records, and the store holds one string a record (its own copy, whatever the caller later does).
 */
import type { Ids, Store } from "@harness/domain"
import { Chunk, Effect, HashMap, Option, Ref, Stream } from "effect"
import type { Commit, Faults, Service, Snapshot, SnapshotHead } from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"
import {
  contiguityIssue,
  encodeCommit,
  type EncodedRecord,
  encodeRecord,
  positionIssue,
  utf8Length
} from "../StoreCodec.js"
import * as AppendOnly from "./appendOnly.js"

interface MemorySession {
  readonly header: Store.SessionHeader
  readonly headerBytes: number
  /** The records' JSON texts, by position. */
  readonly records: AppendOnly.AppendOnly<string>
  readonly events: number
  readonly turns: number
  readonly lastActivity: number
  readonly bytes: number
  readonly firstPrompt: string | undefined
  /**
   * Shared with the session's earlier states and added to in place: only the newest state is ever read (`hasMessage`
   * reads the `Ref`), and a truncation builds a new set.
   */
  readonly messageIds: Set<Ids.AgentMessageId>
  readonly snapshot: Option.Option<Snapshot>
}

interface Sessions {
  readonly order: Chunk.Chunk<Ids.SessionId>
  readonly byId: HashMap.HashMap<Ids.SessionId, MemorySession>
}

/** Folds records into a session's figures and index; the texts are kept. */
const appendRecords = (session: MemorySession, records: ReadonlyArray<EncodedRecord>): MemorySession => {
  let { bytes, events, firstPrompt, lastActivity, turns } = session
  const texts: Array<string> = []
  for (const record of records) {
    texts.push(record.text)
    bytes += record.bytes
    if (record.kind !== "inbox") events++
    if (record.kind === "turn") turns++
    lastActivity = record.time
    if (firstPrompt === undefined && record.preview !== undefined) firstPrompt = record.preview
    if (record.messageId !== undefined) session.messageIds.add(record.messageId)
  }
  return {
    ...session,
    records: AppendOnly.appendAll(session.records, texts),
    bytes,
    events,
    turns,
    lastActivity,
    firstPrompt
  }
}

const emptySession = (header: Store.SessionHeader): MemorySession => {
  const headerBytes = utf8Length(JSON.stringify(header))
  return {
    header,
    headerBytes,
    records: AppendOnly.empty(),
    events: 0,
    turns: 0,
    lastActivity: header.createdAt,
    bytes: headerBytes,
    firstPrompt: undefined,
    messageIds: new Set(),
    snapshot: Option.none()
  }
}

const summaryOf = (session: MemorySession): Store.SessionSummary => ({
  header: session.header,
  events: session.events,
  turns: session.turns,
  lastActivity: session.lastActivity,
  bytes: session.bytes,
  ...(session.firstPrompt === undefined ? {} : { firstPrompt: session.firstPrompt })
})

const fail = (id: Ids.SessionId, reason: SessionStoreError["reason"], message: string) =>
  Effect.fail(new SessionStoreError({ reason, message, id }))

const notFound = (id: Ids.SessionId) => fail(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)

const loadChunkSize = 4096

export const makeMemory: Effect.Effect<Service> = Effect.map(
  Ref.make<Sessions>({ order: Chunk.empty(), byId: HashMap.empty() }),
  (ref): Service => {
    /** Runs `f` on the stored session atomically; `f` returns the result and the session's next state. */
    const modify = <A>(
      id: Ids.SessionId,
      f: (session: MemorySession) => readonly [Effect.Effect<A, SessionStoreError>, MemorySession]
    ): Effect.Effect<A, SessionStoreError> =>
      Effect.flatten(Ref.modify(ref, (sessions): readonly [Effect.Effect<A, SessionStoreError>, Sessions] => {
        const stored = HashMap.get(sessions.byId, id)
        if (Option.isNone(stored)) return [notFound(id), sessions]
        const [result, next] = f(stored.value)
        return [result, next === stored.value ? sessions : { ...sessions, byId: HashMap.set(sessions.byId, id, next) }]
      }))

    const read = <A>(id: Ids.SessionId, f: (session: MemorySession) => A): Effect.Effect<A, SessionStoreError> =>
      Effect.flatMap(Ref.get(ref), (sessions) =>
        Option.match(HashMap.get(sessions.byId, id), {
          onNone: () => notFound(id),
          onSome: (session) => Effect.succeed(f(session))
        }))

    return {
      volatile: true,
      create: (header, commit) => {
        const id = header.id
        const records = commit === undefined ? [] : encodeCommit(commit, 0)
        const issue = commit === undefined ? undefined : contiguityIssue(0, commit)
        if (issue !== undefined) return fail(id, "Conflict", issue)
        return Effect.flatten(
          Ref.modify(
            ref,
            (sessions): readonly [Effect.Effect<void, SessionStoreError>, Sessions] =>
              HashMap.has(sessions.byId, id)
                ? [fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`), sessions]
                : [Effect.void, {
                  order: Chunk.append(sessions.order, id),
                  byId: HashMap.set(sessions.byId, id, appendRecords(emptySession(header), records))
                }]
          )
        )
      },

      append: (id, commit) =>
        modify(id, (session) => {
          const issue = contiguityIssue(session.events, commit)
          if (issue !== undefined) return [fail(id, "Conflict", issue), session]
          // Encoded now: the store keeps its own copy, whatever the caller later does with its values.
          const records = encodeCommit(commit, session.records.length)
          return [Effect.void, records.length === 0 ? session : appendRecords(session, records)]
        }),

      load: (id, options) =>
        Stream.unwrap(read(id, (session) => {
          const after = options?.after ?? -1
          const start = Math.max(0, Math.floor(after) + 1)
          // Lazily, a chunk at a time, over the session as it was when the load started.
          const { array, length } = session.records
          return Stream.fromIteratorSucceed(
            (function*() {
              for (let position = start; position < length; position++) yield { position, text: array[position]! }
            })(),
            loadChunkSize
          )
        })),

      header: (id) => read(id, (session) => session.header),

      truncate: (id, position) => {
        const issue = positionIssue(position)
        if (issue !== undefined) return fail(id, "Conflict", issue)
        return modify(id, (session) => {
          if (position >= session.records.length) return [Effect.void, session]
          // The kept records' figures, folded again from their texts.
          const kept = appendRecords(
            { ...emptySession(session.header), snapshot: session.snapshot },
            AppendOnly.slice(session.records, 0, position).map((text, i) =>
              encodeRecord(JSON.parse(text) as Store.StoreRecord, i, text)
            )
          )
          const snapshot = Option.filter(session.snapshot, (s) => s.position < position)
          return [Effect.void, { ...kept, snapshot }]
        })
      },

      list: Effect.map(
        Ref.get(ref),
        (sessions) =>
          Chunk.toReadonlyArray(
            Chunk.filterMap(sessions.order, (id) => Option.map(HashMap.get(sessions.byId, id), summaryOf))
          )
      ),

      remove: (id) =>
        Effect.flatten(
          Ref.modify(ref, (sessions): readonly [Effect.Effect<void, SessionStoreError>, Sessions] =>
            HashMap.has(sessions.byId, id)
              ? [Effect.void, {
                order: Chunk.filter(sessions.order, (other) =>
                  other !== id),
                byId: HashMap.remove(sessions.byId, id)
              }]
              : [notFound(id), sessions])
        ),

      hasMessage: (id, messageId) => read(id, (session) => session.messageIds.has(messageId)),

      saveSnapshot: (id, snapshot) =>
        modify(id, (session) => {
          const issue = positionIssue(snapshot.position) ??
            (snapshot.position < session.records.length
              ? undefined
              : `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${session.records.length})`)
          if (issue !== undefined) return [fail(id, "Conflict", issue), session]
          const { body, head, position, seq } = snapshot
          return [Effect.void, { ...session, snapshot: Option.some({ seq, position, head, body }) }]
        }),

      loadSnapshot: (id) =>
        read(id, (session) =>
          Option.map(session.snapshot, (saved): SnapshotHead => ({
            seq: saved.seq,
            position: saved.position,
            head: saved.head,
            // This snapshot's body while the session still holds this very snapshot (a new object per save).
            body: Effect.map(Ref.get(ref), (sessions) =>
              Option.flatMap(
                HashMap.get(sessions.byId, id),
                (now) =>
                  Option.isSome(now.snapshot) && now.snapshot.value === saved ? Option.some(saved.body) : Option.none()
              ))
          })))
    }
  }
)

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
