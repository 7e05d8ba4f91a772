/**
 * The session log's implementation: encoding at the boundary, the serialised append path, seeding and opening.
 * Everything the append path touches is persistent (`Chunk`, small immutable state objects), so its cost does
 * not grow with the log.
 */
import { Ids, SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Chunk, Clock, Effect, Either, ParseResult, PubSub, Random, Ref, Schema, Stream } from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import type { MakeOptions, Service } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import { type Service as Store, SessionStore, type SessionStoreError } from "../SessionStore.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"

// Compiled once. `validate` checks an event and copies it (excess keys refused); a stored row is decoded from its
// JSON text by `decodeJson` (inbox records, which the log does not use yet, are skipped). The encoded form of
// `SessionEvent` is its type form (the schema has no transformations: a test walks its AST to keep it so), so the
// store JSON-encodes the validated copy directly, without a second schema pass.
const validate = Schema.validateEither(SessionEvent.SessionEvent, { onExcessProperty: "error" })
const decodeJson = Schema.decodeEither(
  Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, StoreRecords.InboxRecord))
)

const formatIssue = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)

interface Encoded {
  readonly event: SessionEvent.SessionEvent
}

/**
 * Checks an event at the boundary: a copy that shares nothing with the caller's value. Returns the problem as a
 * sentence when the event does not match its schema or is not JSON-lossless.
 */
const encode = (candidate: unknown): Either.Either<Encoded, string> =>
  Either.match(validate(candidate), {
    onLeft: (error) => Either.left(formatIssue(error)),
    onRight: (event) => Either.right({ event })
  })

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

/**
 * Checks a whole log that is to be continued (a seed or a stored log): gap-free from 0, no violation, no open
 * turn. Returns what the log holds after it.
 */
