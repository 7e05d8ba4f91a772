/**
 * Receipts (ADR 0050): a message's fate computed from the session log's events and inbox records, never from the
 * agent's memory, so a receipt reads the same after a restart. `awaitReceipt` recomputes it as the live events that
 * can change it pass, until it is final.
 */
import type { AgentEvent, Ids as IdsT } from "@harness/domain"
import { Ids, Inbox } from "@harness/domain"
import { Effect, PubSub, Queue } from "effect"
import type { Env } from "./env.js"
import * as Lifecycle from "./lifecycle.js"
import { livePubSub } from "./live.js"
import * as Message from "./message.js"
import { read } from "./state.js"

const checkId = Message.decodeInput(Ids.AgentMessageId, "message id")

/** The receipt now: the inbox records are read before the events, so a message logged meanwhile is seen logged. */
const receiptNow = (env: Env, id: IdsT.AgentMessageId) =>
  Effect.flatMap(
    env.log.inboxRecords,
    (records) => Effect.map(env.log.events, (events) => Inbox.receiptOf(records, events, id))
  )

/** `receipt(id)`. */
export const receipt = (env: Env, id: IdsT.AgentMessageId) =>
  Effect.flatMap(checkId(id), (checked) => receiptNow(env, checked))

/** Whether a live event can change a receipt that is not final. */
const relevant = (event: AgentEvent.AgentEvent): boolean => {
  switch (event.type) {
    case "session/event":
      return event.event.type === "user/message" || event.event.type === "steering/message" ||
        event.event.type === "turn/start" || event.event.type === "turn/end"
    case "agent/error":
    case "agent/cancel-requested":
      return false
    default:
      return true
  }
}

const awaitFinal = Effect.fnUntraced(function*(env: Env, id: IdsT.AgentMessageId) {
  // Subscribed before the first look, so no change after it is missed.
  const events = yield* PubSub.subscribe(yield* livePubSub(env))
  while (true) {
    const now = yield* receiptNow(env, id)
    // After disposal nothing changes any more: a pending item waits for a resume of the session.
    if (Inbox.isFinal(now) || Lifecycle.isDisposed((yield* read(env)).lifecycle)) return now
    while (!relevant(yield* Queue.take(events))) {
      // Only events that can change the receipt make it worth reading the records again.
    }
  }
})

/** `awaitReceipt(id)`: the receipt once it is final (or at disposal). */
export const awaitReceipt = (env: Env, id: IdsT.AgentMessageId) =>
  Effect.flatMap(checkId(id), (checked) => Effect.scoped(awaitFinal(env, checked)))
