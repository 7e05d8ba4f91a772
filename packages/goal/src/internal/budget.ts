/** Budgets read from the log: the tokens a goal's rounds (and their retries) used, and the check before a round. */
import type { SessionEvent } from "@harness/domain"
import type { BlockedReason, Goal } from "../GoalState.js"

const usageTokens = (usage: SessionEvent.Usage | undefined): number =>
  usage === undefined
    ? 0
    : usage.totalTokens ?? (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0)

export const tokensUsed = (log: ReadonlyArray<SessionEvent.SessionEvent>, goalId: string): number => {
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
      total += usageTokens(event.data.usage)
    }
  }
  return total
}

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
