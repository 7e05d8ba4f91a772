/**
 * The round driver (R122–R126) under `TestClock` with the scripted model: rounds, human input first, the outcome
 * policy, budgets, and the verifier.
 */
import { assert, describe, it } from "@effect/vitest"
import { Message } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { assertFoldMatches, call, env, goalAgent, goalShape } from "./support.js"

describe("round driver", () => {
  it.scoped("R115, R122, R123, R127: a three-round goal that the third round completes by tool", () =>
    Effect.gen(function*() {
      const { agent, goals } = yield* goalAgent()
      const goal = yield* goals.create({ objective: "ship the release" })
      yield* goals.settled
      const log = yield* agent.log
      assert.deepStrictEqual(goalShape(log), [
        "change:create@1",
        "round:1",
        "turn/end:completed",
        "round:2",
        "turn/end:completed",
        "round:3",
        "tool/result:update_goal",
        "change:complete@2",
        "turn/end:completed"
      ])
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(state.goal?.phase, "complete")
      assert.strictEqual(state.goal?.id, goal.id)
      assert.strictEqual(state.roundsStarted, 3)
      assert.strictEqual((yield* goals.get).activation, "disarmed")
    }).pipe(
      Effect.provide(env([S.textResponse("one"), S.textResponse("two"), call("update_goal", { action: "complete" })]))
    ))
})
