/**
 * The agent entity on a real `Sharding` (`TestRunner.layer`: one runner, message storage in memory) under the test
 * clock: persisted messages go through the cluster's storage, the entity stays activated while its agent runs and is
 * passivated once the agent is idle, and a message after passivation activates it again over the same session.
 */
import { TestRunner } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Operations } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Fiber, Layer, Option, Ref, TestClock } from "effect"
import { AgentEntity } from "../src/index.js"
import { mid, prompt, sessionId, storedEvents } from "./fixtures.js"

/**
 * Runs `effect` while the test clock moves on in 100 ms steps until it is done: the cluster's own timers (shard
 * acquisition, reply polling) need the clock to move. The outcome is `effect`'s; the clock only lets it finish.
 */
const driven = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    while (Option.isNone(yield* fiber.poll)) yield* TestClock.adjust("100 millis")
    return yield* Fiber.join(fiber)
  })

/** Advances the test clock by `minutes`, a minute at a time, so the cluster's timers (the idle reaper) get to run. */
const minutesPass = (minutes: number) => Effect.repeatN(TestClock.adjust("1 minute"), minutes - 1)

describe("AgentEntity on TestRunner", () => {
  it.scoped("R188/R189: kept alive while its agent runs, passivated when idle, activated again by the next message", () =>
    Effect.gen(function*() {
      const activations = yield* Ref.make(0)
      const disposals = yield* Ref.make(0)
      const entity = AgentEntity.layer({
        maxIdleTime: "30 seconds",
        makeAgent: (log) =>
          Agent.make({ session: log }).pipe(
            Effect.tap(() => Ref.update(activations, (n) => n + 1)),
            Effect.tap(() => Effect.addFinalizer(() => Ref.update(disposals, (n) => n + 1)))
          )
      })
      const cluster = yield* Layer.build(entity.pipe(Layer.provideMerge(TestRunner.layer)))
      const makeClient = yield* AgentEntity.AgentEntity.client.pipe(Effect.provide(cluster))
      const client = makeClient(sessionId)
      const model = yield* S.ScriptedModel
      const store = yield* SessionStore.SessionStore

      yield* model.push(S.hanging(S.text("working")))
      const first = { id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) }
      assert.strictEqual(yield* driven(client.Followup(first)), mid("m-1"))
      const ran = yield* driven(client.AwaitReceipt(new Operations.AwaitReceipt({ id: mid("m-1") })))
      assert.strictEqual(ran._tag, "ran")
      // The turn runs far past the idle time: the entity stays.
      yield* minutesPass(5)
      assert.strictEqual(yield* Ref.get(disposals), 0)
      // The same message again: the cluster's storage (or else the log) answers the original id, nothing is queued.
      assert.strictEqual(yield* driven(client.Followup(first)), mid("m-1"))
      assert.deepStrictEqual(yield* driven(client.ListInbox(new Operations.ListInbox({}))), [])

      yield* driven(
        client.Cancel({ id: mid("c-1"), operation: new Operations.Cancel({ cause: "user", options: { ifTurn: 1 } }) })
      )
      yield* driven(client.WhenIdle(undefined))
      yield* minutesPass(5)
      assert.strictEqual(yield* Ref.get(disposals), 1)

      // The next message activates the entity again, over the same session.
      yield* model.push(S.textResponse("two"))
      yield* driven(client.Followup({ id: mid("m-2"), operation: new Operations.Followup({ message: prompt("two") }) }))
      yield* driven(client.WhenIdle(undefined))
      assert.strictEqual(yield* Ref.get(activations), 2)
      const events = yield* storedEvents(store)
      assert.deepStrictEqual(events.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : []), [
        "aborted",
        "completed"
      ])
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
    }).pipe(Effect.provide(Layer.mergeAll(SessionStore.layerMemory, S.layer()))))
})
