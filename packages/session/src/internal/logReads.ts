/**
 * The log as a service: its accessors (`events`, `state`, `history`, `cursors`, the observers' and the faults'
 * streams) and its operations (over the append path, `logAppend.ts`) as getters on one prototype, so an idle log
 * holds none of them, and the read-back of the events a snapshot left to the store.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store as StoreRecords } from "@harness/domain"
import { Chunk, Effect, Either, PubSub, Ref, Stream } from "effect"
import type { History } from "../History.js"
import type { Cursors, Service } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import type { Lease, Service as Store } from "../SessionStore.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import * as history from "./history.js"
import { appendBatch, type AppendParts, flush, hasMessage, inTransaction, observed, recordInbox } from "./logAppend.js"
import { corrupt, decodeRecord, storeError } from "./logRecords.js"
import type { Tracker } from "./pendingApprovals.js"
import type { TurnStarts } from "./snapshotKeeper.js"
import type { Shared } from "./writeBehind.js"

/**
 * The stored events with `seq` below `below`, decoded and checked to be contiguous from 0 (the part of the log
 * a snapshot let `open` skip). A store failure or a record that is not what the log said is a defect: the
 * accessors that need this cannot fail (ADR 0022).
 */
/** Every inbox record the store holds for the session, in commit order (ADR 0050). */
export const storedInbox = (
  id: Ids.SessionId,
  store: Store
): Effect.Effect<ReadonlyArray<StoreRecords.InboxRecord>, SessionLogError> =>
  Effect.suspend(() => {
    const out: Array<StoreRecords.InboxRecord> = []
    return store.load(id).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.suspend(() => {
          for (const record of chunk) {
            // Only inbox and approval records are decoded (an event's text rarely holds their type key, and one that
            // does decodes as an event and is skipped).
            if (!record.text.includes("\"type\":\"inbox/") && !record.text.includes("\"type\":\"approval/")) continue
            const decoded = decodeRecord(record.text)
            if (Either.isLeft(decoded)) {
              return Effect.fail(corrupt(id, record.position, `it is not a record: ${decoded.left}`))
            }
            if (StoreRecords.isInboxRecord(decoded.right)) out.push(decoded.right)
          }
          return Effect.void
        })
      ),
      Effect.mapError((error) =>
        error instanceof SessionLogError ? error : storeError(`cannot load session ${JSON.stringify(id)}`)(error)
      ),
      Effect.as(out)
    )
  })

