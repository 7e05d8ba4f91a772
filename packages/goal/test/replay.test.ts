/**
 * Replay from a durable store (R117, R119): a goal session on a real SQLite file, reopened in a new agent, folds to
 * the same state; the replayed goal is disarmed until a human resumes it, and then continues with the next round.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Either } from "effect"
import * as path from "node:path"
import { foldGoal } from "../src/GoalReplay.js"
import { assertFoldMatches, call, completingRound, env, goalAgent, goalShape, tempDir } from "./support.js"

describe("replay", () => {
  it.live("R117, R119: a goal session on SQLite, reopened, folds to the same state and starts disarmed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = SqliteStore.layer({ filename: path.join(dir, "sessions.db") })
      const id = Ids.SessionId.make("goal-session")

      const first = yield* Effect.scoped(
        Effect.gen(function*() {
          const session = yield* SessionLog.make({ id })
          const { agent, goals } = yield* goalAgent({ defaultMaxGoalRounds: 2 }, { session })
          const goal = yield* goals.create({ objective: "write the changelog", maxTokens: 10_000 })
          yield* goals.settled
          const edited = yield* goals.edit({ id: goal.id, revision: (yield* goals.get).goal!.revision }, {
            objective: "write the changelog and the release notes"
          })
          yield* goals.settled
          assert.strictEqual(edited.phase, "blocked")
          return { state: yield* assertFoldMatches(agent, goals), shape: goalShape(yield* agent.log) }
        }).pipe(Effect.provide(env([S.textResponse("one"), S.textResponse("two")])))
      ).pipe(Effect.provide(store))
      assert.deepStrictEqual(first.shape, [
        "change:create@1",
        "round:1",
        "turn/end:completed",
        "round:2",
        "turn/end:completed",
        "change:block@2",
        "change:edit@3"
      ])

      yield* Effect.scoped(
        Effect.gen(function*() {
          const session = yield* SessionLog.open(id)
          const folded = foldGoal(yield* session.events)
          assert.deepStrictEqual(folded, Either.right(first.state))
          const { agent, goals } = yield* goalAgent({ defaultMaxGoalRounds: 2 }, { session })
          const view = yield* goals.get
          const { activation, ...state } = view
          assert.deepStrictEqual(state, first.state)
          assert.strictEqual(activation, "disarmed")
          yield* goals.settled
          // Disarmed: nothing ran. A human raises the cap and resumes; the next round is round 3.
          const model = yield* S.ScriptedModel
          assert.deepStrictEqual(yield* model.requests, [])
          const goal = view.goal!
          const raised = yield* goals.edit({ id: goal.id, revision: goal.revision }, { maxGoalRounds: 3 })
          yield* goals.resume({ id: raised.id, revision: raised.revision })
          yield* goals.settled
          assert.deepStrictEqual(goalShape(yield* agent.log).slice(first.shape.length), [
            "change:edit@4",
            "change:resume@5",
            ...completingRound(3, 6)
          ])
          const final = yield* assertFoldMatches(agent, goals)
          assert.strictEqual(final.roundsStarted, 3)
          assert.strictEqual(final.goal?.phase, "complete")
        }).pipe(Effect.provide(env([call("update_goal", { action: "complete" })])))
      ).pipe(Effect.provide(store))
    }).pipe(Effect.scoped))
})
