/**
 * Listing, forking and deleting stored sessions (see the public `Sessions` module for the contracts).
 */
import type { Ids } from "@harness/domain"
import { SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Effect, Either, Schema, Stream } from "effect"
import { SessionLogError } from "../SessionLogError.js"
import type { ForkOptions, SessionInfo } from "../Sessions.js"
import { SessionStore, type SessionStoreError } from "../SessionStore.js"
import { randomSessionId } from "./logRecords.js"
import { make } from "./sessionLog.js"

const decodeJson = Schema.decodeEither(
  Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, StoreRecords.InboxRecord))
)

const storeError = (what: string) => (error: SessionStoreError) =>
  new SessionLogError({ reason: "store", message: `${what}: ${error.message} (${error.reason})` })

const infoOf = (summary: StoreRecords.SessionSummary): SessionInfo => {
  const { header } = summary
  const title = header.title ?? summary.firstPrompt
  return {
    id: header.id,
    createdAt: header.createdAt,
    ...(title === undefined ? {} : { title }),
    ...(header.parent === undefined ? {} : { parent: header.parent }),
    turns: summary.turns,
    events: summary.events,
    lastActivity: summary.lastActivity,
    bytes: summary.bytes
  }
}

export const list = Effect.flatMap(SessionStore, (store) =>
  store.list.pipe(
    Effect.map((summaries) => summaries.map(infoOf)),
    Effect.mapError(storeError("cannot list the sessions"))
  ))

export const damaged = Effect.flatMap(
  SessionStore,
  (store) => store.damaged.pipe(Effect.mapError(storeError("cannot list the damaged sessions")))
)

export const remove = (id: Ids.SessionId) =>
  Effect.flatMap(
    SessionStore,
    (store) => store.remove(id).pipe(Effect.mapError(storeError(`cannot delete session ${JSON.stringify(id)}`)))
  )

const boundaryError = (source: Ids.SessionId, message: string) =>
  new SessionLogError({ reason: "fork-boundary", message: `cannot fork session ${JSON.stringify(source)}: ${message}` })

interface Prefix {
  readonly events: Array<SessionEvent.SessionEvent>
  /** The seq of the last `turn/end` read. */
  readonly lastTurnEnd: number | undefined
  /** Why reading stopped early (a bad record: what follows it is not read). */
  readonly stopped: string | undefined
  /** The event at the requested boundary, once read. */
  readonly atBoundary: SessionEvent.SessionEvent | undefined
}

export const fork = Effect.fn("Sessions.fork")(function*(source: Ids.SessionId, options?: ForkOptions) {
  const store = yield* SessionStore
  const at = options?.at
  const prefix = yield* store.load(source).pipe(
    Stream.runFoldWhile(
      { events: [], lastTurnEnd: undefined, stopped: undefined, atBoundary: undefined } as Prefix,
      (acc) => acc.stopped === undefined && acc.atBoundary === undefined,
      (acc, record): Prefix => {
        const decoded = decodeJson(record.text)
        if (Either.isLeft(decoded)) return { ...acc, stopped: `stored record ${record.position} is not a record` }
        const value = decoded.right
        if (StoreRecords.isInboxRecord(value)) return acc
        if (value.seq !== acc.events.length) {
          return { ...acc, stopped: `stored record ${record.position} holds seq ${value.seq} out of order` }
        }
        acc.events.push(value)
        const lastTurnEnd = value.type === "turn/end" ? value.seq : acc.lastTurnEnd
        return { ...acc, lastTurnEnd, atBoundary: value.seq === at ? value : undefined }
      }
    ),
    Effect.mapError(storeError(`cannot load session ${JSON.stringify(source)}`))
  )
  let boundary: number
  if (at === undefined) {
    if (prefix.lastTurnEnd === undefined) {
      return yield* boundaryError(source, "it has no turn/end to fork at (OPEN_TURN)")
    }
    boundary = prefix.lastTurnEnd
  } else {
    const event = prefix.atBoundary
    if (event === undefined) {
      return yield* boundaryError(
        source,
        `it has no readable event at seq ${at}${prefix.stopped === undefined ? "" : ` (${prefix.stopped})`}`
      )
    }
    if (event.type !== "turn/end") {
      return yield* boundaryError(source, `seq ${at} is a ${event.type}, not a turn/end (OPEN_TURN)`)
    }
    boundary = at
  }
  const id = options?.id ?? (yield* randomSessionId)
  const child = yield* make({
    id,
    seed: prefix.events.slice(0, boundary + 1),
    parent: { id: source, seq: boundary },
    ...(options?.title === undefined ? {} : { title: options.title }),
    commit: { mode: "write-through" }
  })
  // The child is written whole: its lease is given up, so whoever continues it can take it.
  yield* child.close
  return id
})
