/**
 * Retrying a model request while nothing has reached the caller, within a bound that holds for the whole model
 * call. The policy is a `Schedule` over classified failures: exponential backoff with jitter, capped in count and
 * delay, replaced by the provider's `Retry-After` when it gave one — and declined when that hint exceeds the cap,
 * the code is not transient, or the wait would end past the call's deadline. One schedule driver serves the whole
 * call and is never reset, so the attempt count and the backoff grow across attempts whatever each one streamed.
 */
import type { AiError } from "@effect/ai"
import { LlmFailure } from "@harness/domain"
import {
  Chunk,
  Clock,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Option,
  Schedule,
  ScheduleDecision,
  Scope
} from "effect"
import type { RetryPolicy } from "./settings.js"

/**
 * The retry schedule. Input: the classified failure of the attempt that just failed; output: that failure.
 *
 * Contract: continues only for `LlmFailure.transientCodes`, at most `maxRetries` times; the delay is
 * `baseDelay · 2ⁿ` jittered by ±20% and capped at `maxDelay`, or exactly `retryAfterMs` when present; a
 * `retryAfterMs` above `maxDelay` stops the schedule.
 */
export const schedule = (policy: RetryPolicy): Schedule.Schedule<LlmFailure.LlmFailure, LlmFailure.LlmFailure> => {
  const maxDelayMs = Duration.toMillis(policy.maxDelay)
  return Schedule.exponential(policy.baseDelay, 2).pipe(
    Schedule.jittered,
    Schedule.modifyDelay((_, delay) => Duration.min(delay, policy.maxDelay)),
    Schedule.intersect(Schedule.recurs(policy.maxRetries)),
    Schedule.zipRight(Schedule.identity<LlmFailure.LlmFailure>()),
    Schedule.whileInput((failure: LlmFailure.LlmFailure) =>
      LlmFailure.transientCodes.has(failure.code) &&
      (failure.retryAfterMs === undefined || failure.retryAfterMs <= maxDelayMs)
    ),
    Schedule.modifyDelay((failure, delay) =>
      failure.retryAfterMs === undefined ? delay : Duration.millis(failure.retryAfterMs)
    )
  )
}

/** What the retry loop tells its observer before it waits. */
export interface RetryNotice {
  /** 1 for the first retry of the model call, 2 for the second… */
  readonly retry: number
  readonly delayMs: number
  readonly failure: LlmFailure.LlmFailure
}

/** What {@link beforeOutput} reports through. */
export interface Hooks {
  /** Runs before each wait. */
  readonly onRetry: (notice: RetryNotice) => Effect.Effect<void>
  /** The failure that ends a model call still running when `policy.deadline` has passed. */
  readonly pastDeadline: (deadline: Duration.Duration) => AiError.AiError
}

/**
 * {@link schedule} over an attempt's failure: classified at the current time, declined when the wait would end at
 * or after `deadlineAt` (epoch ms), and announced through `onRetry` before the wait.
 */
const retrying = (
  policy: RetryPolicy,
  onRetry: Hooks["onRetry"],
  deadlineAt: number | undefined
): Schedule.Schedule<unknown, AiError.AiError> =>
  Schedule.delays(schedule(policy)).pipe(
    Schedule.intersect(Schedule.identity<LlmFailure.LlmFailure>()),
    Schedule.intersect(Schedule.count),
    Schedule.mapInputEffect((error: AiError.AiError) =>
      Effect.map(Clock.currentTimeMillis, (now) => LlmFailure.failureOf(error, now))
    ),
    Schedule.checkEffect((_, [[delay]]) =>
      deadlineAt === undefined
        ? Effect.succeed(true)
        : Effect.map(Clock.currentTimeMillis, (now) => now + Duration.toMillis(delay) < deadlineAt)
    ),
    Schedule.onDecision(([[delay, failure], count], decision) =>
      ScheduleDecision.isDone(decision)
        ? Effect.void
        : onRetry({ retry: count + 1, delayMs: Duration.toMillis(delay), failure })
    )
  )

