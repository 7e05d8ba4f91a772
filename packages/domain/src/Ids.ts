/**
 * Branded identifiers. Ids are opaque strings; the brand keeps a session id from being passed where a message id
 * is expected, and decoding checks that an id is a non-empty string.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

const Id = Schema.String.pipe(
  Schema.minLength(1, { message: () => "an id must be a non-empty string" })
)

/**
 * Identifies a session, and the agent that drives it (an agent shares its session's id).
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionId = Id.pipe(Schema.brand("SessionId"))
/**
 * @since 0.0.0
 * @category models
 */
export type SessionId = typeof SessionId.Type

/**
 * Identifies one accepted message. Minted by the agent, or supplied by the caller for idempotent delivery.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AgentMessageId = Id.pipe(Schema.brand("AgentMessageId"))
/**
 * @since 0.0.0
 * @category models
 */
export type AgentMessageId = typeof AgentMessageId.Type

/**
 * Identifies one tool call, as the model named it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolCallId = Id.pipe(Schema.brand("ToolCallId"))
/**
 * @since 0.0.0
 * @category models
 */
export type ToolCallId = typeof ToolCallId.Type
