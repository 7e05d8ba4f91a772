/**
 * The agent's operations as data: what a caller asks (`send`, the presets `followup` / `steer` / `inject`,
 * `batch`, `cancel`, `retry`, `withdraw`, `inbox`), what each answers and how each fails, as schemas. The agent's
 * service types are derived from these (`@harness/agent`'s `Agent.Service`), so an HTTP API or a remote agent that
 * carries these requests carries exactly what the in-process API takes and returns. Each request is a
 * `Schema.TaggedRequest`: its payload, its `success` schema and its `failure` schema travel together.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import {
  AgentBusyError,
  AgentDisposedError,
  BatchError,
  BatchResult,
  InboxChangeError,
  InboxFullError,
  TurnRunningError
} from "./AgentError.js"
import { CancelCause } from "./AgentEvent.js"
import { ApprovalAnswer, ApprovalError, PendingApproval } from "./Approval.js"
import { AgentMessageId, ToolCallId } from "./Ids.js"
import { CancelResult, InboxItem, Receipt as ReceiptSchema, WithdrawResult } from "./Inbox.js"
import { NonNegativeInt, PositiveInt } from "./Json.js"
import { InvalidMessageError, SendOptions, UserMessageData } from "./Message.js"
import { SessionLogError } from "./SessionLogError.js"

/**
 * How a send can fail: invalid input, a disposed agent, (for an idle `inject`, which appends at once) the log, or
 * a running turn when the send said `whenBusy: "reject"`, or a full bounded inbox.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SendFailure = Schema.Union(
  InvalidMessageError,
  AgentDisposedError,
  SessionLogError,
  TurnRunningError,
  InboxFullError
)
/**
 * @since 0.0.0
 * @category errors
 */
export type SendFailure = typeof SendFailure.Type

/**
 * The options of a preset: an optional caller-supplied id for idempotent acceptance.
 *
 * @since 0.0.0
 * @category schemas
 */
export const PresetOptions = Schema.Struct({ id: Schema.optional(AgentMessageId) }).annotations({
  identifier: "PresetOptions"
})
/**
 * @since 0.0.0
 * @category models
 */
export type PresetOptions = typeof PresetOptions.Type

/**
 * The options of a cancel: `keepInbox` keeps pending work (it runs next); `ifTurn` makes the cancel conditional on
 * that turn being the open one (a cancel redelivered after its turn closed, or aimed at a turn that is over, does
 * nothing: no interrupt, no discard).
 *
 * @since 0.0.0
 * @category schemas
 */
export const CancelOptions = Schema.Struct({
  keepInbox: Schema.optional(Schema.Boolean),
  ifTurn: Schema.optional(PositiveInt)
}).annotations({
  identifier: "CancelOptions"
})
/**
 * @since 0.0.0
 * @category models
 */
export type CancelOptions = typeof CancelOptions.Type

/**
 * One operation of a batch: a send (message and options) or a cancel (cause and optional options).
 *
 * @since 0.0.0
 * @category schemas
 */
export const BatchOperation = Schema.Union(
  Schema.Struct({ send: Schema.Tuple(UserMessageData, SendOptions) }),
  Schema.Struct({
    cancel: Schema.Tuple(
      CancelCause,
      // JSON carries no `undefined`: on the wire the element is absent or an object (what the OpenAPI document says).
      Schema.optionalElement(
        Schema.UndefinedOr(CancelOptions).annotations({
          jsonSchema: {
            type: "object",
            properties: { keepInbox: { type: "boolean" }, ifTurn: { type: "integer", minimum: 1 } },
            additionalProperties: false
          }
        })
      )
    )
  })
).annotations({ identifier: "BatchOperation" })
/**
 * @since 0.0.0
 * @category models
 */
export type BatchOperation = typeof BatchOperation.Type

/**
 * What a batch answers: one result per operation, in order — the id for a send, `undefined` for a cancel.
 *
 * @since 0.0.0
 * @category schemas
 */
export const BatchResults = Schema.Array(BatchResult)
/**
 * @since 0.0.0
 * @category models
 */
export type BatchResults = typeof BatchResults.Type

