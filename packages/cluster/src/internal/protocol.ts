/**
 * How the entity's RPCs are derived from the agent's operations (`@harness/domain`'s `Operations`), so no request is
 * written twice: a mutating operation travels in a persisted envelope `{ id, operation }` whose primary key is the
 * message id; a read travels as the operation itself.
 */
import { ClusterSchema } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { AgentEvent, Ids, Operations } from "@harness/domain"
import { Schema } from "effect"

/** An operation's request schema: a `Schema.TaggedRequest` class with its `success` and `failure` schemas. */
export type OperationSchema = Rpc.AnyTaggedRequestSchema & Schema.Schema.Any

/** The envelope fields of a persisted operation. */
export type Persisted<S extends Schema.Schema.Any> = {
  readonly id: typeof Ids.AgentMessageId
  readonly operation: S
}

/**
 * A mutating operation as a persisted RPC: payload `{ id, operation }`, primary key `id`, the operation's own
 * `success` and `failure` schemas.
 */
export const persisted = <S extends OperationSchema>(schema: S): Rpc.Rpc<
  S["_tag"],
  Schema.Struct<Persisted<S>>,
  S["success"],
  S["failure"]
> =>
  // `Rpc.make` types `primaryKey` through a conditional on the payload fields that TypeScript cannot resolve for a
  // generic `S`; the payload's `id` is an `AgentMessageId` whatever `S` is, which is all the key reads.
  (Rpc.make(schema._tag, {
    payload: { id: Ids.AgentMessageId, operation: schema },
    success: schema.success,
    error: schema.failure,
    primaryKey: ((payload: { readonly id: Ids.AgentMessageId }) => payload.id) as never
  }) as unknown as Rpc.Rpc<S["_tag"], Schema.Struct<Persisted<S>>, S["success"], S["failure"]>).annotate(
    ClusterSchema.Persisted,
    true
  )

/**
 * The id a send of a batch gets when it names none: the batch's own id and the send's index, so a redelivered batch
 * finds each of its sends in the log again.
 */
const batchSendId = (batch: Ids.AgentMessageId, index: number): Ids.AgentMessageId =>
  Ids.AgentMessageId.make(`${batch}/${index}`)

/**
 * The operation with the envelope's id as its message's id: a send or preset takes `id` (the envelope wins over an id
 * in its options); each send of a batch without an id takes {@link batchSendId}. Other operations are unchanged.
 */
export const stamp = <O extends Operations.Operation>(operation: O, id: Ids.AgentMessageId): O => {
  // Each case builds the same kind of operation it narrowed to; TypeScript cannot relate that back to `O`.
  const op: Operations.Operation = operation
  switch (op._tag) {
    case "Send":
      return new Operations.Send({ message: op.message, options: { ...op.options, id } }) as O
    case "Followup":
      return new Operations.Followup({ message: op.message, options: { id } }) as O
    case "Steer":
      return new Operations.Steer({ message: op.message, options: { id } }) as O
    case "Inject":
      return new Operations.Inject({ message: op.message, options: { id } }) as O
    case "Batch":
      return new Operations.Batch({
        operations: op.operations.map((each, index) =>
          "send" in each && each.send[1].id === undefined
            ? { send: [each.send[0], { ...each.send[1], id: batchSendId(id, index) }] as const }
            : each
        )
      }) as O
    default:
      return operation
  }
}

/**
 * The opening event of an `Events` subscription: the agent's status when the entity subscribed, and `after`, the seq
 * after which this subscription's durable events start — the request's `after`, or for a subscription from now the
 * seq of the log's last event at that instant (-1 for an empty log) (R225). `after` is optional, so a peer that does
 * not know it still decodes the event as an ordinary `agent/status` (and one that does not send it is answered as
 * before).
 */
const Opening = Schema.Struct({
  type: Schema.Literal("agent/status"),
  status: AgentEvent.AgentStatus,
  after: Schema.optional(Schema.Int)
})

/** What an `Events` subscription gives: its {@link Opening}, then the agent's live events. */
export const EventsElement = Schema.Union(Opening, AgentEvent.AgentEvent)
