/**
 * The errors of the agent's operations. They are defined in the vocabulary because the operations' schemas
 * (`Operations`) name them as failures, so a remote caller decodes the same classes the in-process API fails with.
 * `@harness/agent`'s `AgentError` module is their public home: it re-exports them with the agent's other errors, one
 * union type and schema, the family's `TypeId` and `isAgentError` (ADR 0074).
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { AgentMessageId } from "./Ids.js"
import { SessionLogError } from "./SessionLogError.js"

/**
 * One result of a batch: the id of a send, or nothing for a cancel — `undefined` in process, `null` in JSON (which
 * cannot carry `undefined` in an array).
 *
 * @since 0.0.0
 * @category schemas
 */
export const BatchResult = Schema.Union(
  AgentMessageId,
  Schema.transform(Schema.Null, Schema.Undefined, { strict: true, decode: () => undefined, encode: () => null })
).annotations({ identifier: "BatchResult" })
/**
 * @since 0.0.0
 * @category models
 */
export type BatchResult = typeof BatchResult.Type

/**
 * The agent was disposed (its scope closed): it accepts nothing more and runs no more turns.
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentDisposedError extends Schema.TaggedError<AgentDisposedError>("@harness/agent/AgentDisposedError")(
  "AgentDisposedError",
  { message: Schema.String }
) {}

/**
 * `retry` or `compact` was called while an admission or a turn is active.
 *
 * @since 0.0.0
 * @category errors
 */
export class AgentBusyError extends Schema.TaggedError<AgentBusyError>("@harness/agent/AgentBusyError")(
  "AgentBusyError",
  { message: Schema.String }
) {}

/**
 * A batch stopped part-way: an idle injection's append was refused. `applied` holds the results of the operations
 * applied before it (ids for sends, `undefined` for cancels), so the caller knows which ids exist; `cause` is the
 * refused append's error.
 *
 * @since 0.0.0
 * @category errors
 */
export class BatchError extends Schema.TaggedError<BatchError>("@harness/agent/BatchError")(
  "BatchError",
  {
    applied: Schema.Array(BatchResult),
    cause: SessionLogError,
    message: Schema.String
  }
) {}

/**
 * A send said `whenBusy: "reject"` and found an admission or a turn running: nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export class TurnRunningError extends Schema.TaggedError<TurnRunningError>("@harness/agent/TurnRunningError")(
  "TurnRunningError",
  { message: Schema.String }
) {}

/**
 * A send would have taken a bounded inbox (`maxPending`, `overflow: "reject"`) past its limit: nothing was accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export class InboxFullError extends Schema.TaggedError<InboxFullError>("@harness/agent/InboxFullError")(
  "InboxFullError",
  { limit: Schema.Number, message: Schema.String }
) {}

/**
 * Why a pending item could not be changed (`edit`, `move`, `promote`, `demote`):
 * - `unknown`: no message with this id was ever accepted here;
 * - `taken`: it was, but it is no longer pending (claimed, drained, logged, discarded, withdrawn);
 * - `not-queued`: `promote` of an item that is steering already;
 * - `not-steering`: `demote` of an item that is a queued turn;
 * - `no-open-turn`: `promote` while no admission or turn is open to join;
 * - `disposed`: the agent was disposed.
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxChangeReason = Schema.Literal(
  "unknown",
  "taken",
  "not-queued",
  "not-steering",
  "no-open-turn",
  "disposed"
)
/**
 * @since 0.0.0
 * @category models
 */
export type InboxChangeReason = typeof InboxChangeReason.Type

/**
 * A pending item could not be changed: its id and why (`reason`). Nothing changed.
 *
 * @since 0.0.0
 * @category errors
 */
export class InboxChangeError extends Schema.TaggedError<InboxChangeError>("@harness/agent/InboxChangeError")(
  "InboxChangeError",
  { id: AgentMessageId, reason: InboxChangeReason, message: Schema.String }
) {}
