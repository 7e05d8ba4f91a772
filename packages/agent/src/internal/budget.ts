/**
 * The budgets of one turn (R154–R163, ADR 0053): the limits in force, set when the turn opens from the agent's
 * options, the session's usage folded from the log and the `turnBudget` hook; what the turn has used so far, charged
 * per step from the usage it logs; the check after every step and the warning one step before a hard stop.
 */
import type { SessionEvent, Turn } from "@harness/domain"
import { Cause, Clock, Effect } from "effect"
import * as Budget from "../Budget.js"
import type { Env } from "./env.js"
import { provide } from "./live.js"
import type { TurnFailure } from "./turnFailure.js"
import { failTurn } from "./turnFailure.js"

/** One limit: what it bounds, its value, and what was used before the turn (session budgets). */
interface Limit {
  readonly budget: Turn.BudgetKind
  readonly scope: "turn" | "session"
  readonly limit: number
  readonly before: number
}

/** A turn's budgets and what it used: mutated only by the turn's own fiber, step by step. */
export interface Gauge {
  readonly limits: ReadonlyArray<Limit>
  readonly prices: Readonly<Record<string, Budget.Price>> | undefined
  /** The absolute deadline (epoch ms on `Clock`) and when the turn started, when a deadline is set. */
  readonly deadline: number | undefined
  readonly startedAt: number
  readonly warn: boolean
  tokens: number
  cost: number
  /** What the last step used: the projection of the next one. */
  lastTokens: number
  lastCost: number
  warned: boolean
}

/** The source of the warning the model gets one step before a hard stop (R159). */
export const warningSource = { kind: "plugin", plugin: "budget" } as const

/** What the turn's `turnBudget` hook added (R160), if it has one. */
type Extra = Budget.TurnLimits | undefined

/**
 * The gauge of a turn that has just opened (R156–R160): the agent's limits, the session's usage so far (folded from
 * the log only when a session budget is set) and the `turnBudget` hook's limits. A hook failure fails the turn. Only
 * the hook, a session budget (the log) and a deadline (the clock) need an effect; the step cap alone is built as is.
 */
export const open = (env: Env, turn: number, trigger: Turn.TurnTrigger): Effect.Effect<Gauge, TurnFailure> => {
  const options = env.budget
  const plain = env.options.hooks?.turnBudget === undefined && options.maxSessionTokens === undefined &&
    options.maxSessionCost === undefined && options.turnTimeoutMs === undefined
  return plain ? Effect.succeed(gaugeOf(options, undefined, noUsage, 0)) : gathered(env, turn, trigger)
}

/** {@link open} with what its limits need read first: the hook's answer, the session's usage, the clock. */
const gathered = Effect.fnUntraced(function*(env: Env, turn: number, trigger: Turn.TurnTrigger) {
  const options = env.budget
  const hook = env.options.hooks?.turnBudget
  const extra: Extra = hook === undefined
    ? undefined
    : yield* provide(env, hook({ agent: env.service, turn, trigger })).pipe(
      Effect.mapErrorCause((cause) => Cause.fail(failTurn(0, "turnBudget hook failed")(cause)))
    )
  const used = options.maxSessionTokens !== undefined || options.maxSessionCost !== undefined
    ? Budget.usedBy(yield* env.log.events, options.prices)
    : noUsage
  const needsClock = options.turnTimeoutMs !== undefined || extra?.deadline !== undefined
  return gaugeOf(options, extra, used, needsClock ? yield* Clock.currentTimeMillis : 0)
})

const noUsage = { tokens: 0, cost: 0 } as const

/** Steps, tokens, cost: the order a check reports them in (R155). */
const reportOrder = { steps: 0, tokens: 1, cost: 2, deadline: 3 } as const

