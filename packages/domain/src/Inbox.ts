/**
 * The agent's inbox as callers see it: the items accepted and not yet claimed, logged or discarded, and what
 * withdrawing one of them did. These are the shapes an HTTP API or a remote agent carries for `inbox` and
 * `withdraw`.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { AgentMessageId } from "./Ids.js"
import { NonNegativeInt } from "./Json.js"
import { AgentMessage, InboxPlacement } from "./Message.js"

/**
 * One pending item: a queued turn (waking, or parked until something wakes the agent) or steering staged for the
 * open turn. `order` is the item's acceptance order (smaller was accepted earlier, across placements).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxItem = Schema.Struct({
  ...AgentMessage.fields,
  placement: InboxPlacement,
  order: NonNegativeInt,
  waking: Schema.Boolean
}).annotations({ identifier: "InboxItem" })
/**
 * @since 0.0.0
 * @category models
 */
export type InboxItem = typeof InboxItem.Type

/**
 * What `withdraw(id)` did: the item was pending and is gone (`agent/inbox/discard` was published for exactly it),
 * or the id is not pending — unknown, or already claimed, logged or discarded.
 *
 * @since 0.0.0
 * @category schemas
 */
export const WithdrawResult = Schema.Union(
  Schema.TaggedStruct("Withdrawn", { item: InboxItem }),
  Schema.TaggedStruct("NotPending", { id: AgentMessageId })
).annotations({ identifier: "WithdrawResult" })
/**
 * @since 0.0.0
 * @category models
 */
export type WithdrawResult = typeof WithdrawResult.Type
