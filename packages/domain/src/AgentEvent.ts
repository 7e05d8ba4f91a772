/**
 * Live agent events. They are published on the agent's `PubSub`, never stored; every durable append is also
 * republished as `session/event`, so one subscription sees live and durable events in their true order.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { PendingApproval } from "./Approval.js"
import { ToolCallId } from "./Ids.js"
import { NonNegativeInt } from "./Json.js"
import { AgentMessage, InboxPlacement } from "./Message.js"
import { SessionEvent } from "./SessionEvent.js"
import { SettleReason } from "./Turn.js"

/**
 * `running` from the first claim of work until nothing waking is left; disposal is not a status.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AgentStatus = Schema.Literal("idle", "running")
/**
 * @since 0.0.0
 * @category models
 */
export type AgentStatus = typeof AgentStatus.Type

/**
 * Why a caller cancels. Disposal uses the internal {@link InterruptReason} `disposed`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const CancelCause = Schema.Literal("user", "parent")
/**
 * @since 0.0.0
 * @category models
 */
export type CancelCause = typeof CancelCause.Type

/**
 * A cancel cause, or `disposed` (internal to teardown).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InterruptReason = Schema.Literal("user", "parent", "disposed")
/**
 * @since 0.0.0
 * @category models
 */
export type InterruptReason = typeof InterruptReason.Type

const event = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), ...fields })

/**
 * Every live event, keyed by `type`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AgentEvent = Schema.Union(
  event("agent/status", { status: AgentStatus }),
  event("agent/inbox/enqueue", { message: AgentMessage, placement: InboxPlacement }),
  event("agent/inbox/dequeue", { message: AgentMessage }),
  event("agent/inbox/discard", {
    messages: Schema.NonEmptyArray(AgentMessage),
    /**
     * `withdraw` for one withdrawn item, `overflow` for one item a bounded inbox dropped, `expired` for items whose
     * `ttl` ran out, `superseded` for items a later send with the same key replaced; absent for a cancel's (or
     * disposal's) discard.
     */
    reason: Schema.optionalWith(Schema.Literal("withdraw", "overflow", "expired", "superseded"), { exact: true })
  }),
  /** A pending item's content was replaced (`edit`): the new message, same id, same position. */
  event("agent/inbox/edit", { message: AgentMessage }),
  /** A pending item was moved (`move`): its index in its FIFO afterwards. */
  event("agent/inbox/move", { message: AgentMessage, position: NonNegativeInt }),
  /** A pending item changed FIFO (`promote`: to `steering`; `demote`: to `queued`, last). */
  event("agent/inbox/place", { message: AgentMessage, placement: InboxPlacement }),
  /** A tool call waits for a person (ADR 0054); also published for the pending approvals a resume restores. */
  event("agent/approval/requested", { approval: PendingApproval }),
  /** A pending approval was answered, by a person or by the timeout policy. */
  event("agent/approval/answered", {
    callId: ToolCallId,
    decision: Schema.Literal("allow", "deny"),
    by: Schema.Literal("person", "timeout", "cancel")
  }),
  event("agent/cancel-requested", { cause: CancelCause }),
  event("agent/settled", { turn: NonNegativeInt, reason: SettleReason }),
  event("agent/error", {
    turn: NonNegativeInt,
    step: NonNegativeInt,
    error: Schema.Struct({
      message: Schema.String,
      code: Schema.optionalWith(Schema.String, { exact: true })
    })
  }),
  event("agent/disposed", {}),
  event("session/event", { event: SessionEvent })
).annotations({ identifier: "AgentEvent" })
/**
 * @since 0.0.0
 * @category models
 */
export type AgentEvent = typeof AgentEvent.Type

/**
 * The live event of a given type.
 *
 * @since 0.0.0
 * @category models
 */
export type AgentEventOf<T extends AgentEvent["type"]> = Extract<AgentEvent, { readonly type: T }>