/** A turn's gauge from its limits' sources, `startedAt` on the clock (0 when no deadline is set). */
const gaugeOf = (
  options: Env["budget"],
  extra: Extra,
  used: { readonly tokens: number; readonly cost: number },
  startedAt: number
): Gauge => {
  const limits: Array<Limit> = [{ budget: "steps", scope: "turn", limit: options.maxSteps, before: 0 }]
  if (extra?.maxSteps !== undefined) limits.push({ budget: "steps", scope: "turn", limit: extra.maxSteps, before: 0 })
  if (options.maxTurnTokens !== undefined) {
    limits.push({ budget: "tokens", scope: "turn", limit: options.maxTurnTokens, before: 0 })
  }
  if (extra?.maxTokens !== undefined) {
    limits.push({ budget: "tokens", scope: "turn", limit: extra.maxTokens, before: 0 })
  }
  if (options.maxSessionTokens !== undefined) {
    limits.push({ budget: "tokens", scope: "session", limit: options.maxSessionTokens, before: used.tokens })
  }
  if (options.maxSessionCost !== undefined) {
    limits.push({ budget: "cost", scope: "session", limit: options.maxSessionCost, before: used.cost })
  }
  if (extra?.maxCost !== undefined) limits.push({ budget: "cost", scope: "turn", limit: extra.maxCost, before: 0 })
  if (limits.length > 1) limits.sort((a, b) => reportOrder[a.budget] - reportOrder[b.budget])
  const own = options.turnTimeoutMs === undefined ? undefined : startedAt + options.turnTimeoutMs
  const deadline = own === undefined
    ? extra?.deadline
    : extra?.deadline === undefined
    ? own
    : Math.min(own, extra.deadline)
  return {
    limits,
    prices: options.prices,
    deadline,
    startedAt,
    warn: options.warn,
    tokens: 0,
    cost: 0,
    lastTokens: 0,
    lastCost: 0,
    warned: false
  }
}

/** Charges a step's logged usage to the turn (R157). */
export const charge = (gauge: Gauge, usage: SessionEvent.Usage | undefined, model: string): void => {
  const tokens = Budget.tokensOf(usage)
  const cost = Budget.costOf(usage, Budget.priceOf(gauge.prices, model))
  gauge.tokens += tokens
  gauge.cost += cost
  gauge.lastTokens = tokens
  gauge.lastCost = cost
}

const usedOf = (gauge: Gauge, limit: Limit, steps: number): number =>
  limit.budget === "steps" ? steps : limit.before + (limit.budget === "tokens" ? gauge.tokens : gauge.cost)

/** The deadline reason: `used` is the time since the turn started, `limit` the time it was given. */
export const deadlineReason = (gauge: Gauge, step: number, now: number): Turn.BudgetReason => ({
  kind: "budget",
  budget: "deadline",
  scope: "turn",
  step,
  limit: (gauge.deadline ?? now) - gauge.startedAt,
  used: now - gauge.startedAt
})

/**
 * The budget reached after `steps` steps, if any (R155): each is reached when what was used is at least its value.
 */
export const reached = (gauge: Gauge, steps: number, now: number): Turn.BudgetReason | undefined => {
  for (const limit of gauge.limits) {
    const used = usedOf(gauge, limit, steps)
    if (used >= limit.limit) {
      return { kind: "budget", budget: limit.budget, scope: limit.scope, step: steps, limit: limit.limit, used }
    }
  }
  return gauge.deadline !== undefined && now >= gauge.deadline ? deadlineReason(gauge, steps, now) : undefined
}

/**
 * The warning for the model when its next step will be its last (R159): the step cap is one away, or another step
 * using what the last one used reaches a token or cost budget. Given once per turn, never before its first step.
 */
export const warning = (gauge: Gauge, steps: number): string | undefined => {
  // Before the first step there is no step before the stop to warn in (a cap of 1 step is no reason to talk).
  if (!gauge.warn || gauge.warned || steps === 0) return undefined
  for (const limit of gauge.limits) {
    const next = limit.budget === "steps" ? 1 : limit.budget === "tokens" ? gauge.lastTokens : gauge.lastCost
    if (usedOf(gauge, limit, steps) + next >= limit.limit) {
      gauge.warned = true
      const what = limit.budget === "steps"
        ? `its cap of ${limit.limit} steps`
        : `the ${limit.scope}'s ${limit.budget} budget (${limit.limit})`
      return `Budget: your next step is the last one this turn can take before it reaches ${what}. ` +
        "Finish now: give your final answer in that step rather than calling more tools."
    }
  }
  return undefined
}

/** Whether the gauge needs a timer on each step: a deadline is set. */
export const timed = (gauge: Gauge): boolean => gauge.deadline !== undefined
