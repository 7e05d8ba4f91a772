/**
 * The typed client of a Harness server, derived from `HarnessApi` by `HttpApiClient`: each route is a method whose
 * arguments and answers are the route's schemas, and whose failures are the same error classes the server refused
 * with. `events` reads a session's Server-Sent Events as typed values.
 *
 * @since 0.0.0
 */
import { Sse } from "@effect/experimental"
import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import type { HttpClientError } from "@effect/platform"
import { AgentEvent, type Ids, SessionEvent } from "@harness/domain"
import { Duration, Effect, Option, Redacted, Ref, Schema, Stream } from "effect"
import type { ParseResult } from "effect"
import { Api } from "./HarnessApi.js"

/**
 * Where the server is and the token to send.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The server's origin, e.g. `http://127.0.0.1:8787`. */
  readonly baseUrl: string
  readonly token: Redacted.Redacted | string
}

const withToken = (token: Redacted.Redacted | string) =>
  HttpClient.mapRequest(HttpClientRequest.bearerToken(typeof token === "string" ? token : Redacted.value(token)))

/**
 * The client: `client.sessions.create({ payload })`, `client.agent.followup({ path: { id }, payload })`, …
 *
 * @example
 * ```ts
 * import { FetchHttpClient } from "@effect/platform"
 * import { Message } from "@harness/domain"
 * import { Client } from "@harness/server"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* Client.make({ baseUrl: "http://127.0.0.1:8787", token: "my-secret" })
 *   const session = yield* client.sessions.create({ payload: {} })
 *   return yield* client.agent.followup({ path: { id: session.id }, payload: { message: Message.make("hello") } })
 * }).pipe(Effect.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (options: Options) =>
  HttpApiClient.make(Api, { baseUrl: options.baseUrl, transformClient: withToken(options.token) })

/**
 * The client's type.
 *
 * @since 0.0.0
 * @category models
 */
export type Client = Effect.Effect.Success<ReturnType<typeof make>>

/**
 * One event of a session's stream: a durable event (with its seq), a live-only one, the stream's `ready` (the seq
 * it resumes after) or its `overflow` (the subscriber fell behind; reconnect after the last seq seen).
 *
 * @since 0.0.0
 * @category models
 */
export type StreamEvent =
  | { readonly _tag: "Durable"; readonly event: SessionEvent.SessionEvent }
  | { readonly _tag: "Live"; readonly event: AgentEvent.AgentEvent }
  | { readonly _tag: "Ready"; readonly after: number }
  | { readonly _tag: "Overflow"; readonly reason: string; readonly capacity: number }

const decodeDurable = Schema.decodeUnknown(Schema.parseJson(SessionEvent.SessionEvent))
const decodeLive = Schema.decodeUnknown(Schema.parseJson(AgentEvent.AgentEvent))
const Ready = Schema.parseJson(Schema.Struct({ after: Schema.Number }))
const Overflow = Schema.parseJson(Schema.Struct({ reason: Schema.String, capacity: Schema.Number }))

const decodeFrame = (frame: Sse.Event): Effect.Effect<StreamEvent, ParseResult.ParseError> => {
  switch (frame.event) {
    case "live":
      return Effect.map(decodeLive(frame.data), (event) => ({ _tag: "Live", event }) as const)
    case "ready":
      return Effect.map(Schema.decodeUnknown(Ready)(frame.data), ({ after }) => ({ _tag: "Ready", after }) as const)
    case "overflow":
      return Effect.map(Schema.decodeUnknown(Overflow)(frame.data), (o) => ({ _tag: "Overflow", ...o }) as const)
    default:
      return Effect.map(decodeDurable(frame.data), (event) => ({ _tag: "Durable", event }) as const)
  }
}

/**
 * A session's events after `lastEventId` (from the start when absent), decoded, until the server ends the stream.
 *
 * @since 0.0.0
 * @category constructors
 */
