/**
 * Goals: "keep going until this is done". A `Goals` service belongs to one agent; it keeps the goal state (a cache
 * over the fold of the log, R119), applies compare-and-set mutations as round-zero goal messages (R120–R121), and
 * drives continuation rounds whenever the agent goes idle with an active, armed goal and no human work queued
 * (R122–R126). Budgets (rounds, tokens from the log's usage, a `Clock` deadline) block the goal with a reason that
 * names the budget; an optional verifier decides whether a claimed completion is true.
 *
 * Wiring: {@link make} returns a {@link Plugin} whose `hooks` and `tools` go into `Agent.make`, then
 * `plugin.attach(agent)` starts the service in the current scope. {@link makeAgent} does all three.
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { Agent, AgentError, AgentTool, Hooks } from "@harness/agent"
import type { Duration, Effect, Queue, Scope, Stream } from "effect"
import { Context } from "effect"
import type { GoalError } from "./GoalError.js"
import type { GoalReplayError } from "./GoalReplay.js"
import type { BlockedReason, Goal, GoalRef, GoalState, Operation, Verifier } from "./GoalState.js"
import * as internal from "./internal/goals.js"

/**
 * Whether the round driver may start rounds for the current goal. Process-local, never logged: a goal read back
 * from a log (on resume or attach) is `disarmed` until a human resumes it (R119).
 *
 * @since 0.0.0
 * @category models
 */
export type Activation = "armed" | "disarmed"

/**
 * What `get` returns: the folded state (with pending changes applied) and the activation.
 *
 * @since 0.0.0
 * @category models
 */
export interface View extends GoalState {
  readonly activation: Activation
}

/**
 * A live notice that the goal changed (R120's `goal/changed`).
 *
 * @since 0.0.0
 * @category models
 */
export interface Changed {
  readonly operation: Operation
  readonly ref: GoalRef
  readonly goal: Goal | undefined
}

/**
 * The input of `create`.
 *
 * @since 0.0.0
 * @category models
 */
export interface CreateInput {
  readonly objective: string
  /** The round cap; the service's default (256) when absent. */
  readonly maxGoalRounds?: number | undefined
  /** The token budget, summed from the `usage` of this goal's rounds in the log. */
  readonly maxTokens?: number | undefined
  /** The wall-clock budget, from now (on `Clock`); stored as an absolute deadline. */
  readonly timeBudget?: Duration.DurationInput | undefined
  readonly verifier?: Verifier | undefined
}

/**
 * The input of `edit`: what to change (the phase and blocker are kept).
 *
 * @since 0.0.0
 * @category models
 */
export interface EditInput {
  readonly objective?: string | undefined
  readonly maxGoalRounds?: number | undefined
  readonly maxTokens?: number | undefined
  readonly verifier?: Verifier | undefined
}

/**
 * What a mutation fails with.
 *
 * @since 0.0.0
 * @category models
 */
export type Failure = GoalError | GoalReplayError

/**
 * The goal service of one agent.
 *
 * Contract (every mutation): a compare-and-set on `{ id, revision }` (`GOAL_STALE_REVISION` otherwise) that bumps
 * the revision by one, with timestamps from `Clock` clamped to be monotonic. The change is decoded with the schema
 * replay uses before anything is logged (`GOAL_INVALID_INPUT` otherwise), so the service never writes a change its
 * own replay rejects. The change is handed to
 * `agent.inject` as a round-zero goal message whose content is its canonical rendering — appended at once when
 * the agent is outside an acceptance window, staged otherwise (and never wiped by a cancel) — and `get` reflects
 * it as soon as the mutation returns. If the injection fails nothing is applied. A mutation made while a goal round
 * is between admission and its prompt being written waits for the prompt, so a change never lands beside a round
 * it did not count.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  /** The current state. Fails with `GoalReplayError` once the log has shown a goal event that cannot be folded. */
  readonly get: Effect.Effect<View, Failure>
  /** Creates a goal (active, armed). Refuses while an unfinished goal exists (`GOAL_ALREADY_EXISTS`). */
  readonly create: (input: CreateInput) => Effect.Effect<Goal, Failure>
  /**
   * Changes the objective, the round cap, the token budget or the verifier. Contract: an edit with nothing in it, or
   * only with values the goal already has, is refused (`GOAL_INVALID_INPUT`): no revision without a change.
   */
  readonly edit: (ref: GoalRef, input: EditInput) => Effect.Effect<Goal, Failure>
  /** active → paused; disarms. */
  readonly pause: (ref: GoalRef) => Effect.Effect<Goal, Failure>
  /** active | paused | blocked → active (only below the round cap); arms. */
  readonly resume: (ref: GoalRef) => Effect.Effect<Goal, Failure>
  /** Marks the goal complete without running the verifier (a human's word); disarms. */
  readonly complete: (ref: GoalRef) => Effect.Effect<Goal, Failure>
  /**
   * active → blocked with a reason; disarms. Contract: the reason's `code` is lower-kebab-case and its `message`
   * neither blank nor padded with white space (`GOAL_INVALID_INPUT` otherwise, nothing logged).
   */
  readonly block: (ref: GoalRef, reason: BlockedReason) => Effect.Effect<Goal, Failure>
  /** Clears the goal (a tombstone at revision + 1); disarms. */
  readonly clear: (ref: GoalRef) => Effect.Effect<void, Failure>
  /** Stops the driver from starting rounds (no durable event). */
  readonly disarm: Effect.Effect<void>
  /** Tokens used by the current goal's rounds, from the usage in the log. */
  readonly tokensUsed: Effect.Effect<number>
  /** Live notices of every applied change. Contract: subscribed when it returns ("subscribe, then mutate"). */
  readonly subscribe: Effect.Effect<Queue.Dequeue<Changed>, never, Scope.Scope>
  /** Live notices of every applied change, as a stream (subscribes when run). */
  readonly changes: Stream.Stream<Changed>
  /** Waits until the driver has nothing left to do and the agent is idle (for tests and the CLI). */
  readonly settled: Effect.Effect<void>
}

