/**
 * An agent on a Harness server, as the same `Agent.Service` an in-process agent is: every operation is its route
 * (through the typed `Client`), the live events are the session's Server-Sent Events, followed across dropped
 * connections with `Last-Event-ID`. Code written against `Agent.Service` (the CLI's `run` and `chat`) runs
 * unchanged against a server (ADR 0058).
 *
 * @since 0.0.0
 */
import type { HttpClient } from "@effect/platform"
import type { Agent } from "@harness/agent"
import type { AgentEvent, Ids, Operations, SessionEvent } from "@harness/domain"
import { Operations as Ops } from "@harness/domain"
import type { Scope } from "effect"
import type { Redacted } from "effect"
import { Deferred, Effect, Option, Queue, Schema, Stream } from "effect"
import * as Client from "./Client.js"

/**
 * The remote agent could not do what was asked for a reason that is not the operation's own: the server cannot be
 * reached, it refused the token (`refused`: 401, 403, 429), the session is not there (`not-found`), or it answered
 * something this client cannot read (`decode`).
 *
 * Contract: `RemoteAgent.make` fails with it; once made, an operation that meets it dies with it (the
 * `Agent.Service` failures are the operations' own), and the caller maps it at its edge.
 *
 * @since 0.0.0
 * @category errors
 */
export class RemoteError extends Schema.TaggedError<RemoteError>("@harness/server/RemoteError")("RemoteError", {
  reason: Schema.Literal("unreachable", "refused", "not-found", "decode"),
  message: Schema.String
}) {}

/**
 * Where the agent is: the server, the token, and the session (created when absent).
 *
 * - `reconnects`: how many times in a row the event stream reconnects after a dropped connection before the
 *   subscription dies with `RemoteError` (default 20, spaced 100 ms doubling up to 2 s, on `Clock`).
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  readonly baseUrl: string
  readonly token: Redacted.Redacted
  readonly session?: Ids.SessionId | undefined
  readonly title?: string | undefined
  readonly reconnects?: number | undefined
}

/** A failure that is not one of the operation's own, as a `RemoteError`. */
const remoteError = (e: unknown): RemoteError => {
  if (e instanceof RemoteError) return e
  const tag = typeof e === "object" && e !== null && "_tag" in e ? String(e._tag) : ""
  const message = typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e)
  switch (tag) {
    case "Unauthorized":
    case "Forbidden":
    case "TooManyRequests":
    case "PayloadTooLarge":
      return new RemoteError({ reason: "refused", message: `the server refused: ${message}` })
    case "SessionNotFound":
      return new RemoteError({ reason: "not-found", message })
    case "ParseError":
    case "ResponseError":
      return new RemoteError({ reason: "decode", message: `the server's answer cannot be read: ${message}` })
    default:
      return new RemoteError({ reason: "unreachable", message: `the server cannot be reached: ${message}` })
  }
}

/**
 * The operation's own failures pass; any other dies with a `RemoteError`.
 */
const own = <S extends Schema.Schema.AnyNoContext>(failure: S) => {
  const is = Schema.is(failure)
  return <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, Schema.Schema.Type<S>, R> =>
    Effect.catchAll(effect, (e) => is(e) ? Effect.fail(e) : Effect.die(remoteError(e)))
}