export const events = (
  options: Options & { readonly session: Ids.SessionId; readonly lastEventId?: number | undefined }
): Stream.Stream<
  StreamEvent,
  HttpClientError.HttpClientError | ParseResult.ParseError | Sse.SseError,
  HttpClient.HttpClient
> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const client = (yield* HttpClient.HttpClient).pipe(withToken(options.token), HttpClient.filterStatusOk)
    const request = HttpClientRequest.get(
      new URL(`/sessions/${encodeURIComponent(options.session)}/events`, options.baseUrl)
    ).pipe(
      HttpClientRequest.setHeader("accept", "text/event-stream"),
      options.lastEventId === undefined
        ? (r) => r
        : HttpClientRequest.setHeader("last-event-id", String(options.lastEventId))
    )
    const response = yield* client.execute(request)
    return response.stream.pipe(
      Stream.decodeText(),
      Stream.pipeThroughChannel(Sse.makeChannel()),
      Stream.mapEffect(decodeFrame)
    )
  }))

/**
 * A session's events as {@link events} gives them, followed across dropped connections: when a connection ends
 * before `agent/disposed` (the server was killed, the network went away, the subscriber overflowed), it reconnects
 * with `Last-Event-ID` set to the last durable seq received, waiting 100 ms doubling up to 2 s between attempts (on
 * `Clock`), at most `reconnects` times in a row (default 20; a connection that delivered a frame resets the count).
 *
 * Contract: the durable events come in seq order with no gap and no duplicate across reconnections (the server
 * resumes after the given seq); each connection starts with its own `Ready`. Live-only events sent while no
 * connection was open are not resent (they are not in the log). Ends after `agent/disposed`; fails with the last
 * connection's failure once the attempts run out.
 *
 * @since 0.0.0
 * @category constructors
 */
export const follow = (
  options: Options & {
    readonly session: Ids.SessionId
    readonly lastEventId?: number | undefined
    readonly reconnects?: number | undefined
  }
): Stream.Stream<
  StreamEvent,
  HttpClientError.HttpClientError | ParseResult.ParseError | Sse.SseError,
  HttpClient.HttpClient
> =>
  Stream.unwrap(Effect.gen(function*() {
    const last = yield* Ref.make(options.lastEventId)
    const disposed = yield* Ref.make(false)
    const limit = options.reconnects ?? 20
    const record = (event: StreamEvent) =>
      event._tag === "Durable"
        ? Ref.set(last, event.event.seq)
        : event._tag === "Live" && event.event.type === "agent/disposed"
        ? Ref.set(disposed, true)
        : Effect.void
    /** One connection, then (unless the agent was disposed) the next, `attempt` counting those that gave nothing. */
    const connect = (attempt: number): Stream.Stream<StreamEvent, FollowError, HttpClient.HttpClient> =>
      Stream.unwrap(Effect.gen(function*() {
        const lastEventId = yield* Ref.get(last)
        const failure = yield* Ref.make<Option.Option<FollowError>>(Option.none())
        const received = yield* Ref.make(false)
        const one = events({ ...options, lastEventId }).pipe(
          Stream.tap((event) => Effect.zipRight(Ref.set(received, true), record(event))),
          Stream.catchAll((e) => Stream.drain(Stream.fromEffect(Ref.set(failure, Option.some(e)))))
        )
        const next = Stream.unwrap(Effect.gen(function*() {
          if (yield* Ref.get(disposed)) return Stream.empty
          const tries = (yield* Ref.get(received)) ? 1 : attempt + 1
          if (tries > limit) {
            return Option.match(yield* Ref.get(failure), { onNone: () => Stream.empty, onSome: Stream.fail })
          }
          yield* Effect.sleep(Duration.min(Duration.millis(100 * 2 ** (tries - 1)), Duration.seconds(2)))
          return connect(tries)
        }))
        return Stream.concat(one, next)
      }))
    return connect(0)
  }))

type FollowError = HttpClientError.HttpClientError | ParseResult.ParseError | Sse.SseError
