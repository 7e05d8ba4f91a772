/**
 * The client side of an agent entity: the agent's operations with the local agent's signatures, sent to the session's
 * entity wherever the cluster runs it. Every message id is minted here, before the message leaves, so a retried or
 * redelivered message is the same message (R184); mutating operations from one `RemoteAgent` go out one at a time in
 * call order (R191). Its event streams follow the session across runner deaths and shard moves, resubscribing after
 * the last durable seq they delivered (R214). What the cluster's transport can add to an operation's failures is a
 * `RemoteAgentError`.
 *
 * @since 0.0.0
 */
import type { Sharding } from "@effect/cluster"
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import type { RpcClient } from "@effect/rpc"
import type { Agent } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { Ids, Operations } from "@harness/domain"
import { Cause, Effect, Predicate, Ref, Schedule, Schema, Stream } from "effect"
import * as AgentEntity from "./AgentEntity.js"
import type { EventsElement } from "./internal/protocol.js"

/**
 * The cluster could not carry an operation: the entity's mailbox was full (`MailboxFull`), the same message is being
 * processed already (`AlreadyProcessingMessage`), or the message storage failed (`PersistenceError`). A mutating
 * operation that failed this way may still have been stored: retry it with the same id. An event stream fails with
 * `EventsCut` when its subscription kept ending or missing durable events (its runner stopping or dying, its shard
 * moving) until its resubscription schedule gave up.
 *
 * @since 0.0.0
 * @category errors
 */
export class RemoteAgentError extends Schema.TaggedError<RemoteAgentError>("@harness/cluster/RemoteAgentError")(
  "RemoteAgentError",
  {
    reason: Schema.Literal("MailboxFull", "AlreadyProcessingMessage", "PersistenceError", "EventsCut"),
    message: Schema.String
  }
) {}

/**
 * What an operation answers remotely: the local answer, or its failure, or a {@link RemoteAgentError}.
 *
 * @since 0.0.0
 * @category models
 */
export type Result<O extends Operations.Operation> = Effect.Effect<
  Operations.Success<O>,
  Operations.Failure<O> | RemoteAgentError
>

/** The members of `Agent.Service` that run one of the agent's operations. */
type OperationName =
  | "send"
  | "followup"
  | "steer"
  | "inject"
  | "batch"
  | "cancel"
  | "retry"
  | "withdraw"
  | "edit"
  | "move"
  | "promote"
  | "demote"
  | "compact"
  | "inbox"
  | "receipt"
  | "awaitReceipt"
  | "approvals"
  | "approve"

/** A local operation's signature, with {@link RemoteAgentError} among its failures. */
type Remote<F> = F extends (...args: infer A) => Effect.Effect<infer S, infer E, infer R>
  ? (...args: A) => Effect.Effect<S, E | RemoteAgentError, R>
  : F extends Effect.Effect<infer S, infer E, infer R> ? Effect.Effect<S, E | RemoteAgentError, R>
  : never

/** The local agent's operations as a remote agent runs them. */
type RemoteOperations = { readonly [K in OperationName]: Remote<Agent.Service[K]> }

/**
 * A remote agent: the local agent's operations (same arguments, same answers, same failures plus
 * {@link RemoteAgentError}), its status, `whenIdle` and live events.
 *
 * Contract: the id of every mutating operation's message is minted here, before the message is sent — a send's is
 * `options.id` or a fresh one, and each send of a `batch` gets its own — so a retried or redelivered message is the
 * same message: a redelivered `approve` finds the call answered and changes nothing (R246). Give `cancel` an
 * `ifTurn` so that a redelivery cannot cancel a later turn (R185).
 *
 * @since 0.0.0
 * @category models
 */
export interface Service extends RemoteOperations {
  readonly id: Ids.SessionId
  readonly status: Effect.Effect<AgentEvent.AgentStatus, RemoteAgentError>
  readonly whenIdle: Effect.Effect<void, RemoteAgentError>
  /**
   * The live events from now: from the moment the entity subscribes (the first event is the status at that instant),
   * followed across runner deaths and shard moves.
   *
   * Contract: every durable event (`session/event`) appended after the entity subscribed — after the log's last seq
   * then, which the opening `agent/status` tells the client — comes exactly once and in seq order, with no gap,
   * however often the subscription is cut, even before its first durable event: it resubscribes after the last
   * durable seq it delivered, or after that anchor (R225, R214, R215). Each resubscription opens with an
   * `agent/status` (the status then); live-only events (text deltas, statuses, inbox notices) of a cut are lost, and a
   * runner's `agent/disposed` is not passed on (the session goes on elsewhere). It never ends by itself; it fails
   * with `EventsCut` (or the transport's last failure) once the resubscription schedule gives up.
   */
  readonly events: Stream.Stream<AgentEvent.AgentEvent, RemoteAgentError>
  /**
   * The explicit resume: the status, then every durable event after seq `after` once and in seq order (from the log,
   * then live, R254), then the live events, followed across cuts as {@link events} is. `eventsAfter(-1)` gives the
   * whole log (seqs start at 0).
   *
   * Contract: every durable event with a seq above `after` comes exactly once, in seq order, with no gap, across
   * runner deaths and shard moves (R214).
   */
  readonly eventsAfter: (after: number) => Stream.Stream<AgentEvent.AgentEvent, RemoteAgentError>
}

