/**
 * A step's critical sections: where it opens — `openStep`, the one place a step opens, and `opensInline`, which
 * decides whose section runs it — and where it closes: D2 and `step/end`, and in the same section what follows them
 * (the turn's end, or the next step's opening; R48, R54). The step itself, its four phases, is `step.ts`.
 */
import type { AiError } from "@effect/ai"
import type { LlmFailure as LlmFailureT } from "@harness/domain"
import type { History, SessionLog } from "@harness/session"
import { Effect, Ref } from "effect"
import type { Progress, ToolRuntime } from "./activity.js"
import * as Budgets from "./budget.js"
import type { Env } from "./env.js"
import { appendOwn } from "./live.js"
import { drain } from "./outbox.js"
import { appendWarning, endTurnLocked, turnReason } from "./turnEnd.js"
import type { TurnFailure } from "./turnFailure.js"
import { logFailure } from "./turnFailure.js"

/** What a step came to, for the turn to go on from: completed (and how), or a failed request. */
export type StepOutcome =
  | {
    readonly _tag: "Completed"
    readonly continue: boolean
    readonly concluded: boolean
    readonly maxTokens: boolean
    /** The step's own critical section ended the turn (a step without calls, or whose result concluded it). */
    readonly ended: boolean
    /** The next step's history, when the step's last critical section also opened the next step. */
    readonly openedNext?: History.History | undefined
  }
  | RequestFailed

/** A failed model request (R75): the turn decides what follows (`turn.ts`). */
export interface RequestFailed {
  readonly _tag: "RequestFailed"
  readonly error: AiError.AiError
  readonly failure: LlmFailureT.LlmFailure
}

export const stepOutcome = (outcome: StepOutcome): string =>
  outcome._tag === "RequestFailed"
    ? "request-failed"
    : outcome.concluded
    ? "concluded"
    : outcome.continue
    ? "continue"
    : "stop"

/** The step being run: its turn and number, and the activity's records it reports to. */
export interface StepRun {
  readonly turn: number
  readonly step: number
  readonly progress: Ref.Ref<Progress>
  readonly tools: ToolRuntime
  readonly gauge: Budgets.Gauge
}

/**
 * Whether nothing runs between a step's opening and the critical section before it: no `step` hook and no system
 * prompt to evaluate. Then the section that opens a turn, or that closes a tool step the turn goes on after, also
 * opens the next step (ADR 0033): its D1 would find the outbox that section just drained.
 */
export const opensInline = (env: Env): boolean => {
  const system = env.options.system
  // A `turnBudget` hook and a session budget are read after the turn opens, before its first step (R156, R160); an
  // agent that may compact before a step decides so before opening it (R146).
  return env.options.hooks?.step === undefined && (system === undefined || typeof system === "string") &&
    env.options.hooks?.turnBudget === undefined && env.budget.maxSessionTokens === undefined &&
    env.budget.maxSessionCost === undefined && env.compaction?.contextWindow === undefined
}

/**
 * Opens a step through the section's transaction `tx`: the history the request will see — the reconstruction
 * boundary (R103): the log as it is right before `step/start` — then `step/start`.
 *
 * Contract: the one place a step opens. `opensInline` decides which section runs it: when nothing runs before the
 * step's opening, the section before it — the turn's opening section for its first step (`turn.ts`), the close of
 * the tool step before it otherwise (`endToolStepLocked`); else a section of the step's own, in `step.ts`'s `prepare`.
 */
export const openStep = (
  env: Env,
  tx: SessionLog.Transaction,
  turn: number,
  step: number
): Effect.Effect<History.History, TurnFailure> =>
  Effect.zipLeft(env.log.history, appendOwn(env, tx, [{ type: "step/start", data: { turn, step } }])).pipe(
    Effect.mapError(logFailure(step))
  )

/** Appends a reply's message through the section's transaction `tx`: the finishing parts held back, then the message. */
export type AppendMessage = (tx: SessionLog.Transaction) => Effect.Effect<unknown, SessionLog.SessionLogError>

/**
 * The end of a step without tool calls, in one transaction `tx`: the message, D2, `step/end` and — unless steering was
 * drained or a `turnStopping` hook must run in between — D3 and `turn/end` (R48, R54).
 */
export const endReplyStepLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  run: StepRun,
  appendMessage: AppendMessage,
  maxTokens: boolean
) {
  const { progress, step, turn } = run
  yield* appendMessage(tx)
  const drained = yield* drain(env, tx, { turn })
  yield* appendOwn(env, tx, [{ type: "step/end", data: { turn, step } }])
  const ended = env.options.hooks?.turnStopping === undefined && !drained.steering
  if (ended) {
    const { maxTokens: before } = yield* Ref.get(progress)
    yield* endTurnLocked(env, tx, progress, turn, turnReason({ maxTokens: before || maxTokens }))
  }
  const outcome: StepOutcome = { _tag: "Completed", continue: drained.steering, concluded: false, maxTokens, ended }
  return outcome
})

/**
 * The end of a step with tool calls, in one transaction `tx`: D2, then `step/end`. A step whose result concluded the turn
 * ends it here, in the same section, without `turnStopping` (R54): no steering can be accepted between its D2 and
 * its `turn/end`, and steering D2 drained stays in the log for the next turn's request. Any other tool step opens
 * the next one here (R48).
 */
export const endToolStepLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  run: StepRun,
  concluded: boolean,
  now: number
) {
  const { gauge, progress, step, turn } = run
  yield* Effect.zipRight(
    drain(env, tx, { turn }),
    appendOwn(env, tx, [{ type: "step/end", data: { turn, step } }])
  ).pipe(Effect.mapError(logFailure(step)))
  // A step with calls did not stop at `max-tokens` (a truncated response's calls are dropped, R52): only an
  // earlier step of the turn can have made its reason `max-tokens`.
  if (concluded) {
    yield* endTurnLocked(env, tx, progress, turn, turnReason(yield* Ref.get(progress)))
    const outcome: StepOutcome = { _tag: "Completed", continue: false, concluded, maxTokens: false, ended: true }
    return outcome
  }
  // The budgets after the step (R155): a budget reached ends the turn here, instead of opening the next step; the
  // last step before a hard stop is preceded by the warning (R159).
  const stop = Budgets.reached(gauge, step, now)
  if (stop !== undefined) {
    yield* endTurnLocked(env, tx, progress, turn, stop)
    const outcome: StepOutcome = { _tag: "Completed", continue: false, concluded, maxTokens: false, ended: true }
    return outcome
  }
  const warning = Budgets.warning(gauge, step)
  if (warning !== undefined) yield* appendWarning(env, tx, warning).pipe(Effect.mapError(logFailure(step)))
  const openedNext = yield* openNext(env, tx, run)
  const outcome: StepOutcome = {
    _tag: "Completed",
    continue: true,
    concluded,
    maxTokens: false,
    ended: false,
    openedNext
  }
  return outcome
})

/**
 * In an unconcluded tool step's last critical section, after its `step/end`: counts and opens the next step when
 * nothing runs before its opening (`opensInline`), through that section's transaction `tx`.
 */
const openNext = (
  env: Env,
  tx: SessionLog.Transaction,
  run: StepRun
): Effect.Effect<History.History | undefined, TurnFailure> =>
  !opensInline(env)
    ? Effect.succeed(undefined)
    : Effect.zipRight(
      Ref.update(run.progress, (p) => ({ ...p, step: run.step + 1 })),
      openStep(env, tx, run.turn, run.step + 1)
    )
