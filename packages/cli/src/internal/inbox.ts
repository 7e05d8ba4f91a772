/**
 * The CLI's view of the agent's inbox: the pending items as the agent reports them (`agent.inbox`, no counters
 * kept here), the badge `2 queued · 1 steering`, and withdrawing one item (`agent.withdraw`, ADR 0009) with a
 * typed answer the chat can print — for an item that is no longer pending, what became of it (its fate, read from
 * the agent's live events) — and changing one in place (`agent.edit`, `move`, `promote`, ADR 0050), with the agent's
 * refusal in words.
 */
import type { Agent } from "@harness/agent"
import type { AgentError, AgentEvent, Ids, Inbox, MessageSource } from "@harness/domain"
import { Content, Message } from "@harness/domain"
import { Duration, Effect, Option, Queue, type Scope, Stream, SubscriptionRef } from "effect"
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
 * What became of an item that left the inbox: `taken` by the agent (claimed for a turn, or steering that joined
 * one), `withdrawn` (`/drop`, Up), or `discarded` (a cancel that did not keep the inbox).
 */
export type Fate = "taken" | "withdrawn" | "discarded"

/**
 * The fates a live event settles, added to `fates`. Contract: the first fate of an item stands (an item leaves the
 * inbox once: its `agent/inbox/dequeue` or `agent/inbox/discard`; its logged message only confirms a claim).
 */
export const settle = (
  fates: ReadonlyMap<Ids.AgentMessageId, Fate>,
  event: AgentEvent.AgentEvent
): ReadonlyMap<Ids.AgentMessageId, Fate> => {
  const settled: ReadonlyArray<readonly [Ids.AgentMessageId, Fate]> = event.type === "agent/inbox/dequeue"
    ? [[event.message.id, "taken"]]
    : event.type === "agent/inbox/discard"
    ? event.messages.map((message) => [message.id, event.reason === "withdraw" ? "withdrawn" : "discarded"] as const)
    : event.type === "session/event" && event.event.type === "steering/message"
    ? [[event.event.data.messageId, "taken"]]
    : event.type === "session/event" && event.event.type === "user/message" && event.event.data.messageId !== undefined
    ? [[event.event.data.messageId, "taken"]]
    : []
  const fresh = settled.filter(([id]) => !fates.has(id))
  return fresh.length === 0 ? fates : new Map([...fates, ...fresh])
}

/** What became of the items that left the inbox since {@link track} started. */
export interface Fates {
  /**
   * What the chat itself decided for an item the agent cannot tell apart (a claimed prompt it dropped or
   * discarded before it reached the model). Contract: a note overrides what the events said.
   */
  readonly note: (id: Ids.AgentMessageId, fate: Fate) => Effect.Effect<void>
  /**
   * The fate of `id`. Contract: the agent publishes the event that settles an item before `withdraw` can answer
   * `NotPending` for it, so this waits for that event to be folded; `undefined` only for an item whose event came
   * before tracking started (a second at most is spent looking for it).
   */
  readonly of: (id: Ids.AgentMessageId) => Effect.Effect<Fate | undefined>
}

/** Follows the agent's live events for the fates of its items, for as long as the scope lasts. */
export const track = (agent: Agent.Service): Effect.Effect<Fates, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fates = yield* SubscriptionRef.make<ReadonlyMap<Ids.AgentMessageId, Fate>>(new Map())
    const events = yield* agent.subscribe
    yield* Effect.forever(
      Effect.flatMap(Queue.take(events), (event) =>
        SubscriptionRef.updateSome(fates, (now) => {
          const next = settle(now, event)
          return next === now ? Option.none() : Option.some(next)
        }))
    ).pipe(Effect.forkScoped)
    return {
      note: (id, fate) => SubscriptionRef.update(fates, (now) => new Map([...now, [id, fate]])),
      of: (id) =>
        fates.changes.pipe(
          Stream.filterMap((now) => Option.fromNullable(now.get(id))),
          Stream.runHead,
          Effect.timeoutTo({
            duration: Duration.seconds(1),
            onSuccess: Option.getOrUndefined,
            onTimeout: () => undefined
          })
        )
    }
  })

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

