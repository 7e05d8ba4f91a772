/**
 * Reading a log: its accessors (`events`, `state`, `history`, `cursors`, the observers' and the faults' streams) as
 * getters on one prototype, so an idle log holds none of them, and the read-back of the events a snapshot left to
 * the store.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store as StoreRecords } from "@harness/domain"
import { Effect, Either, PubSub, Ref, Stream } from "effect"
import type { History } from "../History.js"
import type { Cursors, Service } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import type { Service as Store } from "../SessionStore.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import * as history from "./history.js"
import { corrupt, decodeRecord, storeError } from "./logRecords.js"
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
 * The log's effects and streams, built each time they are read: getters on one prototype, so an idle log holds none
 * of them (ADR 0040; its subscriptions and streams are made only when used, ADR 0023). The operations stay the
 * object's own closures: a destructured log works, and a destructured read is read while destructuring.
 */
export class LogReads implements
  Pick<
    Service,
    | "flush"
    | "cursors"
    | "faults"
    | "subscribeFaults"
    | "events"
    | "lastTurn"
    | "state"
    | "history"
    | "subscribe"
    | "changes"
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
  /** Where the last stored `turn/start` is (ADR 0068). */
  readonly #turnStarts: TurnStarts
  constructor(parts: {
    readonly id: Ids.SessionId
    readonly store: Store
    readonly shared: Ref.Ref<Shared>
    readonly flush: () => Effect.Effect<void, SessionLogError>
    readonly faults: PubSub.PubSub<SessionStoreError> | undefined
    readonly observed: Effect.Effect<PubSub.PubSub<SessionEvent.SessionEvent>>
    readonly prefix: Effect.Effect<History> | undefined
    readonly turnStarts: TurnStarts
  }) {
    this.#id = parts.id
    this.#store = parts.store
    this.#shared = parts.shared
    this.#flush = parts.flush
    this.#faults = parts.faults
    this.#observed = parts.observed
    this.#prefix = parts.prefix
    this.#turnStarts = parts.turnStarts
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
  get lastTurn(): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> {
    const id = this.#id
    const store = this.#store
    const turnStarts = this.#turnStarts
    const everything = this.events
    return Effect.flatMap(Ref.get(this.#shared), (s) => {
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
