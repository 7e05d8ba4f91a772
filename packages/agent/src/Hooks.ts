/**
 * The agent's seams: one `Hooks` record, every field optional. Each hook receives the agent's `Service` (so it
 * can steer, inject or cancel) and returns an Effect. Waterfall hooks (`promptSubmit`, `request`,
 * `requestError`, `toolApproval`) also get `next`, the decision of the hooks inside them: they may decide alone
 * or delegate. Serial hooks (`step`, `turnStopping`) run outer first, then inner. A hook's failure is any failure
 * of its Effect; what it means is stated per hook.
 *
 * There are no pre-step, post-step, step-result, turn-continuation or turn-stop seams (R55): continuation is
 * data (tool calls, steering, a concluding tool).
 *
 * @since 0.0.0
 */
import type { AiError } from "@effect/ai"
import type { Ids, Json, LlmFailure, Message, Turn } from "@harness/domain"
import { Effect } from "effect"
import type { Service } from "./Agent.js"
import type { TurnLimits } from "./Budget.js"

/**
 * The route of one model request, recorded in `request/header`. `model` and `provider` are labels (the
 * `LanguageModel` in context does the work); `options` are provider settings a routing `LanguageModel` may read
 * from `Agent.CurrentRequest`.
 *
 * @since 0.0.0
 * @category models
 */
export interface RequestConfig {
  readonly model: string
  readonly provider?: string | undefined
  readonly options?: Json.JsonObject | undefined
}

/**
 * Prompt admission (R39–R45). Contract: `allow` admits the claimed prompt (optionally with rewritten content and
 * additional contexts, each decoded like a `send`); `block` or a failure means no turn: nothing is written for the
 * prompt, which was dequeued and is gone.
 *
 * @since 0.0.0
 * @category models
 */
export type PromptSubmit<R> = (
  input: { readonly agent: Service; readonly message: Message.AgentMessage },
  next: Effect.Effect<Turn.PromptDecision, unknown, R>
) => Effect.Effect<Turn.PromptDecision, unknown, R>

/**
 * Runs before each step's request is derived (R49); it may inject or steer (both join this step's request). A
 * failure fails the turn with no step opened (R50).
 *
 * @since 0.0.0
 * @category models
 */
export type Step<R> = (
  input: { readonly agent: Service; readonly turn: number; readonly step: number }
) => Effect.Effect<void, unknown, R>

/**
 * May replace the route of this request (R51). A failure fails the turn.
 *
 * @since 0.0.0
 * @category models
 */
export type Request<R> = (
  input: { readonly agent: Service; readonly turn: number; readonly step: number; readonly config: RequestConfig },
  next: Effect.Effect<RequestConfig, unknown, R>
) => Effect.Effect<RequestConfig, unknown, R>

/**
 * Runs when a turn has nothing left to do (R54). Steering it sends is enqueued, balanced and forces another step;
 * context it injects is logged in this turn without a step. A failure fails the turn.
 *
 * @since 0.0.0
 * @category models
 */
export type TurnStopping<R> = (
  input: { readonly agent: Service; readonly turn: number }
) => Effect.Effect<void, unknown, R>

/**
 * Runs after a failed model request's step closed (R75) and answers `retry` (a new turn with trigger `retry`
 * follows at once) or `fail`. The default is `fail`; a hook failure is logged and counts as `fail`; a cancel
 * wins over `retry`.
 *
 * @since 0.0.0
 * @category errors
 */
export type RequestError<R> = (
  input: {
    readonly agent: Service
    readonly turn: number
    readonly step: number
    readonly error: AiError.AiError
    readonly failure: LlmFailure.LlmFailure
  },
  next: Effect.Effect<"retry" | "fail", unknown, R>
) => Effect.Effect<"retry" | "fail", unknown, R>

/**
 * The answer to an approval request: `allow`, `deny`, or `ask` — a person decides: the call becomes a durable
 * pending approval (ADR 0054), listed by `Agent.Service.approvals` and answered by `approve` (or the agent's
 * `approvalTimeout`); it survives a restart.
 *
 * @since 0.0.0
 * @category models
 */
export type ApprovalDecision =
  | { readonly kind: "allow" }
  | { readonly kind: "deny"; readonly reason: string }
  | { readonly kind: "ask" }

/**
 * Decides whether a call of a tool that requires approval may run. It may suspend while it asks a person; a
 * cancel interrupts it. A denial (or a failure) becomes an error result the model can read. Without this hook,
 * such calls are denied with a result that says how to allow them.
 *
 * @since 0.0.0
 * @category models
 */
export type ToolApproval<R> = (
  input: {
    readonly agent: Service
    readonly turn: number
    readonly step: number
    readonly callId: Ids.ToolCallId
    readonly name: string
    /** The model's raw argument text. */
    readonly arguments: string
    /** The arguments decoded with the tool's parameter schema. */
    readonly params: unknown
  },
  next: Effect.Effect<ApprovalDecision, unknown, R>
) => Effect.Effect<ApprovalDecision, unknown, R>

/**
 * Sets limits for one turn on top of the agent's own budgets (R160), once the turn has opened and before its first
 * step: `undefined` adds none. Composed hooks both apply (the tighter limit wins). A failure fails the turn. The goal
 * system uses it to hold a goal's token budget and deadline within a round.
 *
 * @since 0.0.0
 * @category models
 */
