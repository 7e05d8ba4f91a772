/**
 * The agent's outbox: accepted input staged for the open turn — steering, and context (injected input, a tool
 * result's contexts) — and its drains into the log (R47): steering becomes `steering/message`, context
 * `user/message`. The outbox itself is part of the inbox's snapshot (`inbox.ts`); this module stages and drains it.
 */
import type { AgentEvent, Message, SessionEvent } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Chunk, Effect } from "effect"
import * as Inbox from "./inbox.js"
import type { OutboxItem } from "./inbox.js"
import type { LiveParts } from "./live.js"
import { publishAll } from "./live.js"

/** The outbox, as the agent's environment (`env.ts`) holds it: inside its inbox. */
export interface OutboxParts {
  /** The inbox: the queued FIFO and the snapshot of everything pending, the outbox included (see `inbox.ts`). */
  readonly inbox: Inbox.Inbox
}

/** Whether the outbox holds steering now. */
export const hasSteering = (env: OutboxParts): Effect.Effect<boolean> =>
  Effect.map(Inbox.get(env.inbox), Inbox.hasSteering)

/** Stages tool-result contexts on the outbox (they are logged by the next drain, R68). */
export const stageContexts = (
  env: OutboxParts,
  contexts: ReadonlyArray<Message.UserMessageData>
): Effect.Effect<void> =>
  contexts.length === 0 ?
    Effect.void :
    Inbox.modify(
      env.inbox,
      (s) => contexts.reduce<Inbox.Snapshot>((acc, message) => Inbox.staged(acc, { _tag: "context", message }), s)
    )

/** The durable event an outbox item becomes when drained into `turn` (or outside any turn). */
export const outboxEvent = (
  item: OutboxItem,
  turn: number | undefined
): SessionEvent.SessionEventInputOf<"user/message"> | SessionEvent.SessionEventInputOf<"steering/message"> =>
  item._tag === "steering"
    ? {
      type: "steering/message",
      data: { turn: turn!, messageId: item.message.id, content: item.message.content, source: item.message.source }
    }
    : { type: "user/message", data: userMessageData(item.message) }

/**
 * The data of a `user/message` for input: the log's event names an accepted message's id `messageId` (R109), the
 * one place that spelling is written.
 */
export const userMessageData = (
  input: Inbox.UserInput
): SessionEvent.SessionEventInputOf<"user/message">["data"] =>
  input.id === undefined
    ? { content: input.content, source: input.source }
    : { messageId: input.id, content: input.content, source: input.source }

/**
 * What a drain of the outbox would log (R47): the events of a prefix of the outbox (`limit` items; `only` limits
 * it to one kind of item, the others keep their places), and the outbox left after it. Pure.
 */
export const drainPlan = (
  snapshot: Inbox.Snapshot,
  options: { readonly turn: number | undefined; readonly limit?: number; readonly only?: OutboxItem["_tag"] }
): {
  readonly taken: ReadonlyArray<OutboxItem>
  readonly events: ReadonlyArray<SessionEvent.SessionEventInput>
  readonly rest: Chunk.Chunk<OutboxItem>
} => {
  const items = Chunk.toReadonlyArray(snapshot.outbox)
  const limit = Math.min(options.limit ?? Infinity, items.length)
  const taken: Array<OutboxItem> = []
  const kept: Array<OutboxItem> = []
  for (let index = 0; index < limit; index++) {
    const item = items[index]!
    if (options.only !== undefined && item._tag !== options.only) kept.push(item)
    else taken.push(item)
  }
  return {
    taken,
    events: taken.map((item) => outboxEvent(item, options.turn)),
    rest: taken.length === 0 ? snapshot.outbox : Chunk.unsafeFromArray([...kept, ...items.slice(limit)])
  }
}

/**
 * The live events of what a drain logged, in order: each event as `session/event`, followed for steering by its
 * `agent/inbox/dequeue`. Pure.
 */
export const drainedLive = (
  taken: ReadonlyArray<OutboxItem>,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Array<AgentEvent.AgentEvent> => {
  const live: Array<AgentEvent.AgentEvent> = []
  taken.forEach((item, index) => {
    live.push({ type: "session/event", event: events[index]! })
    if (item._tag === "steering") live.push({ type: "agent/inbox/dequeue", message: item.message })
  })
  return live
}

/** Publishes what a drain logged (see {@link drainedLive}). Returns whether any steering was drained. */
const publishDrained = (
  env: LiveParts,
  taken: ReadonlyArray<OutboxItem>,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<boolean> =>
  Effect.as(
    publishAll(env, () => drainedLive(taken, events)),
    taken.some((item) => item._tag === "steering")
  )

/**
 * Drains a prefix of the outbox into the log (R47): steering becomes `steering/message` (and publishes its
 * `dequeue`), context becomes `user/message`. Runs inside the section's transaction `tx`.
 *
 * Contract: one `appendAll`, so all or nothing: items leave the outbox only once appended; if the log refuses,
 * the outbox is unchanged (R63, as a port should) and the failure is returned. `only` limits the drain to one
 * kind of item (the others keep their places).
 */
export const drain = Effect.fnUntraced(
  function*(
    env: OutboxParts & LiveParts,
    tx: SessionLog.Transaction,
    options: { readonly turn: number | undefined; readonly limit?: number; readonly only?: OutboxItem["_tag"] }
  ) {
    const plan = drainPlan(yield* Inbox.get(env.inbox), options)
    if (plan.taken.length === 0) return { steering: false }
    // Outbox items are accepted input (decoded and frozen at `send`, or a tool's context decoded when it returned).
    const events = yield* tx.appendTrusted(plan.events)
    yield* Inbox.modify(env.inbox, (s) => ({ ...s, outbox: plan.rest }))
    return { steering: yield* publishDrained(env, plan.taken, events) }
  }
)
