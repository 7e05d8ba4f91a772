/**
 * The CLI's view of the agent's inbox: the pending items as the agent reports them (`agent.inbox`, no counters
 * kept here), the badge `2 queued · 1 steering`, and withdrawing one item (`agent.withdraw`, ADR 0009) with a
 * typed answer the chat can print.
 */
import type { Agent } from "@harness/agent"
import type { Ids, Inbox, Message, MessageSource } from "@harness/domain"
import { Content } from "@harness/domain"
import { Effect } from "effect"
import * as Timeline from "./timeline.js"

/** One pending inbox item, as the CLI shows it. */
export interface Item {
  readonly id: Ids.AgentMessageId
  readonly placement: Message.InboxPlacement
  /** Who sent it: `user`, or the plugin / goal that queued it. */
  readonly source: MessageSource.MessageSource["kind"]
  readonly text: string
  /** How lists show it: the text, or what a goal message is (`goal round 2: …`). */
  readonly label: string
}

const itemOf = (item: Inbox.InboxItem): Item => {
  const text = Content.joinText(item.content)
  return {
    id: item.id,
    placement: item.placement,
    source: item.source.kind,
    text,
    label: Timeline.goalLine(item.source, text) ?? text
  }
}

/** The pending items now, in acceptance order. */
export const items = (agent: Agent.Service): Effect.Effect<ReadonlyArray<Item>> =>
  Effect.map(agent.inbox, (all) => [...all].sort((a, b) => a.order - b.order).map(itemOf))

/**
 * What withdrawing did: `Withdrawn` with the item (the agent published `agent/inbox/discard` for exactly it), or
 * `NotPending` when the agent had already claimed, logged or discarded it.
 */
export type Withdrawal =
  | { readonly _tag: "Withdrawn"; readonly item: Item }
  | { readonly _tag: "NotPending"; readonly id: Ids.AgentMessageId }

/**
 * Withdraws one pending item. Contract: decided by the agent under its acceptance lock, so an item the driver is
 * claiming at the same instant is either withdrawn (and never runs) or reported `NotPending` (and runs).
 */
export const withdraw = (agent: Agent.Service, id: Ids.AgentMessageId): Effect.Effect<Withdrawal> =>
  agent.withdraw(id).pipe(
    Effect.map((result): Withdrawal =>
      result._tag === "Withdrawn" ? { _tag: "Withdrawn", item: itemOf(result.item) } : result
    ),
    // The ids come from `agent.inbox`, so they are valid message ids; an invalid one is a bug.
    Effect.orDie
  )

/** The badge: `2 queued · 1 steering`, or the empty string when nothing is pending. */
export const badge = (pending: ReadonlyArray<Item>): string => {
  const queued = pending.filter((item) => item.placement === "queued").length
  const steering = pending.length - queued
  return [queued > 0 ? `${queued} queued` : "", steering > 0 ? `${steering} steering` : ""]
    .filter((part) => part !== "")
    .join(" · ")
}