const checkContinuable = (
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<LogData, SessionLogError> => {
  const violations = logCheck.checkLog(events)
  if (violations.length > 0) {
    const shown = violations.slice(0, 5).map((v) => `seq ${v.seq}: ${v.rule}: ${v.message}`).join("; ")
    const more = violations.length > 5 ? ` (and ${violations.length - 5} more)` : ""
    return Effect.fail(
      invalidSeed(
        `the log cannot be continued, it breaks ${violations.length} rule(s): ${shown}${more}`,
        violations[0]!.seq
      )
    )
  }
  let data = emptyData
  for (const event of events) {
    const checked = logCheck.step(data.state, event)
    // checkLog found nothing, so every step succeeds; the guard keeps the types honest.
    if ("violation" in checked) return Effect.fail(invalidSeed(checked.violation.message, event.seq))
    data = {
      events: Chunk.append(data.events, event),
      state: checked.state,
      history: history.fold(data.history, event)
    }
  }
  return Effect.succeed(data)
}

const hex = (byte: number) => byte.toString(16).padStart(2, "0")

/** A random (version 4) UUID from the `Random` service, so seeded tests get stable ids. */
const randomSessionId: Effect.Effect<Ids.SessionId> = Effect.map(
  Effect.all(Array.from({ length: 16 }, () => Random.nextIntBetween(0, 256))),
  (bytes) => {
    bytes[6] = (bytes[6]! & 0x0f) | 0x40
    bytes[8] = (bytes[8]! & 0x3f) | 0x80
    const h = bytes.map(hex).join("")
    return Ids.SessionId.make(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`)
  }
)

const makeService = (
  id: Ids.SessionId,
  store: Store,
  initial: LogData
): Effect.Effect<Service> =>
  Effect.gen(function*() {
    const data = yield* Ref.make(initial)
    const lock = yield* Effect.makeSemaphore(1)
    const observers = yield* PubSub.unbounded<SessionEvent.SessionEvent>()

    // Untraced on purpose: the agent appends every stream chunk, and a span (with its stack capture) would cost
    // more than the append itself; turns and steps carry the spans.
    const appendEvent = Effect.fnUntraced(
      function*(input: SessionEvent.SessionEventInput) {
        const current = yield* Ref.get(data)
        const seq = current.state.nextSeq
        const time = yield* Clock.currentTimeMillis
        const encoded = encode({ ...input, seq, time })
        if (Either.isLeft(encoded)) {
          return yield* new SessionLogError({
            reason: "invalid-event",
            message: `the ${input.type} event is invalid: ${encoded.left}`,
            seq
          })
        }
        const { event } = encoded.right
        const checked = logCheck.step(current.state, event)
        if ("violation" in checked) {
          const { message, rule } = checked.violation
          return yield* new SessionLogError({ reason: rule, message, seq })
        }
        const next: LogData = {
          events: Chunk.append(current.events, event),
          state: checked.state,
          history: history.fold(current.history, event)
        }
        // The commit point: once the row is written, the memory state and the observers must follow it.
        yield* store.append(id, { events: [event], inbox: [] }).pipe(
          Effect.mapError(storeError(`the store refused ${event.type} at seq ${seq}`)),
          Effect.zipRight(Ref.set(data, next)),
          Effect.zipRight(PubSub.publish(observers, event)),
          Effect.uninterruptible
        )
        return event
      },
      // Uninterruptible, lock wait included: `Semaphore.take` counts a permit as taken while the waiter is still
      // interruptible, so an interruption at that instant would leak it and block every later append. The append
      // itself never waits on anything but the store.
      (effect) => Effect.uninterruptible(lock.withPermits(1)(effect))
    )

    return {
      id,
      // The appended event is the validated copy of `input` with `seq` and `time` added, so its `type` is
      // `input.type`; TypeScript cannot see that through the union, hence the cast.
      append: <E extends SessionEvent.SessionEventInput>(input: E) =>
        appendEvent(input) as Effect.Effect<
          Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>,
          SessionLogError
        >,
      events: Effect.map(Ref.get(data), (d) => Chunk.toReadonlyArray(d.events)),
      state: Effect.map(Ref.get(data), (d) => d.state),
      history: Effect.map(Ref.get(data), (d) => d.history),
      subscribe: PubSub.subscribe(observers),
      changes: Stream.fromPubSub(observers)
    } satisfies Service
  })

export const make = Effect.fn("SessionLog.make")(function*(options?: MakeOptions) {
  const store = yield* SessionStore
  const id = options?.id ?? (yield* randomSessionId)
  const seed = options?.seed ?? []
  const events: Array<SessionEvent.SessionEvent> = []
  for (const [index, candidate] of seed.entries()) {
    const encoded = encode(candidate)
    if (Either.isLeft(encoded)) return yield* invalidSeed(`seed event ${index} is invalid: ${encoded.left}`, index)
    events.push(encoded.right.event)
  }
  const initial = yield* checkContinuable(events)
  const createdAt = yield* Clock.currentTimeMillis
  yield* store.create({ id, version: 1, createdAt }, { events, inbox: [] }).pipe(
    Effect.mapError(storeError(`cannot create session ${JSON.stringify(id)}`))
  )
  return yield* makeService(id, store, initial)
})

export const open = Effect.fn("SessionLog.open")(function*(id: Ids.SessionId) {
  const store = yield* SessionStore
  const records = yield* store.load(id).pipe(
    Stream.runCollect,
    Effect.mapError(storeError(`cannot load session ${JSON.stringify(id)}`))
  )
  const events: Array<SessionEvent.SessionEvent> = []
  for (const record of records) {
    const decoded = decodeJson(record.text)
    if (Either.isLeft(decoded)) {
      return yield* invalidSeed(
        `stored record ${record.position} is not a session event: ${formatIssue(decoded.left)}`,
        events.length
      )
    }
    const event = decoded.right
    if (StoreRecords.isInboxRecord(event)) continue
    if (event.seq !== events.length) {
      return yield* invalidSeed(
        `stored record ${record.position} holds seq ${event.seq} where the log needs seq ${events.length}`,
        events.length
      )
    }
    events.push(event)
  }
  const initial = yield* checkContinuable(events)
  return yield* makeService(id, store, initial)
})
