/**
 * What the chat shows when it opens a stored session: the conversation so far (condensed), the turns that crash
 * repair closed as interrupted, and the inbox items that will be restored — read from the opened log before the
 * agent starts, so the listing does not depend on how far the restored work got.
 */
import type { SessionEvent, Store } from "@harness/domain"
import type * as Inbox from "./inbox.js"
import { visible } from "./output.js"
import * as Timeline from "./timeline.js"

/** A stored session, summarised for the chat's opening lines. */
export interface Summary {
  readonly turns: number
  /** The last messages, one line each, oldest first; `earlier` says how many were left out before them. */
  readonly conversation: ReadonlyArray<string>
  readonly earlier: number
  /** Turns whose `turn/end` is `interrupted` (closed by crash repair: the process stopped mid-turn). */
  readonly interrupted: ReadonlyArray<number>
  /** The inbox items accepted and never settled, in acceptance order: what the agent restores. */
  readonly pending: ReadonlyArray<Inbox.Item>
}

const text = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  content.map((block) => block.text ?? "").join("")

const line = (words: string, max = 100): string => {
  const flat = visible(words.replace(/\s+/g, " ").trim())
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/**
 * Summarises an open session: its events (after crash repair) and its pending inbox (`SessionLog.pendingInbox`, what
 * the agent restores). Contract: `pending` holds the queued and steering items of `pendingInbox`, in its order
 * (staged context is restored too, but runs nothing); `conversation` shows at most `keep` messages (user, steering
 * and assistant text, goal messages as their goal line).
 */
export const summarise = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  pendingInbox: ReadonlyArray<Store.InboxAccepted>,
  keep = 8
): Summary => {
  const messages: Array<string> = []
  const interrupted: Array<number> = []
  let turns = 0
  for (const event of events) {
    switch (event.type) {
      case "turn/start":
        turns = Math.max(turns, event.data.turn)
        break
      case "turn/end":
        if (event.data.reason.kind === "interrupted") interrupted.push(event.data.turn)
        break
      case "user/message": {
        const words = text(event.data.content)
        const goal = Timeline.goalLine(event.data.source, words)
        messages.push(goal !== undefined ? `◎ ${goal}` : `› ${line(words)}`)
        break
      }
      case "steering/message":
        messages.push(`↪ ${line(text(event.data.content))}`)
        break
      case "assistant/message": {
        const words = event.data.content.filter((block) => block.type === "text").map((block) => block.text).join("")
        if (words.trim() !== "") messages.push(`  ${line(words)}`)
        break
      }
      default:
        break
    }
  }
  const pending = pendingInbox.flatMap((record): ReadonlyArray<Inbox.Item> => {
    if (record.placement === "context") return []
    const words = text(record.message.content)
    return [{
      id: record.message.id,
      placement: record.placement,
      source: record.message.source.kind,
      text: words,
      label: Timeline.goalLine(record.message.source, words) ?? words
    }]
  })
  const shown = messages.slice(-keep)
  return { turns, conversation: shown, earlier: messages.length - shown.length, interrupted, pending }
}