/** What dropping did: a {@link Withdrawal}, and for an item no longer pending, what became of it. */
export type Drop =
  | { readonly _tag: "Withdrawn"; readonly item: Item }
  | { readonly _tag: "NotPending"; readonly id: Ids.AgentMessageId; readonly fate: Fate | undefined }

/** {@link withdraw}, noting the withdrawal in `fates`, or telling what became of an item no longer pending. */
export const drop = (agent: Agent.Service, fates: Fates, id: Ids.AgentMessageId): Effect.Effect<Drop> =>
  Effect.flatMap(withdraw(agent, id), (result): Effect.Effect<Drop> =>
    result._tag === "Withdrawn"
      ? Effect.as(fates.note(id, "withdrawn"), result)
      : Effect.map(fates.of(id), (fate) => ({ _tag: "NotPending", id, fate })))

/** Why an item is no longer pending, in words: `the agent already took it`, `it was already withdrawn`, …. */
export const fateWords = (fate: Fate | undefined): string =>
  fate === "taken"
    ? "the agent already took it"
    : fate === "withdrawn"
    ? "it was already withdrawn"
    : fate === "discarded"
    ? "it was discarded with the inbox"
    : "it already left the inbox"

/** The badge: `2 queued · 1 steering`, or the empty string when nothing is pending. */
export const badge = (pending: ReadonlyArray<Item>): string => {
  const queued = pending.filter((item) => item.placement === "queued").length
  const steering = pending.length - queued
  return [queued > 0 ? `${queued} queued` : "", steering > 0 ? `${steering} steering` : ""]
    .filter((part) => part !== "")
    .join(" · ")
}

/**
 * What changing an item did (`agent.edit`, `move`, `promote`): `Changed` with the item as it is now, or `Refused`
 * with the agent's reason (`InboxChangeError`, R139) — nothing changed then.
 */
export type Change =
  | { readonly _tag: "Changed"; readonly item: Item }
  | { readonly _tag: "Refused"; readonly reason: InboxChangeReason }

/** Why the agent refused to change an item (R139). */
export type InboxChangeReason = AgentError.InboxChangeReason

const changed = (
  effect: Effect.Effect<Inbox.InboxItem, Message.InvalidMessageError | AgentError.InboxChangeError>
): Effect.Effect<Change, Message.InvalidMessageError> =>
  effect.pipe(
    Effect.map((item): Change => ({ _tag: "Changed", item: itemOf(item) })),
    Effect.catchTag("InboxChangeError", (e) => Effect.succeed<Change>({ _tag: "Refused", reason: e.reason }))
  )

/**
 * Replaces a pending item's text in place (`agent.edit`, R136): it keeps its id, placement and position. Contract:
 * decided by the agent under its acceptance lock, so an item the driver claims at the same instant is either
 * edited (and runs with the new text) or `Refused` `taken` (and runs as it was). An invalid message fails.
 */
export const edit = (agent: Agent.Service, id: Ids.AgentMessageId, text: string) =>
  changed(agent.edit(id, Message.make(text)))

/** Moves a pending item to `position` (0 first) among the items of its placement (`agent.move`, R137). */
export const move = (agent: Agent.Service, id: Ids.AgentMessageId, position: number) =>
  changed(agent.move(id, position))

/** Turns a queued item into steering of the running turn (`agent.promote`, R138). */
export const promote = (agent: Agent.Service, id: Ids.AgentMessageId) => changed(agent.promote(id))

/** Why the agent refused a change, in words: `the agent already took it`, `no turn is running`, …. */
export const refusalWords = (reason: InboxChangeReason): string =>
  reason === "taken"
    ? "the agent already took it (or it left the inbox)"
    : reason === "unknown"
    ? "the agent does not know it"
    : reason === "not-queued"
    ? "it is steering already"
    : reason === "not-steering"
    ? "it is a queued turn, not steering"
    : reason === "no-open-turn"
    ? "no turn is running to steer (it stays queued)"
    : "the session is closed"