/**
 * The agent of a session on a server. Checks the server, the token and the session first (creating the session
 * when `options.session` is absent), failing with `RemoteError`.
 *
 * Contract: each operation is one request, answering as the in-process agent would (its failures are the
 * operation's own schemas). `subscribe` is subscribed when it returns (the server's `ready`) and starts after the
 * last durable event there was; the durable events come with no gap and no duplicate across dropped connections
 * (resumed with `Last-Event-ID`); live-only events of the time a connection was down are not resent. It ends after
 * `agent/disposed`. `whenIdle` waits for the server's agent to report `idle`; `acceptsNextStep` is the server's
 * status being `running` (the server has no finer predicate). `awaitReceipt` asks `receipt` again after each durable
 * event until the receipt is final.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options: Options
): Effect.Effect<Agent.Service, RemoteError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const http = yield* Effect.context<HttpClient.HttpClient>()
    const client = yield* Client.make({ baseUrl: options.baseUrl, token: options.token })
    const info = options.session === undefined
      ? yield* Effect.mapError(
        client.sessions.create({ payload: options.title === undefined ? {} : { title: options.title } }),
        remoteError
      )
      : yield* Effect.mapError(client.sessions.show({ path: { id: options.session } }), remoteError)
    const id = info.id
    const path = { id }

    const snapshot = (tail: number) =>
      client.sessions.snapshot({ path, urlParams: { tail } }).pipe(Effect.orDieWith(remoteError))

    const subscribe: Effect.Effect<Queue.Dequeue<AgentEvent.AgentEvent>, never, Scope.Scope> = Effect.gen(
      function*() {
        const { lastSeq } = yield* snapshot(1)
        const queue = yield* Effect.acquireRelease(Queue.unbounded<AgentEvent.AgentEvent>(), Queue.shutdown)
        const ready = yield* Deferred.make<void>()
        yield* Client.follow({
          baseUrl: options.baseUrl,
          token: options.token,
          session: id,
          lastEventId: lastSeq,
          reconnects: options.reconnects
        }).pipe(
          Stream.tap((event) => event._tag === "Ready" ? Deferred.succeed(ready, undefined) : Effect.void),
          Stream.filterMap((event): Option.Option<AgentEvent.AgentEvent> => {
            switch (event._tag) {
              case "Durable":
                return Option.some({ type: "session/event", event: event.event })
              case "Live":
                return Option.some(event.event)
              default:
                return Option.none()
            }
          }),
          Stream.takeUntil((event) => event.type === "agent/disposed"),
          Stream.runForEach((event) => Queue.offer(queue, event)),
          Effect.orDieWith(remoteError),
          Effect.provide(http),
          Effect.forkScoped
        )
        yield* Deferred.await(ready)
        return queue
      }
    )

    const status = Effect.map(snapshot(1), (s) => s.status)

    const whenIdle: Effect.Effect<void> = Effect.scoped(Effect.gen(function*() {
      const events = yield* subscribe
      if ((yield* status) === "idle") return
      while (true) {
        const event = yield* Queue.take(events)
        if (event.type === "agent/disposed") return
        if (event.type === "agent/status" && event.status === "idle") return
      }
    }))

    const receipt = (message: Ids.AgentMessageId) =>
      client.agent.receipt({ path, payload: { id: message } }).pipe(own(Ops.Receipt.failure))

    const awaitReceipt = (message: Ids.AgentMessageId) =>
      Effect.scoped(Effect.gen(function*() {
        const events = yield* subscribe
        while (true) {
          const now = yield* receipt(message)
          if (now._tag !== "pending" && now._tag !== "staged") return now
          let event = yield* Queue.take(events)
          while (event.type !== "session/event" && event.type !== "agent/disposed") event = yield* Queue.take(events)
          if (event.type === "agent/disposed") return yield* receipt(message)
        }
      }))

    const batch = (operations: Operations.Batch["operations"]) =>
      client.agent.batch({ path, payload: { operations } }).pipe(own(Ops.Batch.failure))

    const service: Agent.Service = {
      id,
      send: (message, sendOptions) =>
        client.agent.send({ path, payload: { message, options: sendOptions } }).pipe(
          own(Ops.Send.failure)
        ),
      followup: (message, preset) =>
        client.agent.followup({ path, payload: { message, options: preset } }).pipe(
          own(Ops.Followup.failure)
        ),
      steer: (message, preset) =>
        client.agent.steer({ path, payload: { message, options: preset } }).pipe(own(Ops.Steer.failure)),
      inject: (message, preset) =>
        client.agent.inject({ path, payload: { message, options: preset } }).pipe(
          own(Ops.Inject.failure)
        ),
      batch,
      sendAll: (items) =>
        Effect.map(
          batch(items.map((send) => ({ send }))),
          (results) => results.flatMap((result) => result === undefined ? [] : [result])
        ),
      cancel: (cause, cancelOptions) =>
        client.agent.cancel({ path, payload: { cause, options: cancelOptions } }).pipe(
          own(Ops.Cancel.failure)
        ),
      retry: client.agent.retry({ path }).pipe(own(Ops.Retry.failure)),
      compact: (compactOptions) =>
        client.agent.compact({ path, payload: compactOptions === undefined ? {} : { options: compactOptions } }).pipe(
          own(Ops.Compact.failure)
        ),
      inbox: client.agent.inbox({ path }).pipe(Effect.orDieWith(remoteError)),
      withdraw: (message) => client.agent.withdraw({ path, payload: { id: message } }).pipe(own(Ops.Withdraw.failure)),
      edit: (message, content) =>
        client.agent.edit({ path, payload: { id: message, message: content } }).pipe(own(Ops.Edit.failure)),
      move: (message, position) =>
        client.agent.move({ path, payload: { id: message, position } }).pipe(own(Ops.Move.failure)),
      promote: (message) => client.agent.promote({ path, payload: { id: message } }).pipe(own(Ops.Promote.failure)),
      demote: (message) => client.agent.demote({ path, payload: { id: message } }).pipe(own(Ops.Demote.failure)),
      receipt,
      awaitReceipt,
      approvals: client.agent.approvals({ path }).pipe(Effect.orDieWith(remoteError)),
      approve: (callId, answer) =>
        client.agent.approve({ path, payload: { callId, answer } }).pipe(own(Ops.Approve.failure)),
      whenIdle,
      status,
      acceptsNextStep: Effect.map(status, (now) => now === "running"),
      subscribe,
      events: Stream.unwrapScoped(Effect.map(subscribe, Stream.fromQueue)).pipe(
        Stream.takeUntil((event) => event.type === "agent/disposed")
      ),
      log: Effect.map(snapshot(Number.MAX_SAFE_INTEGER), (s): ReadonlyArray<SessionEvent.SessionEvent> => s.events)
    }
    return service
  })
