/**
 * The agent's errors, one family shaped like `@effect/ai`'s `AiError`: each error a schema (so it can cross a
 * process boundary — an HTTP API, a cluster — intact and be logged durably), sub-kinds in a `reason` where one
 * class covers several causes, structured fields beside a readable `message`, a {@link TypeId} every member
 * carries, the guard {@link isAgentError}, and one union type and union schema ({@link AgentError}). The errors of
 * the operations are defined in `@harness/domain` (`AgentError`, `Message`, `Approval`: the vocabulary the
 * operations' schemas are written in) and re-exported here (ADR 0074).
 *
 * @since 0.0.0
 */
import { AgentError as Schemas, Approval, Message, SessionLogError as Log } from "@harness/domain"
import { SessionError } from "@harness/session"
import { Predicate, Schema } from "effect"

/**
 * The mark of the agent's family: every class of {@link AgentError} but the log's `SessionLogError` (a member of
 * the session's own family) carries it, on its prototype — as Effect puts its type ids on prototypes — so an
 * error's own keys, its encoding and its JSON are unchanged.
 *
 * @since 0.0.0
 * @category symbols
 */
export const TypeId = "~@harness/agent/AgentError"
/**
 * @since 0.0.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * Whether `u` is one of the errors the agent's API fails with: it carries {@link TypeId}, or it is the log's
 * refusal (`SessionLogError`, marked by the session's family).
 *
 * Contract: true for every failure of the agent's operations and of `Agent.make`, also after a round trip through
 * the {@link AgentError} schema; false for a plain object that only has a member's `_tag` (R229).
 *
 * @example
 * ```ts
 * import { AgentError } from "@harness/agent"
 *
 * AgentError.isAgentError(new AgentError.AgentBusyError({ message: "busy" })) // true
 * AgentError.isAgentError(new Error("busy")) // false
 * ```
 *
 * @since 0.0.0
 * @category guards
 */
export const isAgentError = (u: unknown): u is AgentError =>
  Predicate.hasProperty(u, TypeId) || (Predicate.isTagged(u, "SessionLogError") && SessionError.isSessionError(u))

/**
 * The agent was disposed (its scope closed): it accepts nothing more.
 *
 * @since 0.0.0
 * @category errors
 */
export const AgentDisposedError = Schemas.AgentDisposedError
/**
 * @since 0.0.0
 * @category errors
 */
export type AgentDisposedError = Schemas.AgentDisposedError

/**
 * `retry` or `compact` was called while an admission or a turn is active.
 *
 * @since 0.0.0
 * @category errors
 */
export const AgentBusyError = Schemas.AgentBusyError
/**
 * @since 0.0.0
 * @category errors
 */
export type AgentBusyError = Schemas.AgentBusyError

/**
 * A batch stopped part-way: an idle injection's append was refused. `applied` holds the results of the operations
 * applied before it; `cause` is the refused append's `SessionLogError`.
 *
 * @since 0.0.0
 * @category errors
 */
export const BatchError = Schemas.BatchError
/**
 * @since 0.0.0
 * @category errors
 */
export type BatchError = Schemas.BatchError

/**
 * A pending item could not be edited, moved, promoted or demoted; `reason` says why (`unknown`, `taken`,
 * `not-queued`, `not-steering`, `no-open-turn`, `disposed`).
 *
 * @since 0.0.0
 * @category errors
 */
export const InboxChangeError = Schemas.InboxChangeError
/**
 * @since 0.0.0
 * @category errors
 */
export type InboxChangeError = Schemas.InboxChangeError

/**
 * A send said `whenBusy: "reject"` while a turn was running: nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export const TurnRunningError = Schemas.TurnRunningError
/**
 * @since 0.0.0
 * @category errors
 */
export type TurnRunningError = Schemas.TurnRunningError

/**
 * A send would have taken a bounded inbox past `maxPending` (with `overflow: "reject"`): nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export const InboxFullError = Schemas.InboxFullError
/**
 * @since 0.0.0
 * @category errors
 */
export type InboxFullError = Schemas.InboxFullError

/**
 * An answer to an approval was refused; `reason` says why (`not-pending`, `disposed`).
 *
 * @since 0.0.0
 * @category errors
 */
export const ApprovalError = Approval.ApprovalError
/**
 * @since 0.0.0
 * @category errors
 */
export type ApprovalError = Approval.ApprovalError

/**
 * Input given to an operation was refused; `reason` says why (`schema`, `not-plain`, `accessor`, `cycle`,
 * `too-deep`, `too-large`, `unreadable`).
 *
 * @since 0.0.0
 * @category errors
 */
export const InvalidMessageError = Message.InvalidMessageError
/**
 * @since 0.0.0
 * @category errors
 */
export type InvalidMessageError = Message.InvalidMessageError

/**
 * The agent's options are invalid. `option` names the offending option; `reason` says how: `InvalidOption` (a
 * value the options' Schema refuses — the default), or `UnusableToolSchema` (a tool whose parameter schema gives no
 * JSON object schema JSON can carry, so it cannot be advertised to a model).
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentConfigError extends Schema.TaggedError<AgentConfigError>("@harness/agent/AgentConfigError")(
  "AgentConfigError",
  {
    reason: Schema.optionalWith(Schema.Literal("InvalidOption", "UnusableToolSchema"), {
      default: () => "InvalidOption" as const
    }),
    option: Schema.String,
    message: Schema.String
  }
) {}

/**
 * Every error the agent's own API fails with: its operations' errors (including the log's refusal of an idle
 * injection or a receipt's read, `SessionLogError`) and its configuration error.
 *
 * @since 0.0.0
 * @category errors
 */
export type AgentError =
  | AgentConfigError
  | AgentDisposedError
  | AgentBusyError
  | ApprovalError
  | BatchError
  | InboxChangeError
  | InboxFullError
  | TurnRunningError
  | InvalidMessageError
  | Log.SessionLogError

/**
 * The schema of {@link AgentError}.
 *
 * @since 0.0.0
 * @category errors
 */
export const AgentError: Schema.Union<
  [
    typeof AgentConfigError,
    typeof Schemas.AgentDisposedError,
    typeof Schemas.AgentBusyError,
    typeof Approval.ApprovalError,
    typeof Schemas.BatchError,
    typeof Schemas.InboxChangeError,
    typeof Schemas.InboxFullError,
    typeof Schemas.TurnRunningError,
    typeof Message.InvalidMessageError,
    typeof Log.SessionLogError
  ]
> = Schema.Union(
  AgentConfigError,
  Schemas.AgentDisposedError,
  Schemas.AgentBusyError,
  Approval.ApprovalError,
  Schemas.BatchError,
  Schemas.InboxChangeError,
  Schemas.InboxFullError,
  Schemas.TurnRunningError,
  Message.InvalidMessageError,
  Log.SessionLogError
)

// Every member but the log's refusal carries the mark: a member added to the union is marked with it.
for (const member of AgentError.members) {
  if (member !== Log.SessionLogError) Object.defineProperty(member.prototype, TypeId, { value: TypeId })
}
