/**
 * Shared pieces of the cluster tests: ids, a prompt, the session's durable events read back from its store, and a
 * schema round trip of an RPC's payload and answer through JSON.
 */
import type { Rpc } from "@effect/rpc"
import { assert } from "@effect/vitest"
import { Ids, Message, SessionEvent, Store } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { Chunk, Effect, Schema, Stream } from "effect"
import type { AgentEntity } from "../src/index.js"

export const sessionId = Ids.SessionId.make("s-1")

export const mid = (id: string) => Ids.AgentMessageId.make(id)

export const prompt = (text: string) => Message.make(text)

const decodeRecord = Schema.decodeSync(Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord)))

/** Every record the store holds for the session, decoded, in order: events and inbox records. */
export const storedRecords = (store: SessionStore.Service, id: Ids.SessionId = sessionId) =>
  store.load(id).pipe(
    Stream.map((record) => decodeRecord(record.text)),
    Stream.runCollect,
    Effect.map(Chunk.toReadonlyArray)
  )

/** The session's durable events as the store holds them. */
export const storedEvents = (store: SessionStore.Service, id: Ids.SessionId = sessionId) =>
  Effect.map(
    storedRecords(store, id),
    (records) => records.filter((r): r is SessionEvent.SessionEvent => !Store.isInboxRecord(r))
  )

/** How each of the session's stored turns ended, in order. */
export const turnEnds = (store: SessionStore.Service, id: Ids.SessionId = sessionId) =>
  Effect.map(
    storedEvents(store, id),
    (events) => events.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : [])
  )

/**
 * Encodes an RPC's payload and its answer (an `Exit`) to JSON text and decodes them back, asserting that encoding the
 * decoded values gives the same JSON: what a runner and a client in two processes would exchange.
 */
export const roundTrip = (
  rpc: AgentEntity.Rpcs,
  payload: unknown,
  exit: unknown
) =>
  Effect.gen(function*() {
    const any = rpc as unknown as Rpc.AnyWithProps
    const payloadSchema = any.payloadSchema as Schema.Schema<unknown, unknown>
    const exitSchema = Schema.Exit({
      success: any.successSchema as Schema.Schema<unknown, unknown>,
      failure: any.errorSchema as Schema.Schema<unknown, unknown>,
      defect: Schema.Defect
    })
    const through = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
      Effect.gen(function*() {
        const json = JSON.stringify(yield* Schema.encodeUnknown(schema)(value))
        const decoded = yield* Schema.decodeUnknown(schema)(JSON.parse(json))
        assert.strictEqual(JSON.stringify(yield* Schema.encodeUnknown(schema)(decoded)), json, any._tag)
      })
    yield* through(payloadSchema, payload)
    yield* through(exitSchema, exit)
  })
