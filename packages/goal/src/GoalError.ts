/**
 * The goal service's errors, one family shaped like `@effect/ai`'s `AiError`. Each is a schema (so a tool can
 * return it to the model and a CLI can print it), with the code docs/CONTRACT.md names in `code` (R120, R127); each
 * carries {@link TypeId}, which {@link isGoalError} checks; {@link AnyGoalError} is the union (ADR 0074).
 *
 * @since 0.0.0
 */
import { Predicate, Schema } from "effect"
import { GoalReplayError } from "./GoalReplay.js"

/**
 * The mark every member of {@link AnyGoalError} carries, on its prototype (its fields and JSON are unchanged).
 *
 * @since 0.0.0
 * @category symbols
 */
export const TypeId = "~@harness/goal/GoalError"

/**
 * Why a goal operation was refused.
 *
 * - `GOAL_NOT_FOUND`: no current goal, or the ref names another goal.
 * - `GOAL_STALE_REVISION`: the compare-and-set failed — the goal moved on since the caller read it.
 * - `GOAL_ALREADY_EXISTS`: create while an unfinished goal exists.
 * - `GOAL_INVALID_INPUT`: an objective, a cap or a budget is invalid.
 * - `GOAL_INVALID_TRANSITION`: the operation does not apply to the goal's phase (e.g. pause a blocked goal).
 * - `GOAL_INJECT_FAILED`: the change could not be handed to the agent (nothing was applied).
 * - `GOAL_REPLAY`: the log holds a goal event that cannot be folded; every read fails until the log is repaired.
 * - `GOAL_AGENT_NOT_LIVE`: the agent is not the one this service is attached to, or it was disposed.
 * - `GOAL_TOOL_AUTHORITY`: a goal tool was called from a turn without the authority for that action (R127).
 * - `GOAL_TOOL_BLOCK_THRESHOLD`: a goal round tried to block before the configured number of rounds (R127).
 * - `GOAL_TOOL_DRIVER_REQUIRED`: a goal tool was called outside an open turn of the attached agent (R127).
 *
 * @public
 * @since 0.0.0
 * @category schemas
 */
export const GoalErrorCode = Schema.Literal(
  "GOAL_NOT_FOUND",
  "GOAL_STALE_REVISION",
  "GOAL_ALREADY_EXISTS",
  "GOAL_INVALID_INPUT",
  "GOAL_INVALID_TRANSITION",
  "GOAL_INJECT_FAILED",
  "GOAL_REPLAY",
  "GOAL_AGENT_NOT_LIVE",
  "GOAL_TOOL_AUTHORITY",
  "GOAL_TOOL_BLOCK_THRESHOLD",
  "GOAL_TOOL_DRIVER_REQUIRED"
)
/**
 * @public
 * @since 0.0.0
 * @category errors
 */
export type GoalErrorCode = typeof GoalErrorCode.Type

/**
 * A refused goal operation: `code` says which rule, `message` what was wrong.
 *
 * @since 0.0.0
 * @category errors
 */
export class GoalError extends Schema.TaggedError<GoalError>("@harness/goal/GoalError")(
  "GoalError",
  { code: GoalErrorCode, message: Schema.String }
) {}

/**
 * Every error the goal package fails with: a refused operation, or a log its replay cannot fold (`GoalReplayError`,
 * which `GOAL_REPLAY` reports to callers). One union, as `@effect/ai`'s `AiError` is one.
 *
 * @since 0.0.0
 * @category errors
 */
export type AnyGoalError = GoalError | GoalReplayError

/**
 * The schema of `AnyGoalError`: what an API or a tool result carries.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AnyGoalError = Schema.Union(GoalError, GoalReplayError)

/**
 * Whether `u` is an error of the goal package (a `GoalError` or a `GoalReplayError`).
 *
 * @since 0.0.0
 * @category guards
 */
export const isGoalError = (u: unknown): u is AnyGoalError => Predicate.hasProperty(u, TypeId)

// Every member carries the mark: a member added to the union is marked with it.
for (const member of AnyGoalError.members) Object.defineProperty(member.prototype, TypeId, { value: TypeId })
