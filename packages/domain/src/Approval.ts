/**
 * Durable tool-call approvals (ADR 0054): what a pending approval looks like to whoever lists it, how a person
 * answers one, and the typed refusal of an answer to a call that is not pending. The records behind them are
 * `approval/requested` and `approval/answered` (`Store`).
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { ToolCallId } from "./Ids.js"
import { NonNegativeInt, PositiveInt } from "./Json.js"

/**
 * A tool call waiting for a person: its id, turn, step, tool and the model's raw argument text; when it was asked
 * (`requestedAt`, `Clock` epoch milliseconds); the time it is denied unless answered (`deadline`, absent when the
 * agent keeps waiting); and whether its turn is still open (`live`) or a restart cut the turn (`live: false`: when
 * allowed, the call runs then and its result arrives as a message).
 *
 * @since 0.0.0
 * @category schemas
 */
export const PendingApproval = Schema.Struct({
  callId: ToolCallId,
  turn: PositiveInt,
  step: PositiveInt,
  name: Schema.String,
  arguments: Schema.String,
  requestedAt: NonNegativeInt,
  deadline: Schema.optionalWith(NonNegativeInt, { exact: true }),
  live: Schema.Boolean
}).annotations({ identifier: "PendingApproval" })
/**
 * @since 0.0.0
 * @category models
 */
export type PendingApproval = typeof PendingApproval.Type

/**
 * A person's answer: `allow`, or `deny` with an optional reason (the model reads it in the call's result).
 *
 * @since 0.0.0
 * @category schemas
 */
export const ApprovalAnswer = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("allow") }),
  Schema.Struct({ kind: Schema.Literal("deny"), reason: Schema.optionalWith(Schema.String, { exact: true }) })
).annotations({ identifier: "ApprovalAnswer" })
/**
 * @since 0.0.0
 * @category models
 */
export type ApprovalAnswer = typeof ApprovalAnswer.Type

/**
 * An answer was refused; nothing changed. `reason`: `not-pending` (no approval of this call is pending here: never
 * asked, or answered already — by a person or by the timeout policy), `disposed` (the agent was disposed).
 *
 * @since 0.0.0
 * @category errors
 */
export class ApprovalError extends Schema.TaggedError<ApprovalError>("@harness/agent/ApprovalError")(
  "ApprovalError",
  { callId: ToolCallId, reason: Schema.Literal("not-pending", "disposed"), message: Schema.String }
) {}
