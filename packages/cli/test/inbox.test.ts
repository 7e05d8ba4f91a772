/**
 * The chat's inbox view over a real agent: the badge is the agent's own inbox, and withdrawing answers
 * `Withdrawn` once and `NotPending` after (ADR 0009), changing nothing the second time; for an item no longer
 * pending, the agent's live events tell what became of it (withdrawn, taken, discarded).
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { type AgentEvent, Ids, Message } from "@harness/domain"
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

  it.scoped("drop tells what became of an item no longer pending: withdrawn, taken by the agent, or discarded", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({})
      const fates = yield* Inbox.track(agent)
      const events = yield* agent.subscribe
      const started = (text: string) =>
        Effect.gen(function*() {
          while (true) {
            const event = yield* Queue.take(events)
            if (
              event.type === "session/event" && event.event.type === "user/message" &&
              event.event.data.content.map((b) => b.text).join("") === text
            ) return
          }
        })
      yield* agent.followup(Message.make("tell me a long story"))
      yield* started("tell me a long story")
      const dog = yield* agent.followup(Message.make("what is a dog"))
      const cat = yield* agent.followup(Message.make("what is a cat"))

      // Withdrawn now, then already withdrawn.
      const first = yield* Inbox.drop(agent, fates, cat)
      assert.strictEqual(first._tag, "Withdrawn")
      assert.deepStrictEqual(yield* Inbox.drop(agent, fates, cat), { _tag: "NotPending", id: cat, fate: "withdrawn" })

      // Taken: the story is cancelled keeping the inbox, and the dog's turn runs.
      yield* agent.cancel("user", { keepInbox: true })
      yield* TestClock.adjust("10 minutes")
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Inbox.drop(agent, fates, dog), { _tag: "NotPending", id: dog, fate: "taken" })

      // Discarded: a cancel that does not keep the inbox.
      yield* agent.followup(Message.make("tell me a long story again"))
      yield* started("tell me a long story again")
      const bird = yield* agent.followup(Message.make("what is a bird"))
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.deepStrictEqual(
        yield* Inbox.drop(agent, fates, bird),
        { _tag: "NotPending", id: bird, fate: "discarded" }
      )
      assert.strictEqual(Inbox.fateWords("discarded"), "it was discarded with the inbox")

      // What the chat notes (a claimed prompt it discarded at the double-press window) overrides the claim.
      yield* fates.note(dog, "discarded")
      assert.strictEqual(yield* fates.of(dog), "discarded")
    }).pipe(Effect.provide(OfflineModel.layer({ pace: "1 second" }))))

  it("settle: each item's first fate stands (withdrawn, then a late dequeue, stays withdrawn)", () => {
    const id = (text: string) => Ids.AgentMessageId.make(text)
    const message = (text: string): Message.AgentMessage => ({
      id: id(text),
      content: [{ type: "text", text }],
      source: { kind: "user" }
    })
    const events: ReadonlyArray<AgentEvent.AgentEvent> = [
      { type: "agent/inbox/discard", messages: [message("a")], reason: "withdraw" },
      { type: "agent/inbox/dequeue", message: message("a") },
      { type: "agent/inbox/dequeue", message: message("b") },
      { type: "agent/inbox/discard", messages: [message("c"), message("d")] }
    ]
    const fates = events.reduce(Inbox.settle, new Map())
    assert.deepStrictEqual([...fates], [
      [id("a"), "withdrawn"],
      [id("b"), "taken"],
      [id("c"), "discarded"],
      [id("d"), "discarded"]
    ])
  })
})