/**
 * The goal service of the current context.
 *
 * @since 0.0.0
 * @category services
 */
export class Goals extends Context.Tag("@harness/goal/Goals")<Goals, Service>() {}

/**
 * What a verifier reports: whether the goal is really complete, and its output (summarised in the log).
 *
 * @since 0.0.0
 * @category models
 */
export interface VerifierResult {
  readonly passed: boolean
  readonly output: string
}

/**
 * Options of {@link make}.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The round cap of a goal created without one. Default 256. */
  readonly defaultMaxGoalRounds?: number | undefined
  /** How many rounds must have started before a goal round may block its goal (R127). Default 3. */
  readonly blockedAfterConsecutiveRounds?: number | undefined
  /** The directory command verifiers run in. Default: the process's working directory. */
  readonly workspace?: string | undefined
  /** Effect verifiers, by the name a goal's `{ kind: "effect", name }` verifier gives. */
  readonly verifiers?: Readonly<Record<string, (goal: Goal) => Effect.Effect<VerifierResult>>> | undefined
  /**
   * The command verifiers the operator allows, as exact command lines. Contract: a command is the operator's
   * authority, never the model's nor the log's. `create` and `edit` refuse a command verifier not listed here
   * (`GOAL_INVALID_INPUT`), the goal tools have no verifier parameter, and a goal read back from a log whose command
   * is not listed (another process's configuration, an edited session) is never run: its check fails, saying so.
   * Default: none.
   */
  readonly verifierCommands?: ReadonlyArray<string> | undefined
  /** The verifier output kept in the log and shown to the model, in characters (the tail is kept). Default 4 000. */
  readonly maxVerifierOutput?: number | undefined
  /**
   * How long one verifier run may take (on `Clock`). Default 10 minutes. Contract: a run that does not finish in
   * time is a failed verdict whose output says it timed out; a command verifier is killed (its process group,
   * `SIGKILL`) and its output so far is kept.
   */
  readonly verifierTimeout?: Duration.DurationInput | undefined
}

/**
 * The goal system before it is attached: hooks and tools for `Agent.make`, and `attach`.
 *
 * @since 0.0.0
 * @category models
 */
export interface Plugin {
  /**
   * The admission guard (R125) and the rounds' budget (`turnBudget`, R161): put them outermost
   * (`Hooks.compose(plugin.hooks, yours)`).
   */
  readonly hooks: Hooks.Hooks<never>
  /** `get_goal`, `create_goal`, `update_goal` (R127). */
  readonly tools: ReadonlyArray<AgentTool.AgentTool<never>>
  /**
   * Starts the service for `agent` in the current scope: folds the existing log (the goal starts disarmed) and
   * starts the round driver. Contract: one agent per plugin; attaching twice fails with `GOAL_AGENT_NOT_LIVE`.
   */
  readonly attach: (agent: Agent.Service) => Effect.Effect<Service, GoalError, Scope.Scope>
}

/**
 * Makes the goal plugin. Fails with `GoalError { code: "GOAL_INVALID_INPUT" }` naming the option when a count is not
 * a positive integer or `verifierTimeout` is not a positive, finite duration.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make: (options?: Options) => Effect.Effect<Plugin, GoalError, CommandExecutor> = internal.make

/**
 * Builds an agent with the goal plugin (its guard outermost, its tools first) and attaches the service.
 *
 * @since 0.0.0
 * @category constructors
 */
export const makeAgent: <R = never>(
  agentOptions?: Agent.Options<R>,
  options?: Options
) => Effect.Effect<
  { readonly agent: Agent.Service; readonly goals: Service },
  AgentError.AgentConfigError | GoalError,
  Scope.Scope | LanguageModel.LanguageModel | CommandExecutor | R
> = internal.makeAgent