/**
 * How a remote agent runs.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /**
   * When to resubscribe an event stream whose subscription failed or ended (R215): fed the failure, and restarted
   * once a new subscription delivers its first event. The default waits 100 ms doubling up to 2 s, at most 20 times
   * in a row.
   */
  readonly resubscribe?: Schedule.Schedule<unknown, RemoteAgentError> | undefined
}

const defaultResubscribe: Schedule.Schedule<unknown, RemoteAgentError> = Schedule.exponential("100 millis").pipe(
  Schedule.either(Schedule.spaced("2 seconds")),
  Schedule.intersect(Schedule.recurs(20))
)

/**
 * What the cluster's transport adds to an entity client's failures.
 *
 * @since 0.0.0
 * @category models
 */
export type TransportError = MailboxFull | AlreadyProcessingMessage | PersistenceError

/**
 * An entity client of the protocol: `AgentEntity.AgentEntity.client`'s, or `Entity.makeTestClient`'s.
 *
 * @since 0.0.0
 * @category models
 */
export type Client = RpcClient.RpcClient<AgentEntity.Rpcs, TransportError>

const isTransport = (e: unknown): e is TransportError =>
  Predicate.isTagged(e, "MailboxFull") || Predicate.isTagged(e, "AlreadyProcessingMessage") ||
  Predicate.isTagged(e, "PersistenceError")

const toRemoteError = (e: TransportError) =>
  new RemoteAgentError({ reason: e._tag, message: `the cluster could not carry the operation: ${e.message}` })

const remote = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, TransportError>> | RemoteAgentError, R> =>
  Effect.catchIf(effect, (e): e is Extract<E, TransportError> => isTransport(e), (e) => Effect.fail(toRemoteError(e)))

const mint = Ids.randomUuid(Ids.AgentMessageId)

const cut = (message: string) => new RemoteAgentError({ reason: "EventsCut", message })

/**
 * The entity's events, resubscribed after every cut (R214, R215). One subscription asks for the durable events after
 * `last` (the last durable seq delivered or anchored, or none yet: from now). Its opening `agent/status` says where
 * its durable events start (`after`, R225): with none known yet, that is the anchor (so a cut before the first durable
 * event resubscribes from there); above `last`, the subscription skipped durable events (the cluster re-sent a
 * request from now to a new host by itself) and is cut at once. A subscription is also cut when it fails (a
 * transport failure, or the interruption a stopping entity answers with, or a defect of the transport), when it ends
 * (its runner's entity was disposed), or when a durable event skips a seq (the cluster re-sent the request with its
 * first payload: a durable event appended in between would be missing). A durable event at or below `last` is a
 * repeat and is dropped. The opening is passed on as a plain `agent/status`. A runner that sends no `after` (an
 * older one) leaves the stream anchored at its first durable event, as before R225.
 */
const follow = (
  client: Client,
  schedule: Schedule.Schedule<unknown, RemoteAgentError>,
  from: number | undefined
): Stream.Stream<AgentEvent.AgentEvent, RemoteAgentError> =>
  Stream.unwrap(Effect.map(Ref.make(from), (last) => {
    const admit = (event: typeof EventsElement.Type): Effect.Effect<boolean, RemoteAgentError> => {
      if (event.type === "agent/status") {
        const start = "after" in event ? event.after : undefined
        if (start === undefined) return Effect.succeed(true)
        return Ref.modify(last, (before): readonly [number | undefined, number | undefined] =>
          before === undefined ? [undefined, start] : start > before ? [before, before] : [undefined, before]).pipe(
            Effect.flatMap((skipped) =>
              skipped === undefined ? Effect.succeed(true) : Effect.fail(
                cut(`the subscription opened after seq ${start}, past ${skipped}: resubscribing after ${skipped}`)
              )
            )
          )
      }
      if (event.type !== "session/event") {
        return Effect.succeed(true)
      }
      return Ref.modify(last, (before): readonly [boolean | number, number | undefined] => {
        const seq = event.event.seq
        if (before !== undefined && seq <= before) {
          return [false, before]
        }
        if (before !== undefined && seq > before + 1) {
          return [before, before]
        }
        return [true, seq]
      }).pipe(
        Effect.flatMap((verdict) =>
          typeof verdict === "boolean"
            ? Effect.succeed(verdict)
            : Effect.fail(
              cut(`durable event ${event.event.seq} came after ${verdict}: resubscribing after ${verdict}`)
            )
        )
      )
    }
    const subscription = Stream.unwrap(Effect.map(Ref.get(last), (after) =>
      Stream.mapError(client.Events(after === undefined ? {} : { after }), toRemoteError).pipe(
        Stream.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Stream.fail(
              cut("the subscription was interrupted by its entity (its runner stopping or its shard moving)")
            )
            : Cause.isFailType(cause)
            ? Stream.fail(cause.error)
            // A defect of the client's transport (a socket to a killed runner failing its write) cuts the
            // subscription like any other failure of it.
            : Stream.fail(cut(`the subscription died: ${Cause.pretty(cause)}`))
        ),
        Stream.takeWhile((event) =>
          event.type !== "agent/disposed"
        ),
        Stream.concat(Stream.fail(cut("the subscription ended (its runner's entity stopped)"))),
        Stream.filterEffect(admit),
        Stream.map((event): AgentEvent.AgentEvent =>
          event.type === "agent/status" ? { type: "agent/status", status: event.status } : event
        )
      )))
    return Stream.retry(subscription, schedule)
  }))

