/**
 * The agent and its session log are plain services a caller may destructure (`const { followup, whenIdle } =
 * agent`): their operations are closures and their effects and streams are built when read (ADR 0040), so a
 * destructured member works as the member itself, and an effect read once runs again with what is current then.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { SessionLog } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Queue } from "effect"
import { prompt } from "./fixtures.js"

describe("destructured services", () => {
  it.scoped("an agent's destructured operations and reads act on the agent; a read effect reruns fresh", () =>
    Effect.gen(function*() {
      const session = yield* SessionLog.memory()
      const agent = yield* Agent.make({ model: "m", session })
      const { acceptsNextStep, followup, inbox, log, status, subscribe, whenIdle } = agent
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("one"), S.textResponse("two"))
      const events = yield* subscribe
      assert.strictEqual(yield* status, "idle")
      assert.isFalse(yield* acceptsNextStep)
      yield* followup(prompt("first"))
      yield* whenIdle
      const afterFirst = yield* log
      yield* followup(prompt("second"))
      // The same effect values, run again: they see the second turn, not the state they were read in.
      yield* whenIdle
      const afterSecond = yield* log
      assert.strictEqual(afterFirst.filter((event) => event.type === "turn/end").length, 1)
      assert.strictEqual(afterSecond.filter((event) => event.type === "turn/end").length, 2)
      assert.deepStrictEqual(yield* inbox, [])
      const seen = yield* Queue.takeAll(events)
      assert.isTrue([...seen].some((event) => event.type === "agent/inbox/dequeue"))

      const { cursors, events: logged, flush, history, state } = session
      yield* flush
      assert.deepStrictEqual(yield* logged, afterSecond)
      assert.deepStrictEqual(yield* cursors, { appended: afterSecond.length, durable: afterSecond.length })
      assert.strictEqual((yield* state).nextSeq, afterSecond.length)
      // Two user messages and two replies: the history the next request would be folded from.
      assert.strictEqual((yield* history).length, 4)
    }).pipe(Effect.provide(S.layer())))
})
