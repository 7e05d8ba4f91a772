/**
 * Budgets at their boundaries: the token budget and the deadline block a goal exactly when they are
 * reached — at the budget, not one past it — and a retry turn's usage is charged to its round. Each property runs
 * the real driver over the scripted model (under `TestClock`), at the boundary, one below it and one above it. Within a
 * round, the agent enforces the goal's budgets after every step (R161): a model that keeps spending or working is
 * stopped within one step of the token budget, and at the deadline.
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, FastCheck as fc, Fiber, TestClock } from "effect"
import { exhausted } from "../src/internal/budget.js"
import { assertFoldMatches, call, env, goalAgent } from "./support.js"

const assertWellFormed = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  assert.deepStrictEqual(LogCheck.checkLog(log), [])

/** A budget one below, at, or one above what `rounds` rounds use. */
const offset = fc.constantFrom(-1, 0, 1)

describe("budgets", () => {
  it.prop(
    "exhausted: each budget is reached at its value, not before, and stays reached above it",
    {
      rounds: fc.integer({ min: 1, max: 50 }),
      tokens: fc.integer({ min: 1, max: 1_000_000 }),
      deadline: fc.integer({ min: 1, max: 2 ** 40 }),
      at: offset
    },
    ({ at, deadline, rounds, tokens }) => {
      const goal = { id: "g", revision: 1, objective: "o", phase: "active" as const }
      const roundCap = exhausted({ ...goal, maxGoalRounds: rounds }, rounds + at, 0, 0)
      assert.strictEqual(roundCap?.code, at >= 0 ? "round-limit" : undefined)
      const tokenBudget = exhausted({ ...goal, maxGoalRounds: 1000, maxTokens: tokens }, 0, tokens + at, 0)
      assert.strictEqual(tokenBudget?.code, at >= 0 ? "token-budget" : undefined)
      const time = exhausted({ ...goal, maxGoalRounds: 1000, deadline }, 0, 0, deadline + at)
      assert.strictEqual(time?.code, at >= 0 ? "deadline" : undefined)
    }
  )

  it.scoped.prop(
    "the token budget blocks the goal after the round that reaches it (at the budget, one below, one above)",
    { perRound: fc.integer({ min: 2, max: 400 }), rounds: fc.integer({ min: 1, max: 3 }), at: offset },
    ({ at, perRound, rounds }) =>
      Effect.gen(function*() {
        const { agent, goals } = yield* goalAgent()
        // The budget is what `rounds` rounds use, plus `at`: one above it takes one round more.
        const maxTokens = perRound * rounds + at
        yield* goals.create({ objective: "costly", maxTokens, maxGoalRounds: rounds + 2 })
        yield* goals.settled
        const state = yield* assertFoldMatches(agent, goals)
        const expected = at > 0 ? rounds + 1 : rounds
        assert.strictEqual(state.goal?.blockedReason?.code, "token-budget")
        assert.strictEqual(state.roundsStarted, expected)
        assert.strictEqual(yield* goals.tokensUsed, expected * perRound)
      }).pipe(Effect.provide(env(
        Array.from({ length: rounds + 2 }, (_, i) => ({
          ...S.textResponse(`round ${i + 1}`),
          usage: { inputTokens: perRound - 1, outputTokens: 1 }
        }))
      ))),
    { fastCheck: { numRuns: 25 } }
  )

  it.scoped.prop(
    "the deadline blocks the goal once a round ends at it (at the deadline, one below, one above)",
    { roundMs: fc.integer({ min: 2, max: 60_000 }), rounds: fc.integer({ min: 1, max: 3 }), at: offset },
    ({ at, roundMs, rounds }) =>
      Effect.gen(function*() {
        const { agent, goals } = yield* goalAgent()
        // Each round takes `roundMs` on the clock; the budget ends where round `rounds` ends, plus `at`.
        yield* goals.create({ objective: "timed", timeBudget: roundMs * rounds + at, maxGoalRounds: rounds + 2 })
        const settled = yield* Effect.fork(goals.settled)
        for (let i = 0; i < rounds + 2; i++) yield* TestClock.adjust(roundMs)
        yield* Fiber.join(settled)
        const state = yield* assertFoldMatches(agent, goals)
        assert.strictEqual(state.goal?.blockedReason?.code, "deadline")
        assert.strictEqual(state.roundsStarted, at > 0 ? rounds + 1 : rounds)
      }).pipe(Effect.provide(env(
        Array.from({ length: rounds + 2 }, (_, i) => S.delayed(roundMs, S.textResponse(`round ${i + 1}`)))
      ))),
    { fastCheck: { numRuns: 25 } }
  )

  it.scoped("a retry turn's usage is charged to its round: a failed request retried counts against the budget", () =>
    Effect.gen(function*() {
      const { agent, goals } = yield* goalAgent(undefined, {
        hooks: { requestError: () => Effect.succeed("retry" as const) }
      })
      yield* goals.create({ objective: "flaky and costly", maxTokens: 100, maxGoalRounds: 2 })
      yield* goals.settled
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(yield* goals.tokensUsed, 100)
      assert.strictEqual(state.goal?.blockedReason?.code, "token-budget")
      assert.strictEqual(state.roundsStarted, 1)
    }).pipe(Effect.provide(env([
      S.failure("SERVER", "upstream hiccup"),
      { ...S.textResponse("done after a retry"), usage: { inputTokens: 70, outputTokens: 30 } },
      S.textResponse("never")
    ]))))

  it.scoped("R161: a round whose model keeps spending stops within one step of the goal's token budget", () =>
    Effect.gen(function*() {
      const { agent, goals } = yield* goalAgent()
      yield* goals.create({ objective: "spend", maxTokens: 1000, maxGoalRounds: 5 })
      yield* goals.settled
      const log = yield* agent.log
      assertWellFormed(log)
      const state = yield* assertFoldMatches(agent, goals)
      // 300 tokens a step: 900 after step 3, 1200 after step 4 — the round stops there, not at the step cap.
      const ends = log.flatMap((e) => e.type === "turn/end" ? [e.data.reason] : [])
      assert.deepStrictEqual(ends, [{
        kind: "budget",
        budget: "tokens",
        scope: "turn",
        step: 4,
        limit: 1000,
        used: 1200
      }])
      assert.strictEqual(yield* goals.tokensUsed, 1200)
      assert.strictEqual(state.goal?.blockedReason?.code, "token-budget")
      assert.strictEqual(state.roundsStarted, 1)
    }).pipe(Effect.provide(env(
      Array.from({ length: 60 }, () => ({ ...call("get_goal"), usage: { inputTokens: 250, outputTokens: 50 } }))
    ))))

  it.scoped("R161: a round whose model keeps working stops at the goal's deadline, interrupted on the clock", () =>
    Effect.gen(function*() {
      const { agent, goals } = yield* goalAgent()
      yield* goals.create({ objective: "slow", timeBudget: 25_000, maxGoalRounds: 5 })
      const settled = yield* Effect.fork(goals.settled)
      for (let i = 0; i < 8; i++) yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(settled)
      const log = yield* agent.log
      assertWellFormed(log)
      const ends = log.flatMap((e) => e.type === "turn/end" ? [e.data.reason] : [])
      assert.deepStrictEqual(ends.map((r) => r.kind === "budget" ? `${r.budget}:${r.step}` : r.kind), ["deadline:3"])
      const state = yield* assertFoldMatches(agent, goals)
      assert.strictEqual(state.goal?.blockedReason?.code, "deadline")
      assert.strictEqual(state.roundsStarted, 1)
    }).pipe(Effect.provide(env(
      Array.from({ length: 60 }, () => S.delayed(10_000, call("get_goal")))
    ))))
})
