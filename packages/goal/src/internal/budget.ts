/**
 * Budgets read from the log: the tokens a goal's rounds (and their retries) used, the check before a round, and the
 * limits a round runs under (the agent enforces them after every step, R161).
 */
import { Budget, type Hooks } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import { Effect, Ref } from "effect"
import type { BlockedReason, Goal } from "../GoalState.js"
import type { Runtime } from "./runtime.js"

/**
 * The tokens a goal's rounds (and their retries) used, and whether the log's last turn is one of them: a fold over
 * the log.
 */
const roundsUsage = (
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  goalId: string
): { readonly total: number; readonly counting: boolean } => {
  let counting = false
  let total = 0
  for (const event of log) {
    if (event.type === "turn/start") {
      const trigger = event.data.trigger
      if (trigger.kind === "message") {
        counting = trigger.source.kind === "goal" && trigger.source.goalId === goalId && trigger.source.round > 0
      }
      // A retry turn continues the chain of the turn before it: `counting` stays as it was.
    } else if (event.type === "assistant/message" && counting) {
      total += Budget.tokensOf(event.data.usage)
    }
  }
  return { total, counting }
}

export const tokensUsed = (log: ReadonlyArray<SessionEvent.SessionEvent>, goalId: string): number =>
  roundsUsage(log, goalId).total

/**
 * The `turnBudget` hook (R161): a turn that is a round of the active goal (or a retry of one) gets what is left of
 * the goal's token budget and its deadline as limits, so the agent stops the round within one step of them instead
 * of the driver noticing between rounds.
 */
export const roundBudget =
  (slot: Ref.Ref<Runtime | undefined>): NonNullable<Hooks.Hooks<never>["turnBudget"]> => (input) =>
    Effect.gen(function*() {
      const rt = yield* Ref.get(slot)
      if (rt === undefined || rt.agent !== input.agent) return undefined
      const goal = (yield* Ref.get(rt.state)).current.goal
      if (goal === undefined || goal.phase !== "active") return undefined
      if (goal.maxTokens === undefined && goal.deadline === undefined) return undefined
      // The turn has opened: its `turn/start` is the log's last, and says whether it is one of this goal's rounds.
      const usage = roundsUsage(yield* rt.agent.log, goal.id)
      if (!usage.counting) return undefined
      return {
        maxTokens: goal.maxTokens === undefined ? undefined : Math.max(0, goal.maxTokens - usage.total),
        deadline: goal.deadline
      }
    })

/** The budget the goal has reached, if any: rounds, then tokens, then the deadline. */
export const exhausted = (
  goal: Goal,
  roundsStarted: number,
  tokens: number,
  now: number
): BlockedReason | undefined => {
  if (roundsStarted >= goal.maxGoalRounds) {
    return { code: "round-limit", message: `Goal reached its configured limit of ${goal.maxGoalRounds} rounds.` }
  }
  if (goal.maxTokens !== undefined && tokens >= goal.maxTokens) {
    return {
      code: "token-budget",
      message: `Goal used ${tokens} tokens, reaching its budget of ${goal.maxTokens} tokens.`
    }
  }
  if (goal.deadline !== undefined && now >= goal.deadline) {
    return {
      code: "deadline",
      message: `Goal reached its deadline (${new Date(goal.deadline).toISOString()}).`
    }
  }
  return undefined
}
