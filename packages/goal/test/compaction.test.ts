/**
 * Goals across compaction (R145, R152): goal state is folded from the log's events, not from the derived history, so
 * rounds keep going and the state stays exact while automatic compactions replace the history the model sees.
 */
import { assert, describe, it } from "@effect/vitest"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { assertFoldMatches, env, goalAgent } from "./support.js"

const rounds = 40

describe("goals across compaction", () => {
  it.scoped("R145, R152: a goal's rounds run on through automatic compactions; its state folds exactly from the log", () =>
    Effect.gen(function*() {
      const [summariser] = yield* S.make(Array.from({ length: rounds }, (_, i) => S.textResponse(`summary ${i}`)))
      const { agent, goals } = yield* goalAgent(undefined, {
        compaction: { contextWindow: 400, model: summariser, modelLabel: "summariser" }
      })
      yield* goals.create({ objective: "keep working", maxGoalRounds: rounds })
      yield* goals.settled
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.isAbove(log.filter((e) => e.type === "compaction").length, 3)
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(state.roundsStarted, rounds)
      assert.strictEqual(state.goal?.phase, "blocked")
      assert.strictEqual(state.goal?.blockedReason?.code, "round-limit")
    }).pipe(
      Effect.provide(env(Array.from({ length: rounds }, (_, i) => S.textResponse(`work ${i} ${"y".repeat(300)}`))))
    ))
})