export type TurnBudget<R> = (
  input: { readonly agent: Service; readonly turn: number; readonly trigger: Turn.TurnTrigger }
) => Effect.Effect<TurnLimits | undefined, unknown, R>

/**
 * What `beforeCompact` decides (ADR 0052): `allow` the compaction (the model writes the summary), `replace` — compact
 * with this summary instead of asking the model — or `block` it (nothing is logged; an automatic compaction's turn
 * goes on with its request as it is).
 * @since 0.0.0
 * @category models
 */
export type CompactDecision =
  | { readonly kind: "allow" }
  | { readonly kind: "replace"; readonly summary: string }
  | { readonly kind: "block"; readonly reason: string }

/**
 * Runs before a compaction (R150), manual or automatic, with the token estimate that started it; `turn` is the
 * running turn of an automatic one (`undefined` for `agent.compact`, whose turn opens only if it is allowed). A
 * failure blocks the compaction (and is logged as a warning).
 * @since 0.0.0
 * @category models
 */
export type BeforeCompact<R> = (
  input: {
    readonly agent: Service
    readonly turn: number | undefined
    readonly reason: "manual" | "automatic"
    readonly estimate: number
  },
  next: Effect.Effect<CompactDecision, unknown, R>
) => Effect.Effect<CompactDecision, unknown, R>

/**
 * The seams, every field optional. (Hooks are declared as methods so that hooks needing less context fit where
 * more is available: a `Hooks<never>` is a `Hooks<R>`.)
 *
 * @since 0.0.0
 * @category models
 */
export interface Hooks<R = never> {
  promptSubmit?(...args: Parameters<PromptSubmit<R>>): ReturnType<PromptSubmit<R>>
  step?(...args: Parameters<Step<R>>): ReturnType<Step<R>>
  request?(...args: Parameters<Request<R>>): ReturnType<Request<R>>
  turnStopping?(...args: Parameters<TurnStopping<R>>): ReturnType<TurnStopping<R>>
  requestError?(...args: Parameters<RequestError<R>>): ReturnType<RequestError<R>>
  toolApproval?(...args: Parameters<ToolApproval<R>>): ReturnType<ToolApproval<R>>
  turnBudget?(...args: Parameters<TurnBudget<R>>): ReturnType<TurnBudget<R>>
  beforeCompact?(...args: Parameters<BeforeCompact<R>>): ReturnType<BeforeCompact<R>>
}

type Waterfall<I, A, R> = (input: I, next: Effect.Effect<A, unknown, R>) => Effect.Effect<A, unknown, R>

const waterfall = <I, A, R>(
  outer: Waterfall<I, A, R> | undefined,
  inner: Waterfall<I, A, R> | undefined
): Waterfall<I, A, R> | undefined =>
  outer === undefined || inner === undefined
    ? outer ?? inner
    : (input, next) => outer(input, inner(input, next))

type Serial<I, R> = (input: I) => Effect.Effect<void, unknown, R>

const serial = <I, R>(outer: Serial<I, R> | undefined, inner: Serial<I, R> | undefined): Serial<I, R> | undefined =>
  outer === undefined || inner === undefined
    ? outer ?? inner
    : (input) => Effect.zipRight(outer(input), inner(input))

const tighter = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

const bothLimits = <R>(outer: TurnBudget<R> | undefined, inner: TurnBudget<R> | undefined): TurnBudget<R> | undefined =>
  outer === undefined || inner === undefined
    ? outer ?? inner
    : (input) =>
      Effect.zipWith(outer(input), inner(input), (a, b) =>
        a === undefined || b === undefined ? a ?? b : {
          maxSteps: tighter(a.maxSteps, b.maxSteps),
          maxTokens: tighter(a.maxTokens, b.maxTokens),
          maxCost: tighter(a.maxCost, b.maxCost),
          deadline: tighter(a.deadline, b.deadline)
        })

/**
 * Combines two records: for waterfall hooks `outer` runs first and its `next` is `inner`; serial hooks run
 * `outer` then `inner`; `turnBudget` runs both and keeps the tighter of each limit.
 *
 * @since 0.0.0
 * @category utils
 */
export const compose = <R>(outer: Hooks<R>, inner: Hooks<R>): Hooks<R> => {
  const hooks: { -readonly [K in keyof Hooks<R>]: Hooks<R>[K] } = {}
  // A key is set only when a hook is there: `exactOptionalPropertyTypes` keeps absent apart from undefined.
  const set = <K extends keyof Hooks<R>>(key: K, hook: Hooks<R>[K] | undefined) => {
    if (hook) hooks[key] = hook
  }
  set("promptSubmit", waterfall(outer.promptSubmit, inner.promptSubmit))
  set("step", serial(outer.step, inner.step))
  set("request", waterfall(outer.request, inner.request))
  set("turnStopping", serial(outer.turnStopping, inner.turnStopping))
  set("requestError", waterfall(outer.requestError, inner.requestError))
  set("toolApproval", waterfall(outer.toolApproval, inner.toolApproval))
  set("turnBudget", bothLimits(outer.turnBudget, inner.turnBudget))
  set("beforeCompact", waterfall(outer.beforeCompact, inner.beforeCompact))
  return hooks
}
