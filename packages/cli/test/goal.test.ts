/**
 * Goals in the CLI: the offline model takes a goal to completion in two rounds through the real round driver, and
 * the chat's `/goal set|show|pause|resume|clear` acts on the goal service.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import { Goals } from "@harness/goal"
import { LogCheck } from "@harness/session"
import { Effect, Either, Layer } from "effect"
import * as Goal from "../src/internal/goal.js"
import * as OfflineModel from "../src/OfflineModel.js"

// Pace 0: the model never waits, so nothing here depends on time.
const env = Layer.merge(OfflineModel.layer({ pace: 0 }), NodeContext.layer)

describe("goals on the offline model", () => {
  it.live("a goal runs two rounds: the first works, the second completes it with update_goal (R115, R122, R127)", () =>
    Effect.gen(function*() {
      const { agent, goals } = yield* Goals.makeAgent({})
      yield* goals.create({ objective: "summarise the project" })
      yield* goals.settled
      const view = yield* goals.get
      assert.strictEqual(view.goal?.phase, "complete")
      assert.strictEqual(view.roundsStarted, 2)
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const calls = log.flatMap((e) => (e.type === "tool/call" ? [[e.data.name, e.data.arguments]] : []))
      assert.deepStrictEqual(calls, [["update_goal", "{\"action\":\"complete\"}"]])
      const answers = log.flatMap((e) =>
        e.type === "assistant/message"
          ? [e.data.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")]
          : []
      )
      assert.include(answers[0], "Round 1: working on “summarise the project”.")
    }).pipe(Effect.scoped, Effect.provide(env)))

  it.live("/goal set creates, set again edits, pause / resume / show / clear; bad input says the usage", () =>
    Effect.gen(function*() {
      const { goals } = yield* Goals.makeAgent({})
      const run = (line: string) => Effect.either(Goal.command(goals, line))
      const created = yield* run("set write the changelog")
      assert.match(Either.getOrThrow(created), /^Created goal [0-9a-f]+: write the changelog$/)
      yield* goals.disarm // keep the rounds from running while we look
      const paused = yield* run("pause")
      assert.match(Either.getOrThrow(paused), /is paused\.$/)
      const edited = yield* run("set write the changelog for 0.1")
      assert.match(Either.getOrThrow(edited), /^Edited goal [0-9a-f]+: write the changelog for 0\.1$/)
      const shown = Either.getOrThrow(yield* run("show"))
      assert.include(shown, "write the changelog for 0.1")
      assert.include(shown, "Phase: paused")
      assert.strictEqual(Either.getOrThrow(yield* run("clear")), "Goal cleared.")
      assert.strictEqual(Either.getOrThrow(yield* run("")), "No goal.")

      const empty = yield* run("set")
      assert.isTrue(Either.isLeft(empty) && empty.left.message.includes("what is the objective? /goal set <objective>"))
      const unknown = yield* run("frobnicate")
      assert.isTrue(
        Either.isLeft(unknown) && unknown.left.message === `unknown /goal command "frobnicate": ${Goal.usage}`
      )
      const none = yield* run("pause")
      assert.isTrue(Either.isLeft(none) && none.left.message.includes("there is no goal"))
    }).pipe(Effect.scoped, Effect.provide(env)))
})
