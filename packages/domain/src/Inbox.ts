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
import type { SessionEvent } from "./SessionEvent.js"
import type { InboxRecord } from "./Store.js"
import { InboxSettleCause } from "./Store.js"

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

/**
 * What `cancel` did to the inbox (ADR 0059): the ids it discarded (queued turns, then steering, R84) and the ids of
 * the pending items it kept (`keepInbox`), in acceptance order. Staged context is neither: it is logged.
 *
 * @since 0.0.0
 * @category schemas
 */
export const CancelResult = Schema.Struct({
  discarded: Schema.Array(AgentMessageId),
  kept: Schema.Array(AgentMessageId)
}).annotations({ identifier: "CancelResult" })
/**
 * @since 0.0.0
 * @category models
 */
export type CancelResult = typeof CancelResult.Type

/**
 * A message's fate as the session's records tell it (ADR 0050): computed from the log and the inbox records, never
 * held in memory, so it is the same after a restart.
 *
 * - `pending`: accepted, waiting in the inbox (`placement` says which FIFO);
 * - `staged`: injected context accepted into an open turn, not yet logged;
 * - `ran { turn }`: the prompt of that turn;
 * - `joined { turn, step }`: steering logged in that turn; `step` is the first step whose request includes it;
 * - `applied { turn? }`: injected context logged (in that turn, or outside any turn);
 * - `discarded { cause? }`: dropped by a cancel (`user`, `parent`);
 * - `withdrawn`: its sender took it back;
 * - `expired`: its `ttl` (or `expiresAt`) passed before a turn took it (ADR 0059);
 * - `superseded { by }`: a later send with the same `supersedes` key (`by`) replaced it (ADR 0059);
 * - `rejected { reason }`: claimed, but its admission opened no turn (`refused`: blocked or failed; `user`,
 *   `parent`: a cancel stopped it);
 * - `unknown`: no message with this id was accepted in this session.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Receipt = Schema.Union(
  Schema.TaggedStruct("pending", { placement: InboxPlacement }),
  Schema.TaggedStruct("staged", {}),
  Schema.TaggedStruct("ran", { turn: NonNegativeInt }),
  Schema.TaggedStruct("joined", { turn: NonNegativeInt, step: NonNegativeInt }),
  Schema.TaggedStruct("applied", { turn: Schema.optionalWith(NonNegativeInt, { exact: true }) }),
  Schema.TaggedStruct("discarded", { cause: Schema.optionalWith(InboxSettleCause, { exact: true }) }),
  Schema.TaggedStruct("withdrawn", {}),
  Schema.TaggedStruct("expired", {}),
  Schema.TaggedStruct("superseded", { by: AgentMessageId }),
  Schema.TaggedStruct("rejected", { reason: InboxSettleCause }),
  Schema.TaggedStruct("unknown", {})
).annotations({ identifier: "Receipt" })
/**
 * @since 0.0.0
 * @category models
 */
export type Receipt = typeof Receipt.Type

/**
 * Whether a receipt is final: the message left the inbox (`pending`, `staged` may still change).
 *
 * @since 0.0.0
 * @category utils
 */
export const isFinal = (receipt: Receipt): boolean => receipt._tag !== "pending" && receipt._tag !== "staged"

/**
 * The receipt of `id` from a session's inbox records (in commit order) and its events (in `seq` order). Pure.
 *
 * Contract: a logged message's receipt comes from the event that logged it (the first one); otherwise from its
 * `inbox/settled` record; otherwise it is pending or staged, in the placement its last revision gave it.
 *
 * @since 0.0.0
 * @category utils
 */
export const receiptOf = (
  records: ReadonlyArray<InboxRecord>,
  events: ReadonlyArray<SessionEvent>,
  id: AgentMessageId
): Receipt => {
  let placement: "queued" | "steering" | "context" | undefined
  let settled: Receipt | undefined
  for (const record of records) {
    if (record.type === "inbox/accepted") {
      if (record.message.id === id && placement === undefined) placement = record.placement
    } else if (record.type === "approval/requested" || record.type === "approval/answered") continue
    else if (record.id !== id) continue
    else if (record.type === "inbox/revised") {
      if (record.change._tag === "place") placement = record.change.placement
    } else if (settled === undefined) {
      settled = record.fate === "withdrawn"
        ? { _tag: "withdrawn" }
        : record.fate === "discarded" && record.cause === "expired"
        ? { _tag: "expired" }
        : record.fate === "discarded" && record.cause === "superseded" && record.by !== undefined
        ? { _tag: "superseded", by: record.by }
        : record.fate === "discarded"
        ? record.cause === undefined ? { _tag: "discarded" } : { _tag: "discarded", cause: record.cause }
        : record.fate === "claimed"
        ? { _tag: "rejected", reason: record.cause ?? "refused" }
        : undefined
    }
  }
  let turn: number | undefined
  let steps = 0
  for (const event of events) {
    switch (event.type) {
      case "turn/start":
        turn = event.data.turn
        steps = 0
        break
      case "turn/end":
        turn = undefined
        break
      case "step/start":
        steps = event.data.step
        break
      case "steering/message":
        if (event.data.messageId === id) return { _tag: "joined", turn: event.data.turn, step: steps + 1 }
        break
      case "user/message":
        if (event.data.messageId !== id) break
        if (turn === undefined) return { _tag: "applied" }
        return placement === "context" ? { _tag: "applied", turn } : { _tag: "ran", turn }
    }
  }
  if (settled !== undefined) return settled
  if (placement === undefined) return { _tag: "unknown" }
  return placement === "context" ? { _tag: "staged" } : { _tag: "pending", placement }
}