/**
 * `send(message, options)`: accepts a message and routes it by `target` × `wakeup`; answers its id.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Send extends Schema.TaggedRequest<Send>()("Send", {
  failure: SendFailure,
  success: AgentMessageId,
  payload: { message: UserMessageData, options: SendOptions }
}) {}

const preset = {
  failure: SendFailure,
  success: AgentMessageId,
  payload: { message: UserMessageData, options: Schema.optional(PresetOptions) }
}

/**
 * `followup(message, options?)`: `send` with `{ target: "next-turn", wakeup: true }`.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Followup extends Schema.TaggedRequest<Followup>()("Followup", preset) {}

/**
 * `steer(message, options?)`: `send` with `{ target: "next-step", wakeup: true }`.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Steer extends Schema.TaggedRequest<Steer>()("Steer", preset) {}

/**
 * `inject(message, options?)`: `send` with `{ target: "next-step", wakeup: false }`.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Inject extends Schema.TaggedRequest<Inject>()("Inject", preset) {}

/**
 * `batch(operations)`: sends and cancels applied in order under one lock, all decoded first (all or nothing);
 * fails with `BatchError` if an idle injection's append is refused part-way.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Batch extends Schema.TaggedRequest<Batch>()("Batch", {
  failure: Schema.Union(SendFailure, BatchError),
  success: BatchResults,
  payload: { operations: Schema.Array(BatchOperation) }
}) {}

/**
 * `cancel(cause, options?)`: cancels the running admission or turn; answers at once, with the ids it discarded and
 * the ids it kept pending.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Cancel extends Schema.TaggedRequest<Cancel>()("Cancel", {
  failure: InvalidMessageError,
  success: CancelResult,
  payload: { cause: CancelCause, options: Schema.optional(CancelOptions) }
}) {}

/**
 * `retry`: starts a turn over the current log without a new prompt.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Retry extends Schema.TaggedRequest<Retry>()("Retry", {
  failure: Schema.Union(AgentBusyError, AgentDisposedError),
  success: Schema.Void,
  payload: {}
}) {}

/**
 * `compact(options?)`: starts a compaction of the history (ADR 0052): a turn with trigger `compaction` whose step asks
 * the model for a summary (with `instruction`, if given, instead of the configured one) and logs the `compaction`
 * record. Like `retry`, refused while busy.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Compact extends Schema.TaggedRequest<Compact>()("Compact", {
  failure: Schema.Union(AgentBusyError, AgentDisposedError),
  success: Schema.Void,
  payload: {
    options: Schema.optionalWith(
      Schema.Struct({ instruction: Schema.optionalWith(Schema.NonEmptyString, { exact: true }) }),
      { exact: true }
    )
  }
}) {}

/**
 * `withdraw(id)`: removes one pending item without stopping the turn.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Withdraw extends Schema.TaggedRequest<Withdraw>()("Withdraw", {
  failure: InvalidMessageError,
  success: WithdrawResult,
  payload: { id: AgentMessageId }
}) {}

/**
 * `inbox`: the pending items now, in acceptance order.
 *
 * @since 0.0.0
 * @category schemas
 */
export class ListInbox extends Schema.TaggedRequest<ListInbox>()("ListInbox", {
  failure: Schema.Never,
  success: Schema.Array(InboxItem),
  payload: {}
}) {}

const change = {
  failure: Schema.Union(InvalidMessageError, InboxChangeError),
  success: InboxItem
}

/**
 * `edit(id, message)`: replaces a pending item's content and source, keeping its id, placement and position;
 * answers the item as it is now.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Edit extends Schema.TaggedRequest<Edit>()("Edit", {
  ...change,
  payload: { id: AgentMessageId, message: UserMessageData }
}) {}

/**
 * `move(id, position)`: moves a pending item to `position` (0 is first; beyond the end is last) within its FIFO
 * (queued turns, or steering); answers the item as it is now.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Move extends Schema.TaggedRequest<Move>()("Move", {
  ...change,
  payload: { id: AgentMessageId, position: NonNegativeInt }
}) {}

/**
 * `promote(id)`: a queued turn becomes steering of the open admission or turn; answers the item as it is now.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Promote extends Schema.TaggedRequest<Promote>()("Promote", {
  ...change,
  payload: { id: AgentMessageId }
}) {}

/**
 * `demote(id)`: steering not yet drained becomes a waking queued turn, last in the queued FIFO; answers the item as
 * it is now.
 *
 * @since 0.0.0
 * @category schemas
 */
export class Demote extends Schema.TaggedRequest<Demote>()("Demote", {
  ...change,
  payload: { id: AgentMessageId }
}) {}

/**
 * `receipt(id)`: the message's fate now, computed from the session log (ADR 0050).
 *
 * @since 0.0.0
 * @category schemas
 */
export class Receipt extends Schema.TaggedRequest<Receipt>()("Receipt", {
  failure: Schema.Union(InvalidMessageError, SessionLogError),
  success: ReceiptSchema,
  payload: { id: AgentMessageId }
}) {}

/**
 * `awaitReceipt(id)`: the message's fate once it is final (or as it is when the agent is disposed).
 *
 * @since 0.0.0
 * @category schemas
 */
export class AwaitReceipt extends Schema.TaggedRequest<AwaitReceipt>()("AwaitReceipt", {
  failure: Schema.Union(InvalidMessageError, SessionLogError),
  success: ReceiptSchema,
  payload: { id: AgentMessageId }
}) {}

/**
 * `approvals`: the tool calls waiting for a person now, in request order (ADR 0054).
 *
 * @since 0.0.0
 * @category schemas
 */
export class ListApprovals extends Schema.TaggedRequest<ListApprovals>()("ListApprovals", {
  failure: Schema.Never,
  success: Schema.Array(PendingApproval),
  payload: {}
}) {}

/**
 * `approve(callId, answer)`: answers a pending approval; returns once the answer is durable (ADR 0054).
 *
 * @since 0.0.0
 * @category schemas
 */
export class Approve extends Schema.TaggedRequest<Approve>()("Approve", {
  failure: Schema.Union(ApprovalError, SessionLogError),
  success: Schema.Void,
  payload: { callId: ToolCallId, answer: ApprovalAnswer }
}) {}

/**
 * Every operation, keyed by `_tag`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Operation = Schema.Union(
  Send,
  Followup,
  Steer,
  Inject,
  Batch,
  Cancel,
  Retry,
  Compact,
  Withdraw,
  ListInbox,
  Edit,
  Move,
  Promote,
  Demote,
  Receipt,
  AwaitReceipt,
  ListApprovals,
  Approve
)
/**
 * @since 0.0.0
 * @category models
 */
export type Operation = typeof Operation.Type

/**
 * What an operation answers.
 *
 * @since 0.0.0
 * @category models
 */
export type Success<O extends Operation> = Schema.WithResult.Success<O>

/**
 * How an operation fails.
 *
 * @since 0.0.0
 * @category models
 */
export type Failure<O extends Operation> = Schema.WithResult.Failure<O>
