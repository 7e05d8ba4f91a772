/**
 * Budgets on every turn and session (R154–R163, ADR 0053): a step cap per turn, token budgets per turn and per
 * session, a cost budget priced from a per-model table, and a wall-clock deadline per turn. The agent checks them
 * after every step and ends the turn with `turn/end { kind: "budget", budget, scope, limit, used }` once one is
 * reached; the totals are folded from the `usage` the log holds, so they survive a restart.
 *
 * @since 0.0.0
 */
import type { SessionEvent } from "@harness/domain"
import type { Duration } from "effect"

/**
 * The default step cap of a turn: a model that keeps calling tools stops after this many steps (R154).
 *
 * @since 0.0.0
 * @category models
 */
export const defaultMaxSteps = 50

/**
 * What one model costs, per million tokens, in any unit you choose (the cost budget uses the same unit). Cached input
 * tokens are charged `cachedInputPerMillion` when given, else as ordinary input.
 *
 * @since 0.0.0
 * @category models
 */
export interface Price {
  readonly inputPerMillion: number
  readonly outputPerMillion: number
  readonly cachedInputPerMillion?: number | undefined
}

/**
 * An agent's budgets (`Agent.Options.budget`). Every field is optional; `maxSteps` defaults to
 * {@link defaultMaxSteps}.
 *
 * Contract: each budget is reached when what was used is at least its value (not one past it); the agent checks
 * after every step and ends the turn at the first budget reached, in this order: steps, tokens, cost, deadline
 * (R155). Tokens and cost are folded from the `usage` of the logged `assistant/message`s (R157).
 *
 * @since 0.0.0
 * @category models
 */
export interface Budget {
  /** The most steps one turn may run: a positive integer, default 50. */
  readonly maxSteps?: number | undefined
  /** The most tokens (input + output, as the provider reports them) one turn may use. */
  readonly maxTurnTokens?: number | undefined
  /** The most tokens the whole session may use, counted from its log (a resumed session counts what it used before). */
  readonly maxSessionTokens?: number | undefined
  /** The most the whole session may cost, priced by {@link prices}; needs a price for the agent's `model`. */
  readonly maxSessionCost?: number | undefined
  /** The price table, by route label (`assistant/message.provenance.model`). A model without a price costs 0. */
  readonly prices?: Readonly<Record<string, Price>> | undefined
  /** The wall-clock time one turn may take, on `Clock`: a running step is interrupted when it passes (R158). */
  readonly turnTimeout?: Duration.DurationInput | undefined
  /**
   * Whether the model is warned, with a `user/message` from the `budget` plugin, when its next step will be its
   * last (R159). Default `true`.
   */
  readonly warn?: boolean | undefined
}

/**
 * Limits a `turnBudget` hook sets for one turn, on top of the agent's own (the tighter one wins): a step cap, a
 * token and a cost allowance for this turn, and an absolute deadline (epoch milliseconds on `Clock`).
 *
 * @since 0.0.0
 * @category models
 */
export interface TurnLimits {
  readonly maxSteps?: number | undefined
  readonly maxTokens?: number | undefined
  readonly maxCost?: number | undefined
  readonly deadline?: number | undefined
}

/**
 * The tokens one `usage` counts: `totalTokens` when the provider reports it, else input plus output.
 *
 * @since 0.0.0
 * @category utils
 */
export const tokensOf = (usage: SessionEvent.Usage | undefined): number =>
  usage === undefined ? 0 : usage.totalTokens ?? (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0)

/**
 * What one `usage` costs at `price` (0 without a price). Cached input tokens are part of `inputTokens`.
 *
 * @since 0.0.0
 * @category utils
 */
export const costOf = (usage: SessionEvent.Usage | undefined, price: Price | undefined): number => {
  if (usage === undefined || price === undefined) return 0
  const input = usage.inputTokens ?? 0
  const cached = Math.min(input, usage.cachedInputTokens ?? 0)
  const cachedPrice = price.cachedInputPerMillion ?? price.inputPerMillion
  return ((input - cached) * price.inputPerMillion + cached * cachedPrice +
    (usage.outputTokens ?? 0) * price.outputPerMillion) / 1_000_000
}

/**
 * The price of `model` in `prices` (own keys only: a model named like an `Object` method has no price).
 *
 * @since 0.0.0
 * @category utils
 */
export const priceOf = (prices: Readonly<Record<string, Price>> | undefined, model: string): Price | undefined =>
  prices !== undefined && Object.hasOwn(prices, model) ? prices[model] : undefined

/**
 * What a session used, folded from its log: the tokens and the cost of every `assistant/message` (R157).
 *
 * @since 0.0.0
 * @category utils
 */
export const usedBy = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  prices: Readonly<Record<string, Price>> | undefined
): { readonly tokens: number; readonly cost: number } => {
  let tokens = 0
  let cost = 0
  for (const event of events) {
    if (event.type !== "assistant/message") continue
    tokens += tokensOf(event.data.usage)
    if (prices !== undefined) cost += costOf(event.data.usage, priceOf(prices, event.data.provenance.model))
  }
  return { tokens, cost }
}
