/**
 * The agent as an `@effect/cluster` entity: one entity per session (its entity id is the session id) whose protocol is
 * the agent's operations. The entity builds the ordinary `Agent` over the session's log from the `SessionStore` when it
 * is activated, keeps itself alive while the agent has work and is passivated when idle. Mutating operations are
 * persisted messages keyed by their `AgentMessageId`; the session log is what makes their redelivery safe (R184).
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import type { Sharding } from "@effect/cluster"
import { ClusterError, Entity } from "@effect/cluster"
import { Rpc, RpcGroup } from "@effect/rpc"
import type { Agent } from "@harness/agent"
import { AgentEvent, Ids, Operations } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { SessionStoreError } from "@harness/session"
import type { Duration, Layer } from "effect"
import { Effect, Schema, Stream } from "effect"
import * as internal from "./internal/entity.js"
import { EventsElement, persisted } from "./internal/protocol.js"

/**
 * `send` as a persisted message: `{ id, operation }`, `id` the message's id and the primary key.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Send = persisted(Operations.Send)
/**
 * `followup`, persisted; `id` is the message's id.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Followup = persisted(Operations.Followup)
/**
 * `steer`, persisted; `id` is the message's id.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Steer = persisted(Operations.Steer)
/**
 * `inject`, persisted; `id` is the message's id.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Inject = persisted(Operations.Inject)
/**
 * `batch`, persisted; a send without an id takes `<id>/<index>`.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Batch = persisted(Operations.Batch)
/**
 * `cancel`, persisted; give `ifTurn` so that a redelivery cannot hit a later turn (R185).
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Cancel = persisted(Operations.Cancel)
/**
 * `retry`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Retry = persisted(Operations.Retry)
/**
 * `compact`, persisted; `id` is the message's id (minted by the client), so a redelivery is the same message.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Compact = persisted(Operations.Compact)
/**
 * `approve`, persisted; `id` is the message's id (minted by the client). The agent records one answer per call, so a
 * redelivered answer fails with `ApprovalError` (the call is no longer pending) and changes nothing (R246).
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Approve = persisted(Operations.Approve)
/**
 * `withdraw`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Withdraw = persisted(Operations.Withdraw)
/**
 * `edit`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Edit = persisted(Operations.Edit)
/**
 * `move`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Move = persisted(Operations.Move)
/**
 * `promote`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Promote = persisted(Operations.Promote)
/**
 * `demote`, persisted.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Demote = persisted(Operations.Demote)
/**
 * `inbox`: a read, volatile, beside the mailbox.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const ListInbox = Rpc.fromTaggedRequest(Operations.ListInbox)
/**
 * `receipt(id)`: a read, volatile, beside the mailbox.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Receipt = Rpc.fromTaggedRequest(Operations.Receipt)
/**
 * `awaitReceipt(id)`: volatile, beside the mailbox (it may wait for a whole turn).
 *
 * @since 0.0.0
 * @category rpcs
 */
export const AwaitReceipt = Rpc.fromTaggedRequest(Operations.AwaitReceipt)
/**
 * `approvals`: a read, volatile, beside the mailbox.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const ListApprovals = Rpc.fromTaggedRequest(Operations.ListApprovals)
/**
 * The agent's status now: volatile, beside the mailbox.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Status = Rpc.make("Status", { success: AgentEvent.AgentStatus })
/**
 * Answers once the agent is quiescent: volatile, beside the mailbox.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const WhenIdle = Rpc.make("WhenIdle")
/**
 * The agent's live events from the moment the entity runs the request, opening with an `agent/status` event (the
 * status at that instant: the client is subscribed once it has it) whose `after` says where the subscription's durable
 * events start: volatile, beside the mailbox, so an open subscription never holds a send back (R187). With `after`,
 * the durable events after that seq come first, from the log, then the live ones with no durable event twice (R254);
 * without, the opening's `after` is the log's last seq when the entity subscribed, and every durable event after it
 * follows live (R225).
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Events = Rpc.make("Events", {
  payload: { after: Schema.optional(Schema.Int) },
  success: EventsElement,
  stream: true
})

/**
 * Deletes the session: the entity's agent is disposed, the session removed from the store, the entity's stored
 * messages cleared from the cluster's storage. Answers whether there was a session to delete. Volatile, through the
 * mailbox (after every message the entity received before it); repeating it is harmless (R219).
 *
 * @since 0.0.0
 * @category rpcs
 */
export const Delete = Rpc.make("Delete", {
  success: Schema.Boolean,
  error: Schema.Union(SessionStoreError.SessionStoreError, ClusterError.PersistenceError)
})

/**
 * The entity's protocol: every operation of the agent, plus `Status`, `WhenIdle`, `Events` and `Delete`.
 *
 * @since 0.0.0
 * @category rpcs
 */
export const protocol = RpcGroup.make(
  Send,
  Followup,
  Steer,
  Inject,
  Batch,
  Cancel,
  Retry,
  Withdraw,
  Edit,
  Move,
  Promote,
  Demote,
  ListInbox,
  Receipt,
  AwaitReceipt,
  Compact,
  Approve,
  ListApprovals,
  Status,
  WhenIdle,
  Events,
  Delete
)

/**
 * The RPCs of the protocol.
 *
 * @since 0.0.0
 * @category models
 */
export type Rpcs = RpcGroup.Rpcs<typeof protocol>

