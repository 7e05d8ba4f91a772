/**
 * The chat's inbox view over a real agent: the badge is the agent's own inbox, and withdrawing answers
 * `Withdrawn` once and `NotPending` after (ADR 0009), changing nothing the second time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { Effect, Queue, TestClock } from "effect"
import * as Inbox from "../src/internal/inbox.js"
import * as OfflineModel from "../src/OfflineModel.js"

describe("Inbox", () => {
  it.scoped("badge and list come from agent.inbox; withdraw is Withdrawn, then NotPending (R28, ADR 0009)", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({})
      const events = yield* agent.subscribe
      yield* agent.followup(Message.make("tell me a long story"))
      // The story's prompt is logged (its turn streams one word a second on the TestClock): the inbox is empty.
      while (true) {
        const event = yield* Queue.take(events)
        if (event.type === "session/event" && event.event.type === "user/message") break
      }
      assert.strictEqual(Inbox.badge(yield* Inbox.items(agent)), "")

      yield* agent.steer(Message.make("keep it short"))
      yield* agent.followup(Message.make("what is a dog"))
      const cat = yield* agent.followup(Message.make("what is a cat"))
      const items = yield* Inbox.items(agent)
      assert.deepStrictEqual(items.map((i) => [i.placement, i.text, i.source]), [
        ["steering", "keep it short", "user"],
        ["queued", "what is a dog", "user"],
        ["queued", "what is a cat", "user"]
      ])
      assert.strictEqual(Inbox.badge(items), "2 queued · 1 steering")

      const first = yield* Inbox.withdraw(agent, cat)
      assert.strictEqual(first._tag, "Withdrawn")
      assert.strictEqual(first._tag === "Withdrawn" && first.item.text, "what is a cat")
      assert.strictEqual(Inbox.badge(yield* Inbox.items(agent)), "1 queued · 1 steering")
      const again = yield* Inbox.withdraw(agent, cat)
      assert.deepStrictEqual(again, { _tag: "NotPending", id: cat })
      assert.strictEqual(Inbox.badge(yield* Inbox.items(agent)), "1 queued · 1 steering")

      // The withdrawn item never runs: cancel the story keeping the inbox, let the rest run, read the log.
      yield* agent.cancel("user", { keepInbox: true })
      yield* TestClock.adjust("10 minutes")
      yield* agent.whenIdle
      const texts = (yield* agent.log).flatMap((e) =>
        e.type === "user/message" || e.type === "steering/message" ? [e.data.content.map((b) => b.text).join("")] : []
      )
      assert.deepStrictEqual(texts, ["tell me a long story", "keep it short", "what is a dog"])
    }).pipe(Effect.provide(OfflineModel.layer({ pace: "1 second" }))))
})
