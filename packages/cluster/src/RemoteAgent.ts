/**
 * The client side of an agent entity: the agent's operations with the local agent's signatures, sent to the session's
 * entity wherever the cluster runs it. Every message id is minted here, before the message leaves, so a retried or
 * redelivered message is the same message (R184); mutating operations from one `RemoteAgent` go out one at a time in
 * call order (R191). What the cluster's transport can add to an operation's failures is a `RemoteAgentError`.
 *
 * @since 0.0.0
 */
import type { Sharding } from "@effect/cluster"
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import type { RpcClient } from "@effect/rpc"
import type { AgentEvent } from "@harness/domain"
import { Ids, Operations } from "@harness/domain"
import { Effect, Predicate, Schema, Stream } from "effect"
import * as AgentEntity from "./AgentEntity.js"

/**
 * The cluster could not carry an operation: the entity's mailbox was full (`MailboxFull`), the same message is being
 * processed already (`AlreadyProcessingMessage`), or the message storage failed (`PersistenceError`). A mutating
 * operation that failed this way may still have been stored: retry it with the same id.
 *
 * @since 0.0.0
 * @category errors
 */
export class RemoteAgentError extends Schema.TaggedError<RemoteAgentError>("@harness/cluster/RemoteAgentError")(
  "RemoteAgentError",
  {
    reason: Schema.Literal("MailboxFull", "AlreadyProcessingMessage", "PersistenceError"),
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

/**
 * A remote agent: the local agent's operations (same arguments, same answers, same failures plus
 * {@link RemoteAgentError}), its status, `whenIdle` and live events.
 *
 * @since 0.0.0
 * @category models
 */
export interface Service {
  readonly id: Ids.SessionId
  /** Contract: the message's id is `options.id` or one minted here, before the message is sent. */
  readonly send: (
    message: Operations.Send["message"],
    options: Operations.Send["options"]
  ) => Result<Operations.Send>
  readonly followup: (
    message: Operations.Followup["message"],
    options?: Operations.Followup["options"]
  ) => Result<Operations.Followup>
  readonly steer: (
    message: Operations.Steer["message"],
    options?: Operations.Steer["options"]
  ) => Result<Operations.Steer>
  readonly inject: (
    message: Operations.Inject["message"],
    options?: Operations.Inject["options"]
  ) => Result<Operations.Inject>
  /** Contract: every send of the batch gets its id here (its own, or a minted one) before the batch is sent. */
  readonly batch: (operations: Operations.Batch["operations"]) => Result<Operations.Batch>
  /** Give `ifTurn` so that a redelivery cannot cancel a later turn (R185). */
  readonly cancel: (
    cause: Operations.Cancel["cause"],
    options?: Operations.Cancel["options"]
  ) => Result<Operations.Cancel>
  readonly retry: Result<Operations.Retry>
  readonly withdraw: (id: Operations.Withdraw["id"]) => Result<Operations.Withdraw>
  readonly edit: (id: Operations.Edit["id"], message: Operations.Edit["message"]) => Result<Operations.Edit>
  readonly move: (id: Operations.Move["id"], position: Operations.Move["position"]) => Result<Operations.Move>
  readonly promote: (id: Operations.Promote["id"]) => Result<Operations.Promote>
  readonly demote: (id: Operations.Demote["id"]) => Result<Operations.Demote>
  readonly inbox: Result<Operations.ListInbox>
  readonly receipt: (id: Operations.Receipt["id"]) => Result<Operations.Receipt>
  readonly awaitReceipt: (id: Operations.AwaitReceipt["id"]) => Result<Operations.AwaitReceipt>
  readonly status: Effect.Effect<AgentEvent.AgentStatus, RemoteAgentError>
  readonly whenIdle: Effect.Effect<void, RemoteAgentError>
  /** The live events from the moment the entity subscribes; the first is the status at that instant. */
  readonly events: Stream.Stream<AgentEvent.AgentEvent, RemoteAgentError>
  /**
   * Contract: the status, then every durable event after seq `after` once and in seq order (from the log, then live),
   * then the live events: a client that lost its stream resubscribes with the last durable seq it received (R254).
   */
  readonly eventsAfter: (after: number) => Stream.Stream<AgentEvent.AgentEvent, RemoteAgentError>
}

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

/**
 * A remote agent over an entity client of the session `id`.
 *
 * Contract: mutating operations hold one permit while they are sent and answered, so the entity receives them in
 * call order (pipelined sends could otherwise be stored out of order); reads, `status`, `whenIdle` and `events` do
 * not wait for it.
 *
 * @since 0.0.0
 * @category constructors
 */
export const fromClient = (id: Ids.SessionId, client: Client): Effect.Effect<Service> =>
  Effect.map(Effect.makeSemaphore(1), (order) => {
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
      inbox: remote(client.ListInbox({})),
      receipt: (target) => remote(client.Receipt({ id: target })),
      awaitReceipt: (target) => remote(client.AwaitReceipt({ id: target })),
      status: remote(client.Status(undefined)),
      whenIdle: remote(client.WhenIdle(undefined)),
      events: Stream.mapError(client.Events({}), toRemoteError),
      eventsAfter: (after) => Stream.mapError(client.Events({ after }), toRemoteError)
    }
  })

/**
 * A remote agent of session `id` through the cluster's `Sharding` (a runner, or a client-only node).
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (id: Ids.SessionId): Effect.Effect<Service, never, Sharding.Sharding> =>
  Effect.flatMap(AgentEntity.AgentEntity.client, (client) => fromClient(id, client(id)))
