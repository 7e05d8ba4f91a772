/**
 * "How to add a store" (see the README), carried out: a `SessionStore` over `@effect/platform`'s `KeyValueStore`,
 * written only from the contract and the backend helpers of `SessionStore`, and held to the same conformance suite
 * as every shipped backend. Keys: `meta/<id>` (header, figures, lease token, snapshot head), `record/<id>/<position>`
 * (one encoded record each, so `load` streams), `message/<id>/<messageId>` (the message-id index), `body/<id>` (the
 * snapshot's body), `sessions` (ids in creation order) and `tokens` (the last lease token).
 */
import { KeyValueStore } from "@effect/platform"
import { Ids, Store } from "@harness/domain"
import { Clock, Effect, Layer, Option, Schema, Stream } from "effect"
import * as os from "node:os"
import * as SessionStore from "../src/SessionStore.js"
import { conformance } from "./conformance.js"

const Figures = Schema.Struct({
  records: Schema.Number,
  events: Schema.Number,
  turns: Schema.Number,
  bytes: Schema.Number,
  lastActivity: Schema.UndefinedOr(Schema.Number),
  firstPrompt: Schema.UndefinedOr(Schema.Struct({ text: Schema.String, position: Schema.Number }))
})
const Head = Schema.Struct({ seq: Schema.Number, position: Schema.Number, head: Schema.String })
const Meta = Schema.Struct({
  header: Store.SessionHeader,
  figures: Figures,
  token: Schema.UndefinedOr(Schema.Number),
  snapshot: Schema.UndefinedOr(Head)
})
type Meta = typeof Meta.Type
const Encoded = Schema.Struct({
  position: Schema.Number,
  text: Schema.String,
  bytes: Schema.Number,
  time: Schema.Number,
  kind: Schema.Literal("inbox", "event", "turn"),
  messageId: Schema.UndefinedOr(Ids.AgentMessageId),
  preview: Schema.UndefinedOr(Schema.String)
})