export const storedEvents = (
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

/**
 * The stored events from the `turn/start` at `from` (its `seq` and record position) to `below` (exclusive), decoded
 * and checked contiguous (ADR 0068); `undefined` when the store holds no such `turn/start` there (a head that named
 * another record: the caller reads the whole log instead). A store failure or a record that does not decode is a
 * defect, as in {@link storedEvents}.
 */
const storedTurn = (
  id: Ids.SessionId,
  store: Store,
  from: { readonly seq: number; readonly position: number },
  below: number
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent> | undefined> =>
  Effect.suspend(() => {
    const out: Array<SessionEvent.SessionEvent> = []
    let wrong = false
    const done = () => wrong || from.seq + out.length >= below
    return store.load(id, { after: from.position - 1 }).pipe(
      Stream.takeWhile(() => !done()),
      Stream.runForEachChunk((chunk) =>
        Effect.suspend(() => {
          for (const record of chunk) {
            if (done()) break
            const decoded = decodeRecord(record.text)
            if (Either.isLeft(decoded)) {
              return Effect.fail(corrupt(id, record.position, `it is not a record: ${decoded.left}`))
            }
            const value = decoded.right
            if (StoreRecords.isInboxRecord(value)) {
              if (out.length === 0) wrong = true
              continue
            }
            if (value.seq !== from.seq + out.length || (out.length === 0 && value.type !== "turn/start")) {
              wrong = true
              break
            }
            out.push(value)
          }
          return Effect.void
        })
      ),
      Effect.mapError((error) =>
        error instanceof SessionLogError ? error : storeError(`cannot load session ${JSON.stringify(id)}`)(error)
      ),
      Effect.map(() => (wrong || from.seq + out.length !== below ? undefined : out)),
      Effect.orDie
    )
  })

/** The events from the last `turn/start` in `events` on, if it holds one. */
const fromLastTurnStart = (
  events: ReadonlyArray<SessionEvent.SessionEvent>
): ReadonlyArray<SessionEvent.SessionEvent> | undefined => {
  for (let index = events.length - 1; index >= 0; index--) {
    if (events[index]!.type === "turn/start") return events.slice(index)
  }
  return undefined
}

/**
 * The log as its `Service`: its reads (`events`, `state`, `history`, `cursors`, the observers' and the faults'
 * streams) and its operations (`append`, `transaction`, …) are getters on one prototype, built each time they are
 * read, so an idle log holds none of them (ADR 0040, ADR 0076; its subscriptions and streams are made only when used,
 * ADR 0023). An operation read is a fresh closure over the log's parts: a destructured log works (destructuring reads
 * the getter); a spread copy (`{ ...log }`) has neither its reads nor its operations.
 */
export class LogService implements Service {
  readonly id: Ids.SessionId
  readonly commitMode: Service["commitMode"]
  readonly durable: boolean
  readonly pendingInbox: Service["pendingInbox"]
  readonly #parts: AppendParts
  /** The store as the log reads it (reads carry no lease). */
  readonly #store: Store
  /** The write-behind writer's faults; a write-through log has none. */
  readonly #faults: PubSub.PubSub<SessionStoreError> | undefined
  /** The history of the events a snapshot left to the store, if any. */
  readonly #prefix: Effect.Effect<History> | undefined
  /** Where the last stored `turn/start` is (ADR 0068). */
  readonly #turnStarts: TurnStarts
  /** The log's writer lease; none for a log opened read-only. */
  readonly #lease: Lease | "read-only"
  /** The log's pending approvals, kept as it opens and records (R237). */
  readonly #approvals: Tracker
  constructor(parts: {
    readonly parts: AppendParts
    readonly approvals: Tracker
    readonly store: Store
    readonly faults: PubSub.PubSub<SessionStoreError> | undefined
    readonly prefix: Effect.Effect<History> | undefined
    readonly turnStarts: TurnStarts
    readonly lease: Lease | "read-only"
    readonly commitMode: Service["commitMode"]
    readonly durable: boolean
    readonly pendingInbox: Service["pendingInbox"]
  }) {
    this.id = parts.parts.id
    this.commitMode = parts.commitMode
    this.durable = parts.durable
    this.pendingInbox = parts.pendingInbox
    this.#parts = parts.parts
    this.#store = parts.store
    this.#faults = parts.faults
    this.#prefix = parts.prefix
    this.#turnStarts = parts.turnStarts
    this.#lease = parts.lease
    this.#approvals = parts.approvals
  }
  get append(): Service["append"] {
    const p = this.#parts
    // The appended event is the validated copy of `input` with `seq` and `time` added, so its `type` is
    // `input.type`; TypeScript cannot see that through the union, hence the cast.
    return <E extends SessionEvent.SessionEventInput>(input: E) =>
      Effect.map(appendBatch(p, [input], false), (events) => events[0]!) as Effect.Effect<
        Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>,
        SessionLogError
      >
  }
  get appendAll(): Service["appendAll"] {
    const p = this.#parts
    return (inputs) => appendBatch(p, inputs, false)
  }
  get appendTrusted(): Service["appendTrusted"] {
    const p = this.#parts
    return (inputs) => appendBatch(p, inputs, true)
  }
  get transaction(): Service["transaction"] {
    const p = this.#parts
    return (body) => inTransaction(p, body)
  }
  get recordInbox(): Service["recordInbox"] {
    const p = this.#parts
    return (records, options) => recordInbox(p, records, options)
  }
  get hasMessage(): Service["hasMessage"] {
    const p = this.#parts
    return (messageId) => hasMessage(p, messageId)
  }
  // The unwritten records are read before the store: a commit in between can only repeat a record (harmless to a
  // fold of fates), never lose one.
  get inboxRecords(): Service["inboxRecords"] {
    const { id, shared } = this.#parts
    const store = this.#store
    return Effect.flatMap(
      Ref.get(shared),
      (s) => Effect.map(storedInbox(id, store), (stored) => stored.concat(Chunk.toReadonlyArray(s.writer.inbox)))
    )
  }
  get pendingApprovals(): Service["pendingApprovals"] {
    return this.#approvals.pending(this.inboxRecords)
  }
  get close(): Service["close"] {
    const lease = this.#lease
    return lease === "read-only"
      ? Effect.void
      : Effect.ensuring(flush(this.#parts), lease.release).pipe(
        Effect.withSpan("SessionLog.close", {
          attributes: { "harness.session.id": this.id },
          captureStackTrace: false
        })
      )
  }
  get flush() {
    return flush(this.#parts)
  }
  get cursors() {
    return Effect.map(Ref.get(this.#parts.shared), (s): Cursors => ({
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
    const id = this.id
    const store = this.#store
    const shared = this.#parts.shared
    return Effect.flatMap(Ref.get(shared), (s) => {
      if (s.data.base === 0) return Effect.succeed(AppendOnly.slice(s.data.events, 0))
      // Read back once and kept (until the next snapshot drops them again): callers that read `events` often
      // (goal accounting) pay the store read once per snapshot, not per call.
      return Effect.flatMap(storedEvents(id, store, s.data.base), (older) => Ref.modify(shared, keepReadBack(older, s)))
    })
  }
  get lastTurn(): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> {
    const id = this.id
    const store = this.#store
    const turnStarts = this.#turnStarts
    const everything = this.events
    return Effect.flatMap(Ref.get(this.#parts.shared), (s) => {
      const memory = AppendOnly.slice(s.data.events, 0)
      const inMemory = fromLastTurnStart(memory)
      if (inMemory !== undefined) return Effect.succeed(inMemory)
      // Memory holds no `turn/start`: the last one (if any) is stored before it.
      const at = turnStarts.latest
      if (s.data.base === 0 || at === undefined) return Effect.succeed([])
      const whole = Effect.map(everything, (events) => fromLastTurnStart(events) ?? [])
      if (at === "unknown" || at.seq >= s.data.base) return whole
      return Effect.flatMap(
        storedTurn(id, store, at, s.data.base),
        (stored) => stored === undefined ? whole : Effect.succeed(stored.concat(memory))
      )
    })
  }
  get state() {
    return Effect.map(Ref.get(this.#parts.shared), (s) => s.data.state)
  }
  get history() {
    const shared = this.#parts.shared
    return this.#prefix === undefined
      ? Effect.map(Ref.get(shared), (s) => s.data.history)
      : Effect.flatMap(
        this.#prefix,
        (prefix) => Effect.map(Ref.get(shared), (s) => history.concat(prefix, s.data.history))
      )
  }
  get subscribe() {
    return Effect.flatMap(observed(this.#parts), PubSub.subscribe)
  }
  get changes() {
    return Stream.unwrap(Effect.map(observed(this.#parts), (pubsub) => Stream.fromPubSub(pubsub)))
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
