/**
 * One accepted-message shape (ADR 0073): a message accepted by `send` is one frozen `AgentMessage` object from its
 * acceptance to the log — the object `enqueue` publishes is the one the `promptSubmit` hook receives, the one
 * `dequeue` and `discard` carry (R92), and what its `inbox/accepted` record holds — and a message restored from a
 * stored session is frozen as deeply as one accepted live (R21, R228). Time is the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Hooks } from "@harness/agent"
import type { Message } from "@harness/domain"
import { Ids } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Ref, TestClock } from "effect"
import { agentOn, awaitSleeper, live, mid, prompt, routes, setup, withDurableStore } from "./fixtures.js"

/** Whether `message`, its content, every block and its source are frozen. */
const deeplyFrozen = (message: Message.AgentMessage): boolean =>
  Object.isFrozen(message) && Object.isFrozen(message.content) && message.content.every(Object.isFrozen) &&
  Object.isFrozen(message.source)

/** A `promptSubmit` hook that records each message it is given (then allows it), and what it recorded. */
const recordingHook = Effect.map(Ref.make<ReadonlyArray<Message.AgentMessage>>([]), (admitted) => ({
  admitted,
  promptSubmit: (({ message }, next) =>
    Effect.zipRight(Ref.update(admitted, (all) => [...all, message]), next)) satisfies Hooks.PromptSubmit<never>
}))

describe("the accepted message", () => {
  it.scoped("is one frozen object from enqueue to the hook, dequeue, discard and its inbox record", () =>
    Effect.gen(function*() {
      const { admitted, promptSubmit } = yield* recordingHook
      const session = yield* SessionLog.make()
      const { agent, model, rec } = yield* setup({ session, hooks: { promptSubmit } })
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.followup(prompt("queued"), { id: mid("queued") })
      yield* agent.steer(prompt("steering"), { id: mid("steering") })
      yield* agent.send(prompt("parked"), { ...routes.park, id: mid("parked") })
      yield* agent.withdraw(mid("queued"))
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      const events = yield* rec.events
      const enqueued = new Map(live(events, "agent/inbox/enqueue").map((event) => [event.message.id, event.message]))
      assert.deepStrictEqual([...enqueued.keys()], ["first", "queued", "steering", "parked"])
      for (const message of enqueued.values()) assert.isTrue(deeplyFrozen(message))
      // The prompt the hook admitted is the accepted object itself.
      assert.strictEqual((yield* Ref.get(admitted))[0], enqueued.get(mid("first")))
      // The claimed prompt, steering drained into its turn, and the withdrawn follow-up carry the objects `enqueue`
      // carried (R92).
      const dequeued = live(events, "agent/inbox/dequeue").map((event) => event.message)
      assert.deepStrictEqual(dequeued.map((message) => message.id), ["first", "steering"])
      for (const message of dequeued) assert.strictEqual(message, enqueued.get(message.id))
      const discarded = live(events, "agent/inbox/discard").flatMap((event) => event.messages)
      assert.deepStrictEqual(discarded.map((message) => message.id), ["queued"])
      assert.strictEqual(discarded[0], enqueued.get(mid("queued")))
      // Each `inbox/accepted` record holds the accepted message, as it is: the same keys and values.
      const records = (yield* session.inboxRecords).filter((record) => record.type === "inbox/accepted")
      for (const record of records) {
        if (record.type === "inbox/accepted") assert.deepStrictEqual(record.message, enqueued.get(record.message.id))
      }
      assert.strictEqual(records.length, 4)
      // The log names the message by `messageId`, with the accepted content.
      const logged = (yield* agent.log).flatMap((event) =>
        event.type === "user/message" && event.data.messageId !== undefined ? [event.data] : []
      )
      assert.deepStrictEqual(logged.map((data) => data.messageId), [mid("first")])
      assert.deepStrictEqual(logged[0]!.content, enqueued.get(mid("first"))!.content)
    }).pipe(Effect.provide([S.layer(), SessionStore.layerMemory])))

  it.scoped("an edit accepts a new frozen object under the same id, which the hook then receives", () =>
    Effect.gen(function*() {
      const { admitted, promptSubmit } = yield* recordingHook
      const { agent, model, rec } = yield* setup({ hooks: { promptSubmit } })
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.followup(prompt("second"), { id: mid("second") })
      yield* agent.edit(mid("second"), prompt("second, edited"))
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      const events = yield* rec.events
      const enqueued = live(events, "agent/inbox/enqueue").find((event) => event.message.id === "second")!.message
      const edited = live(events, "agent/inbox/edit").map((event) => event.message)
      assert.strictEqual(edited.length, 1)
      assert.notStrictEqual(edited[0], enqueued)
      assert.isTrue(deeplyFrozen(edited[0]!))
      assert.deepStrictEqual(edited[0]!.content, prompt("second, edited").content)
      const hooked = (yield* Ref.get(admitted)).map((message) => message.id)
      assert.deepStrictEqual(hooked, ["first", "second"])
      assert.strictEqual((yield* Ref.get(admitted))[1], edited[0])
    }).pipe(Effect.provide(S.layer())))

  it.effect("restored from a stored session, it reaches the hook as deeply frozen as one accepted live", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        const id = Ids.SessionId.make("accepted-message-restore")
        yield* Effect.scoped(Effect.gen(function*() {
          const { agent } = yield* agentOn(yield* SessionLog.make({ id }), [])
          yield* agent.send(prompt("waiting"), { ...routes.park, id: mid("waiting") })
        }))
        const { admitted, promptSubmit } = yield* recordingHook
        const { agent } = yield* agentOn(yield* SessionLog.open(id), [S.textResponse("a"), S.textResponse("b")], {
          restoredInbox: "park",
          hooks: { promptSubmit }
        })
        // A waking send claims the restored, parked item first (R31).
        yield* agent.followup(prompt("wake"), { id: mid("wake") })
        yield* agent.whenIdle
        const messages = yield* Ref.get(admitted)
        assert.deepStrictEqual(messages.map((message) => message.id), ["waiting", "wake"])
        for (const message of messages) assert.isTrue(deeplyFrozen(message))
        assert.deepStrictEqual(messages[0]!.content, prompt("waiting").content)
      }).pipe(Effect.scoped)
    ))
})