const makeKeyValueSessionStore = Effect.gen(function*() {
  const kv = yield* KeyValueStore.KeyValueStore
  const metas = kv.forSchema(Meta)
  const records = kv.forSchema(Encoded)
  const bodies = kv.forSchema(Schema.Struct({ ...Head.fields, body: Schema.String }))
  const ids = kv.forSchema(Schema.Array(Ids.SessionId))
  const tokens = kv.forSchema(Schema.Number)
  const lock = yield* Effect.makeSemaphore(1)
  const self = { pid: process.pid, host: os.hostname() }

  const key = (id: string) => JSON.stringify(id)
  const fail = (id: Ids.SessionId, reason: SessionStore.SessionStoreErrorReason, message: string) =>
    Effect.fail(new SessionStore.SessionStoreError({ reason, message, id }))
  /** Every operation as one critical section, its platform and decoding failures as `Io`. */
  const atomic = <A, E>(id: Ids.SessionId | undefined, effect: Effect.Effect<A, E>) =>
    Effect.mapError(
      lock.withPermits(1)(effect),
      (e) =>
        e instanceof SessionStore.SessionStoreError
          ? e
          : new SessionStore.SessionStoreError({
            reason: "Io",
            message: String(e),
            ...(id === undefined ? {} : { id })
          })
    )
  const metaOf = (id: Ids.SessionId) =>
    Effect.flatMap(
      metas.get(`meta/${key(id)}`),
      Option.match({
        onNone: () => fail(id, "NotFound", `session ${JSON.stringify(id)} is not stored`),
        onSome: Effect.succeed
      })
    )
  const setMeta = (meta: Meta) => metas.set(`meta/${key(meta.header.id)}`, meta)
  /** The fence (ADR 0044): a write carries the session's current lease, or none while nobody holds one. */
  const fenced = (id: Ids.SessionId, lease: SessionStore.Lease | undefined) =>
    Effect.flatMap(
      metaOf(id),
      (meta) =>
        meta.token === (lease?.id === id ? lease.token : lease === undefined ? undefined : -1)
          ? Effect.succeed(meta)
          : fail(id, "Busy", `session ${JSON.stringify(id)} is leased by another writer`)
    )
  const putRecords = (id: Ids.SessionId, encoded: ReadonlyArray<SessionStore.EncodedRecord>) =>
    Effect.forEach(encoded, (record) =>
      Effect.zipRight(
        records.set(`record/${key(id)}/${record.position}`, record),
        record.messageId === undefined ? Effect.void : kv.set(`message/${key(id)}/${key(record.messageId)}`, "1")
      ), { discard: true })
  const dropRecord = (id: Ids.SessionId, record: SessionStore.EncodedRecord) =>
    Effect.zipRight(
      kv.remove(`record/${key(id)}/${record.position}`),
      record.messageId === undefined ? Effect.void : kv.remove(`message/${key(id)}/${key(record.messageId)}`)
    )
  /** A write of session `id`: a `Conflict` for `issue`, else `use` of the session under the fence. */
  const fencedWrite = <A, E>(
    id: Ids.SessionId,
    issue: string | undefined,
    lease: SessionStore.Lease | undefined,
    use: (meta: Meta) => Effect.Effect<A, E>
  ) => atomic(id, issue !== undefined ? fail(id, "Conflict", issue) : Effect.flatMap(fenced(id, lease), use))
  const sessionIds = Effect.map(ids.get("sessions"), Option.getOrElse((): ReadonlyArray<Ids.SessionId> => []))

  const create: SessionStore.Service["create"] = (header, commit = { events: [], inbox: [] }) =>
    atomic(
      header.id,
      Effect.gen(function*() {
        const id = header.id
        const issue = SessionStore.contiguityIssue(0, commit)
        if (issue !== undefined) return yield* fail(id, "Conflict", issue)
        if (yield* kv.has(`meta/${key(id)}`)) return yield* fail(id, "AlreadyExists", `session ${id} already exists`)
        const encoded = SessionStore.encodeCommit(commit, 0)
        yield* putRecords(id, encoded)
        yield* setMeta({ header, figures: SessionStore.figuresOf(encoded), token: undefined, snapshot: undefined })
        yield* ids.set("sessions", [...(yield* sessionIds), id])
      })
    )

  const append: SessionStore.Service["append"] = (id, commit, options) =>
    atomic(
      id,
      Effect.gen(function*() {
        const meta = yield* fenced(id, options?.lease)
        const issue = SessionStore.contiguityIssue(meta.figures.events, commit)
        if (issue !== undefined) return yield* fail(id, "Conflict", issue)
        const encoded = SessionStore.encodeCommit(commit, meta.figures.records)
        yield* putRecords(id, encoded)
        yield* setMeta({ ...meta, figures: SessionStore.addFigures(meta.figures, SessionStore.figuresOf(encoded)) })
      })
    )

  const load: SessionStore.Service["load"] = (id, options) =>
    Stream.unwrap(atomic(
      id,
      Effect.map(metaOf(id), (meta) =>
        Stream.range((options?.after ?? -1) + 1, meta.figures.records - 1).pipe(
          Stream.mapEffect((position) =>
            atomic(id, Effect.flatten(records.get(`record/${key(id)}/${position}`))).pipe(
              Effect.map((record) => ({ position, text: record.text }))
            )
          )
        ))
    ))

  const truncate: SessionStore.Service["truncate"] = (id, position, options) =>
    fencedWrite(id, SessionStore.positionIssue(position), options?.lease, (meta) =>
      Effect.gen(function*() {
        const kept: Array<SessionStore.EncodedRecord> = []
        for (let at = 0; at < meta.figures.records; at++) {
          const record = yield* Effect.flatten(records.get(`record/${key(id)}/${at}`))
          if (at < position) kept.push(record)
          else yield* dropRecord(id, record)
        }
        const snapshot = meta.snapshot !== undefined && meta.snapshot.position < position ? meta.snapshot : undefined
        yield* setMeta({ ...meta, figures: SessionStore.figuresOf(kept), snapshot })
      }))

  const lease: SessionStore.Service["lease"] = (id) =>
    atomic(
      id,
      Effect.gen(function*() {
        const meta = yield* metaOf(id)
        const token = Option.getOrElse(yield* tokens.get("tokens"), () => 0) + 1
        yield* tokens.set("tokens", token)
        yield* setMeta({ ...meta, token })
        const release = atomic(
          id,
          Effect.flatMap(
            metas.get(`meta/${key(id)}`),
            Option.match({
              onNone: () => Effect.void,
              onSome: (now) => now.token === token ? setMeta({ ...now, token: undefined }) : Effect.void
            })
          )
        ).pipe(Effect.ignore)
        const since = yield* Clock.currentTimeMillis
        return { id, token, holder: { ...self, since }, release }
      })
    )

  const remove: SessionStore.Service["remove"] = (id) =>
    atomic(
      id,
      Effect.gen(function*() {
        const meta = yield* metaOf(id)
        for (let at = 0; at < meta.figures.records; at++) {
          yield* dropRecord(id, yield* Effect.flatten(records.get(`record/${key(id)}/${at}`)))
        }
        yield* kv.remove(`body/${key(id)}`)
        yield* kv.remove(`meta/${key(id)}`)
        yield* ids.set("sessions", (yield* sessionIds).filter((other) => other !== id))
      })
    )

  const saveSnapshot: SessionStore.Service["saveSnapshot"] = (id, snapshot, options) =>
    fencedWrite(id, SessionStore.snapshotIssue(snapshot), options?.lease, (meta) =>
      Effect.gen(function*() {
        if (snapshot.position >= meta.figures.records) {
          return yield* fail(id, "Conflict", `the session stores ${meta.figures.records} records`)
        }
        const { body: _, ...head } = snapshot
        yield* bodies.set(`body/${key(id)}`, snapshot)
        yield* setMeta({ ...meta, snapshot: head })
      }))

  const loadSnapshot: SessionStore.Service["loadSnapshot"] = (id) =>
    atomic(
      id,
      Effect.map(metaOf(id), (meta) =>
        Option.map(Option.fromNullable(meta.snapshot), (head): SessionStore.SnapshotHead => ({
          ...head,
          // The body saved with this head, while the session's snapshot is still this one.
          body: atomic(
            id,
            Effect.gen(function*() {
              const now = yield* metas.get(`meta/${key(id)}`)
              const current = Option.flatMap(now, (m) =>
                Option.fromNullable(m.snapshot))
              const body = yield* bodies.get(`body/${key(id)}`)
              return Option.filter(
                Option.map(body, (saved) => saved.body),
                () =>
                  Option.exists(
                    current,
                    (c) => c.seq === head.seq && c.position === head.position && c.head === head.head
                  )
              )
            })
          )
        })))
    )

  const service: SessionStore.Service = {
    create,
    append,
    load,
    header: (id) => atomic(id, Effect.map(metaOf(id), (meta) => meta.header)),
    truncate,
    list: atomic(
      undefined,
      Effect.flatMap(sessionIds, (all) =>
        Effect.forEach(
          all,
          (id) => Effect.map(metaOf(id), (meta) => SessionStore.summaryOf(meta.header, meta.figures))
        ))
    ),
    damaged: Effect.succeed([]),
    lease,
    remove,
    hasMessage: (id, messageId) =>
      atomic(id, Effect.zipRight(metaOf(id), kv.has(`message/${key(id)}/${key(messageId)}`))),
    saveSnapshot,
    loadSnapshot
  }
  return service
})

const layer = Layer.effect(SessionStore.SessionStore, makeKeyValueSessionStore).pipe(
  Layer.provide(KeyValueStore.layerMemory)
)

conformance("a toy store over KeyValueStore", layer, { largeRecords: 1_000 })
