/**
 * The inbox's FIFO of queued turns is made by the first offer and kept (ADR 0079): an inbox never offered a turn holds
 * no `Queue`, later turns make none, and the order of what is queued survives claims, takes and offers back. The
 * functions run as the agent runs them, one at a time (holding its lock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import { Effect, Option } from "effect"
import * as Inbox from "../src/internal/inbox.js"

const item = (id: string, order: number, wakeup = true): Inbox.QueuedItem => ({
  message: Inbox.accepted(Message.make(id), Ids.AgentMessageId.make(id)),
  wakeup,
  order
})

const claimedId = (claimed: Option.Option<Inbox.QueuedItem>) => Option.getOrUndefined(claimed)?.message.id

describe("the inbox's Queue", () => {
  it.effect("made by the first offer, kept by the claim that empties it and used by the next offer", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox.make
      assert.isUndefined(inbox.queue)
      assert.isTrue(Option.isNone(yield* Inbox.claim(inbox)))
      assert.isUndefined(inbox.queue)
      yield* Inbox.offer(inbox, item("a", 0))
      const first = inbox.queue
      assert.isDefined(first)
      yield* Inbox.offer(inbox, item("b", 1))
      assert.strictEqual(claimedId(yield* Inbox.claim(inbox)), "a")
      assert.strictEqual(claimedId(yield* Inbox.claim(inbox)), "b")
      assert.strictEqual(inbox.queue, first)
      assert.strictEqual((yield* Inbox.get(inbox)).queued, 0)
      yield* Inbox.offer(inbox, item("c", 2))
      assert.strictEqual(inbox.queue, first)
      assert.deepStrictEqual((yield* Inbox.list(inbox, false)).map((i) => i.id), ["c"])
      assert.strictEqual(claimedId(yield* Inbox.claim(inbox)), "c")
      assert.strictEqual(inbox.queue, first)
    }))

  it.effect("a parked item stays ahead; reads leave the order as it was; a discard or the last withdrawal empties it", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox.make
      // Reading an empty inbox makes no Queue.
      assert.deepStrictEqual(yield* Inbox.list(inbox, false), [])
      assert.deepStrictEqual(yield* Inbox.pendingIds(inbox), [])
      assert.isUndefined(inbox.queue)
      yield* Inbox.offer(inbox, item("p", 0, false))
      yield* Inbox.offer(inbox, item("q", 1))
      yield* Inbox.offer(inbox, item("r", 2))
      assert.deepStrictEqual(yield* Inbox.pendingIds(inbox), ["p", "q", "r"])
      assert.strictEqual(claimedId(yield* Inbox.claim(inbox)), "p")
      assert.isTrue(Option.isSome(yield* Inbox.withdraw(inbox, Ids.AgentMessageId.make("q"), false)))
      assert.deepStrictEqual(yield* Inbox.pendingIds(inbox), ["r"])
      assert.isTrue(Option.isSome(yield* Inbox.withdraw(inbox, Ids.AgentMessageId.make("r"), false)))
      assert.deepStrictEqual(yield* Inbox.pendingIds(inbox), [])
      yield* Inbox.offer(inbox, item("s", 3, false))
      yield* Inbox.offer(inbox, item("t", 4, false))
      assert.deepStrictEqual((yield* Inbox.discardAll(inbox)).map((m) => m.id), ["s", "t"])
      assert.deepStrictEqual(yield* Inbox.pendingIds(inbox), [])
      assert.strictEqual((yield* Inbox.get(inbox)).queued, 0)
    }))
})