/**
 * The entity type: `harness/Agent`, one entity per session id.
 *
 * @since 0.0.0
 * @category entities
 */
export const AgentEntity = Entity.fromRpcGroup("harness/Agent", protocol)

/**
 * How the entity builds its agent over the session's opened log (in the entity's scope: passivation disposes it).
 *
 * @since 0.0.0
 * @category models
 */
export type MakeAgent<R> = internal.MakeAgent<R>

/**
 * How the entity runs.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options<R> {
  /** Builds the agent over the log; a plain `Agent.make({ session: log })` when absent. */
  readonly makeAgent?: MakeAgent<R> | undefined
  /** How long an idle entity stays activated after its last message (the cluster's default when absent). */
  readonly maxIdleTime?: Duration.DurationInput | undefined
  /**
   * How long a closing entity lets its agent's running turn go on before disposing it (R216, R224): the agent's
   * `StopGrace` on every close but a delete. Four fifths of the runner's `entityTerminationTimeout` when absent (12 s
   * with the cluster's default of 15 s), so that a runner stopping under an orchestrator waits for its in-flight
   * requests and then its turns within twice that timeout. A longer grace is allowed: the shard's hand-off waits for
   * it (the runner keeps the shard's lock meanwhile).
   */
  readonly stopGrace?: Duration.DurationInput | undefined
}

/**
 * Registers the entity with the `Sharding` service of the context.
 *
 * Contract: on activation the entity opens the session's log from the `SessionStore` when the store holds it, and
 * builds the agent over it, which restores and wakes the durable inbox; a session the store does not hold is created
 * by the first message that needs the agent (R188). It keeps itself alive (`Entity.keepAlive`) from the agent's first
 * `running` status to the next `idle`, so a runner that dies mid-turn leaves a persisted keep-alive that activates the
 * entity elsewhere, and the turn's work resumes with no new message (R190). Mutating messages run one at a time in
 * arrival order through the entity's mailbox; each send runs with the envelope's id as its message id, so a
 * redelivered one finds itself accepted and answers the same id (R184). `Events`, `Status`, `WhenIdle` and the reads
 * run beside the mailbox (`Rpc.fork`). `Delete` runs in the mailbox: it disposes the agent, deletes the session and
 * clears the entity's stored messages; the next message to the id starts a new, empty session (R219). Any other close
 * of the entity — its shard moving to another runner, its runner stopping — stops the agent gracefully once the
 * cluster has let the entity's in-flight requests end: the running turn gets `stopGrace` to end on its own and
 * nothing queued starts, so the queued work runs, in order, on the runner that takes the shard (R216, R224). A store
 * that cannot be opened is a defect: the cluster logs it and retries the activation.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = <R = LanguageModel.LanguageModel>(
  options: Options<R> = {}
): Layer.Layer<never, never, Sharding.Sharding | SessionStore.SessionStore | LanguageModel.LanguageModel | R> =>
  AgentEntity.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const id = yield* Schema.decodeUnknown(Ids.SessionId)(address.entityId)
      const host = yield* internal.makeHost<R | LanguageModel.LanguageModel>(
        id,
        options.makeAgent ?? internal.defaultAgent,
        options.stopGrace
      )
      const handle = internal.run(host.agent)
      const withAgent = <A, E>(f: (agent: Agent.Service) => Effect.Effect<A, E>) => Effect.flatMap(host.agent, f)
      return AgentEntity.of({
        Send: handle,
        Followup: handle,
        Steer: handle,
        Inject: handle,
        Batch: handle,
        Cancel: handle,
        Retry: handle,
        Withdraw: handle,
        Edit: handle,
        Move: handle,
        Promote: handle,
        Demote: handle,
        ListInbox: (request) => Rpc.fork(handle(request)),
        Receipt: (request) => Rpc.fork(handle(request)),
        AwaitReceipt: (request) => Rpc.fork(handle(request)),
        Compact: handle,
        Approve: handle,
        ListApprovals: (request) => Rpc.fork(handle(request)),
        Status: () => Rpc.fork(withAgent((agent) => agent.status)),
        WhenIdle: () => Rpc.fork(withAgent((agent) => agent.whenIdle)),
        Events: (request) =>
          Rpc.fork(
            Stream.unwrap(Effect.map(host.hosted, (hosted) => internal.liveEvents(hosted, request.payload.after)))
          ),
        Delete: () => host.remove
      })
    }).pipe(Effect.orDie),
    options.maxIdleTime === undefined ? {} : { maxIdleTime: options.maxIdleTime }
  )

/**
 * Deletes a session through its entity, from any node of the cluster (a runner or a client-only node): the entity's
 * agent is disposed, the session removed from the store, the entity's stored messages cleared. Answers whether there
 * was a session to delete.
 *
 * Contract: runs after every message the entity received before it; afterwards the session is gone from the store
 * and the cluster holds no message of the entity, so nothing replays into it, and a later message to the id starts a
 * new, empty session (R219). Deleting a session no store holds deletes nothing and answers `false`. Use it instead of
 * the store's `remove` while runners may host the session: the store refuses to delete a session an entity holds
 * (`Busy`), and a store deletion alone leaves the entity's unprocessed messages to recreate it.
 *
 * @since 0.0.0
 * @category operations
 */
export const remove = (id: Ids.SessionId) => Effect.flatMap(AgentEntity.client, (client) => client(id).Delete())
