/**
 * The CLI's view of the agent's inbox, and the one place that needs the agent's `withdraw` / `inbox` (not yet in
 * the Agent service). Until they land, the pending items are counted from the live `agent/inbox/*` events, and
 * `withdraw` reports that it is unavailable; wiring the real calls changes only this module.
 */
import type { Agent } from "@harness/agent"
import type { AgentEvent, Ids, Message } from "@harness/domain"
import { Content } from "@harness/domain"
import { Effect, Option, Ref } from "effect"

/** One pending inbox item. */
export interface Item {
  readonly id: Ids.AgentMessageId
  readonly placement: Message.InboxPlacement
  readonly text: string
}

/** The inbox as the CLI sees it. */
export interface InboxView {
  /** Folds one live event into the view. */
  readonly track: (event: AgentEvent.AgentEvent) => Effect.Effect<void>
  /** The pending items, oldest first. */
  readonly items: Effect.Effect<ReadonlyArray<Item>>
  /**
   * Withdraws one pending item. Contract: `Some(item)` when it was withdrawn; `None` when this agent cannot
   * withdraw (the Agent service has no `withdraw` yet) or the item is no longer pending.
   */
  readonly withdraw: (id: Ids.AgentMessageId) => Effect.Effect<Option.Option<Item>>
  /** Whether `withdraw` can work with this agent. */
  readonly canWithdraw: boolean
}

/** Builds a view over `agent`'s live events (feed them with `track`). */
export const make = (_agent: Agent.Service): Effect.Effect<InboxView> =>
  Effect.gen(function*() {
    const pending = yield* Ref.make<ReadonlyArray<Item>>([])
    const track = (event: AgentEvent.AgentEvent) => {
      switch (event.type) {
        case "agent/inbox/enqueue":
          return Ref.update(pending, (items) => [...items, {
            id: event.message.id,
            placement: event.placement,
            text: Content.joinText(event.message.content)
          }])
        case "agent/inbox/dequeue":
          return Ref.update(pending, (items) => items.filter((item) => item.id !== event.message.id))
        case "agent/inbox/discard": {
          const gone = new Set(event.messages.map((m) => m.id))
          return Ref.update(pending, (items) => items.filter((item) => !gone.has(item.id)))
        }
        default:
          return Effect.void
      }
    }
    return {
      track,
      items: Ref.get(pending),
      // The Agent service has no `withdraw(id)` yet: when it lands, call it here and drop the item on success.
      withdraw: () => Effect.succeed(Option.none()),
      canWithdraw: false
    }
  })

/** The badge: `2 queued · 1 steering`, or the empty string when nothing is pending. */
export const badge = (items: ReadonlyArray<Item>): string => {
  const queued = items.filter((item) => item.placement === "queued").length
  const steering = items.length - queued
  return [queued > 0 ? `${queued} queued` : "", steering > 0 ? `${steering} steering` : ""]
    .filter((part) => part !== "")
    .join(" · ")
}