/**
 * A remote agent over an entity client of the session `id`.
 *
 * Contract: mutating operations hold one permit while they are sent and answered, so the entity receives them in
 * call order (pipelined sends could otherwise be stored out of order); reads, `status`, `whenIdle` and `events` do
 * not wait for it. Event streams resubscribe on `options.resubscribe` (R215).
 *
 * @since 0.0.0
 * @category constructors
 */
export const fromClient = (id: Ids.SessionId, client: Client, options: Options = {}): Effect.Effect<Service> =>
  Effect.map(Effect.makeSemaphore(1), (order) => {
    const resubscribe = options.resubscribe ?? defaultResubscribe
    const ordered = <A, E>(effect: Effect.Effect<A, E>) => order.withPermits(1)(remote(effect))
    const envelope = (id: Ids.AgentMessageId | undefined) => id === undefined ? mint : Effect.succeed(id)
    return {
      id,
      send: (message, options) =>
        Effect.flatMap(
          envelope(options.id),
          (id) => ordered(client.Send({ id, operation: new Operations.Send({ message, options: { ...options, id } }) }))
        ),
      followup: (message, options) =>
        Effect.flatMap(
          envelope(options?.id),
          (id) => ordered(client.Followup({ id, operation: new Operations.Followup({ message, options: { id } }) }))
        ),
      steer: (message, options) =>
        Effect.flatMap(
          envelope(options?.id),
          (id) => ordered(client.Steer({ id, operation: new Operations.Steer({ message, options: { id } }) }))
        ),
      inject: (message, options) =>
        Effect.flatMap(
          envelope(options?.id),
          (id) => ordered(client.Inject({ id, operation: new Operations.Inject({ message, options: { id } }) }))
        ),
      batch: (operations) =>
        Effect.gen(function*() {
          const stamped: Array<Operations.BatchOperation> = []
          for (const op of operations) {
            stamped.push(
              "send" in op ? { send: [op.send[0], { ...op.send[1], id: yield* envelope(op.send[1].id) }] } : op
            )
          }
          const id = yield* mint
          return yield* ordered(client.Batch({ id, operation: new Operations.Batch({ operations: stamped }) }))
        }),
      cancel: (cause, options) =>
        Effect.flatMap(mint, (id) =>
          ordered(client.Cancel({
            id,
            operation: new Operations.Cancel(options === undefined ? { cause } : { cause, options })
          }))),
      retry: Effect.flatMap(mint, (id) => ordered(client.Retry({ id, operation: new Operations.Retry({}) }))),
      withdraw: (target) =>
        Effect.flatMap(
          mint,
          (id) => ordered(client.Withdraw({ id, operation: new Operations.Withdraw({ id: target }) }))
        ),
      edit: (target, message) =>
        Effect.flatMap(
          mint,
          (id) => ordered(client.Edit({ id, operation: new Operations.Edit({ id: target, message }) }))
        ),
      move: (target, position) =>
        Effect.flatMap(
          mint,
          (id) => ordered(client.Move({ id, operation: new Operations.Move({ id: target, position }) }))
        ),
      promote: (target) =>
        Effect.flatMap(
          mint,
          (id) => ordered(client.Promote({ id, operation: new Operations.Promote({ id: target }) }))
        ),
      demote: (target) =>
        Effect.flatMap(mint, (id) => ordered(client.Demote({ id, operation: new Operations.Demote({ id: target }) }))),
      compact: (options) =>
        Effect.flatMap(mint, (id) =>
          ordered(client.Compact({
            id,
            operation: new Operations.Compact(options === undefined ? {} : { options })
          }))),
      inbox: remote(client.ListInbox({})),
      approvals: remote(client.ListApprovals({})),
      approve: (callId, answer) =>
        Effect.flatMap(
          mint,
          (id) => ordered(client.Approve({ id, operation: new Operations.Approve({ callId, answer }) }))
        ),
      receipt: (target) => remote(client.Receipt({ id: target })),
      awaitReceipt: (target) => remote(client.AwaitReceipt({ id: target })),
      status: remote(client.Status(undefined)),
      whenIdle: remote(client.WhenIdle(undefined)),
      events: follow(client, resubscribe, undefined),
      eventsAfter: (after) => follow(client, resubscribe, after)
    }
  })

/**
 * A remote agent of session `id` through the cluster's `Sharding` (a runner, or a client-only node).
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (id: Ids.SessionId, options: Options = {}): Effect.Effect<Service, never, Sharding.Sharding> =>
  Effect.flatMap(AgentEntity.AgentEntity.client, (client) => fromClient(id, client(id), options))