/** A response pulled chunk by chunk: `Stream.toPull`'s shape (`Option.none()` at the end). */
export type Pull<A> = Effect.Effect<Chunk.Chunk<A>, Option.Option<AiError.AiError>>

/**
 * Opens `attempt` (in a scope of its own) and pulls it, and opens it again after a failure, as the schedule says,
 * while the failed attempt's pull gave nothing.
 *
 * Contract:
 * - A model call makes at most `maxRetries + 1` attempts, whatever each attempt read before failing (empty
 *   chunks, comments, role-only deltas); the n-th retry waits `baseDelay · 2ⁿ⁻¹` (jittered, capped) — the count
 *   and the backoff are kept across the whole call, never reset.
 * - Once a pull succeeded (a chunk reached the caller), the attempt's failure goes to the caller unchanged and is
 *   not retried: nothing is replayed (the agent's `requestError` hook decides what to do). A failure the schedule
 *   declines goes to the caller unchanged too.
 * - A failed attempt's scope is closed (its request aborted) before the wait; the scope of the attempt that is
 *   pulled last closes with the caller's.
 * - With `policy.deadline`, the call (attempts and waits together) ends with `pastDeadline(deadline)` once that
 *   much time has passed since it started, output or not; a retry whose wait would end at or after the deadline is
 *   not made (the last failure goes to the caller at once).
 * - `onRetry` runs before each wait.
 * - The pull is the caller's fiber's: one pull at a time.
 */
export const beforeOutput = <A>(
  attempt: Effect.Effect<Pull<A>, AiError.AiError, Scope.Scope>,
  policy: RetryPolicy,
  hooks: Hooks
): Effect.Effect<Pull<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const call = yield* Effect.scope
    const started = yield* Clock.currentTimeMillis
    const deadlineAt = policy.deadline === undefined ? undefined : started + Duration.toMillis(policy.deadline)
    // One driver for the whole call: its state (attempt count, backoff) survives every attempt.
    const driver = yield* Schedule.driver(retrying(policy, hooks.onRetry, deadlineAt))
    // The running attempt's pull and scope, and whether it gave a chunk: read and written only by the fiber that
    // pulls (a pull runs to its end before the next starts), so the per-chunk path is free of effects of its own.
    let current: Pull<A> | undefined
    let scope: Scope.CloseableScope | undefined
    let emitted = false
    const retryOr = (error: AiError.AiError): Pull<A> => {
      current = undefined
      const closing = scope === undefined ? Effect.void : Scope.close(scope, Exit.fail(error))
      scope = undefined
      return Effect.zipRight(
        closing,
        emitted
          ? Effect.fail(Option.some(error))
          : Effect.matchEffect(driver.next(error), {
            onFailure: () => Effect.fail(Option.some(error)),
            onSuccess: () => pull
          })
      )
    }
    const open: Pull<A> = Effect.flatMap(Scope.fork(call, ExecutionStrategy.sequential), (opened) => {
      scope = opened
      return Effect.matchEffect(Scope.extend(attempt, opened), {
        onFailure: retryOr,
        onSuccess: (next) => {
          current = next
          return pull
        }
      })
    })
    const pull: Pull<A> = Effect.suspend(() =>
      current === undefined ? open : Effect.matchEffect(current, {
        onFailure: Option.match({ onNone: () => Effect.fail(Option.none()), onSome: retryOr }),
        onSuccess: (chunk) => {
          if (!emitted && Chunk.isNonEmpty(chunk)) emitted = true
          return Effect.succeed(chunk)
        }
      })
    )
    const deadline = policy.deadline
    if (deadline === undefined || deadlineAt === undefined) return pull
    const past = () => Option.some(hooks.pastDeadline(deadline))
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      now >= deadlineAt
        ? Effect.fail(past())
        : Effect.timeoutFail(pull, { duration: Duration.millis(deadlineAt - now), onTimeout: past }))
  })
