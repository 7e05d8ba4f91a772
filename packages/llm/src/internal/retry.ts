/**
 * Retrying a model request while nothing has reached the caller, within a bound that holds for the whole model
 * call. The policy is a `Schedule` over classified failures: exponential backoff with jitter, capped in count and
 * delay, replaced by the provider's `Retry-After` when it gave one — and declined when that hint exceeds the cap,
 * the code is not transient, or the wait would end past the call's deadline. One schedule driver serves the whole
 * call and is never reset, so the attempt count and the backoff grow across attempts whatever each one streamed.
 */
import type { AiError } from "@effect/ai"
import { LlmFailure } from "@harness/domain"
import { Chunk, Clock, Duration, Effect, Schedule, ScheduleDecision, Stream } from "effect"
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

/**
 * Runs `attempt` and re-runs it after a failure, as the schedule says, while the failed attempt emitted nothing.
 *
 * Contract:
 * - A model call makes at most `maxRetries + 1` attempts, whatever each attempt streamed before failing (empty
 *   chunks, comments, role-only deltas); the n-th retry waits `baseDelay · 2ⁿ⁻¹` (jittered, capped) — the count
 *   and the backoff are kept across the whole call, never reset.
 * - Once an attempt emitted an element (a part reached the caller), its failure goes to the caller unchanged and is
 *   not retried: nothing is replayed (the agent's `requestError` hook decides what to do). A failure the schedule
 *   declines goes to the caller unchanged too.
 * - With `policy.deadline`, the call (attempts and waits together) ends with `pastDeadline(deadline)` once that
 *   much time has passed since it started, output or not; a retry whose wait would end at or after the deadline is
 *   not made (the last failure goes to the caller at once).
 * - `onRetry` runs before each wait.
 */
export const beforeOutput = <A, R>(
  attempt: Stream.Stream<A, AiError.AiError, R>,
  policy: RetryPolicy,
  hooks: Hooks
): Stream.Stream<A, AiError.AiError, R> =>
  Stream.unwrap(Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const deadlineAt = policy.deadline === undefined ? undefined : started + Duration.toMillis(policy.deadline)
    // One driver for the whole call: its state (attempt count, backoff) survives every attempt.
    const driver = yield* Schedule.driver(retrying(policy, hooks.onRetry, deadlineAt))
    const run = (): Stream.Stream<A, AiError.AiError, R> =>
      Stream.suspend(() => {
        // Whether this run of the attempt emitted: created afresh per run, read and written only by the fiber
        // running it. A plain flag keeps the per-chunk path free of effects.
        let emitted = false
        return attempt.pipe(
          Stream.mapChunks((chunk) => {
            if (!emitted && Chunk.isNonEmpty(chunk)) emitted = true
            return chunk
          }),
          Stream.catchAll((error) =>
            emitted ? Stream.fail(error) : Stream.unwrap(Effect.match(driver.next(error), {
              onFailure: () => Stream.fail(error),
              onSuccess: run
            }))
          )
        )
      })
    const deadline = policy.deadline
    return deadline === undefined
      ? run()
      : run().pipe(
        Stream.interruptWhen(
          Effect.zipRight(Effect.sleep(deadline), Effect.failSync(() => hooks.pastDeadline(deadline)))
        )
      )
  }))
