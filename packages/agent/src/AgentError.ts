/**
 * The agent's errors. Each is a schema, so it can cross a process boundary (an HTTP API, a cluster) intact.
 *
 * @since 0.0.0
 */
import { Ids } from "@harness/domain"
import { Schema } from "effect"

/**
 * The agent was disposed (its scope closed): it accepts nothing more.
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentDisposedError extends Schema.TaggedError<AgentDisposedError>("@harness/agent/AgentDisposedError")(
  "AgentDisposedError",
  { message: Schema.String }
) {}

/**
 * `retry` was called while an admission or a turn is active.
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentBusyError extends Schema.TaggedError<AgentBusyError>("@harness/agent/AgentBusyError")(
  "AgentBusyError",
  { message: Schema.String }
) {}

/**
 * The agent's options are invalid. `option` names the offending option.
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentConfigError extends Schema.TaggedError<AgentConfigError>("@harness/agent/AgentConfigError")(
  "AgentConfigError",
  { option: Schema.String, message: Schema.String }
) {}

/**
 * A batch stopped part-way: an idle injection's append failed. `applied` holds the results of the operations
 * applied before it (ids for sends, `undefined` for cancels), so the caller knows which ids exist; `cause` is the
 * append's failure.
 *
 * @since 0.0.0
 * @category errors
 */
export class BatchError extends Schema.TaggedError<BatchError>("@harness/agent/BatchError")(
  "BatchError",
  {
    applied: Schema.Array(Schema.UndefinedOr(Ids.AgentMessageId)),
    cause: Schema.Unknown,
    message: Schema.String
  }
) {}
