/**
 * The agent's errors, one family shaped like `@effect/ai`'s `AiError`: each error a schema (so it can cross a
 * process boundary — an HTTP API, a cluster — intact and be logged durably), sub-kinds in a `reason` where one
 * class covers several causes, structured fields beside a readable `message`, and one union type and union schema
 * ({@link AgentError}). The errors of the operations are defined in `@harness/domain`'s `Operations` (the
 * vocabulary the operations' schemas are written in) and re-exported here.
 *
 * @since 0.0.0
 */
import { Message, Operations, SessionLogError as Log } from "@harness/domain"
import { Schema } from "effect"

/**
 * The agent was disposed (its scope closed): it accepts nothing more.
 *
 * @since 0.0.0
 * @category errors
 */
export const AgentDisposedError = Operations.AgentDisposedError
/**
 * @since 0.0.0
 * @category errors
 */
export type AgentDisposedError = Operations.AgentDisposedError

/**
 * `retry` was called while an admission or a turn is active.
 *
 * @since 0.0.0
 * @category errors
 */
export const AgentBusyError = Operations.AgentBusyError
/**
 * @since 0.0.0
 * @category errors
 */
export type AgentBusyError = Operations.AgentBusyError

/**
 * A batch stopped part-way: an idle injection's append was refused. `applied` holds the results of the operations
 * applied before it; `cause` is the refused append's `SessionLogError`.
 *
 * @since 0.0.0
 * @category errors
 */
export const BatchError = Operations.BatchError
/**
 * @since 0.0.0
 * @category errors
 */
export type BatchError = Operations.BatchError

/**
 * A pending item could not be edited, moved, promoted or demoted; `reason` says why (`unknown`, `taken`,
 * `not-queued`, `not-steering`, `no-open-turn`, `disposed`).
 *
 * @since 0.0.0
 * @category errors
 */
export const InboxChangeError = Operations.InboxChangeError
/**
 * @since 0.0.0
 * @category errors
 */
export type InboxChangeError = Operations.InboxChangeError

/**
 * A send said `whenBusy: "reject"` while a turn was running: nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export const TurnRunningError = Operations.TurnRunningError
/**
 * @since 0.0.0
 * @category errors
 */
export type TurnRunningError = Operations.TurnRunningError

/**
 * A send would have taken a bounded inbox past `maxPending` (with `overflow: "reject"`): nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export const InboxFullError = Operations.InboxFullError
/**
 * @since 0.0.0
 * @category errors
 */
export type InboxFullError = Operations.InboxFullError

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
 * injection, `SessionLogError`) and its configuration error.
 *
 * @since 0.0.0
 * @category errors
 */
export type AgentError =
  | AgentConfigError
  | AgentDisposedError
  | AgentBusyError
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
    typeof Operations.AgentDisposedError,
    typeof Operations.AgentBusyError,
    typeof Operations.BatchError,
    typeof Operations.InboxChangeError,
    typeof Operations.InboxFullError,
    typeof Operations.TurnRunningError,
    typeof Message.InvalidMessageError,
    typeof Log.SessionLogError
  ]
> = Schema.Union(
  AgentConfigError,
  Operations.AgentDisposedError,
  Operations.AgentBusyError,
  Operations.BatchError,
  Operations.InboxChangeError,
  Operations.InboxFullError,
  Operations.TurnRunningError,
  Message.InvalidMessageError,
  Log.SessionLogError
)
