/**
 * Retrying a model request while nothing has reached the caller. The policy is a `Schedule` over classified
 * failures: exponential backoff with jitter, capped in count and delay, replaced by the provider's `Retry-After`
 * when it gave one — and declined when that hint exceeds the cap or the code is not transient. `Stream.retry`
 * drives it; a failure that follows output carries a marker the schedule declines, so nothing already delivered
 * is replayed.
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
  /** 1 for the first retry. */
  readonly retry: number
  readonly delayMs: number
  readonly failure: LlmFailure.LlmFailure
}

/**
 * The marker on a failure that came after the attempt emitted an element. It never leaves this module: the
 * schedule declines it and {@link beforeOutput} unwraps it.
 */
class AfterOutput {
  readonly _tag = "AfterOutput"
  constructor(readonly error: AiError.AiError) {}
}

type AttemptError = AiError.AiError | AfterOutput

const unmark = (error: AttemptError): AiError.AiError => error instanceof AfterOutput ? error.error : error

/**
 * {@link schedule} over an attempt's failure as `Stream.retry` hands it over: classified at the current time,
 * declined when marked {@link AfterOutput}, and announced through `onRetry` before the wait.
 */
const retrying = (
  policy: RetryPolicy,
  onRetry: (notice: RetryNotice) => Effect.Effect<void>
): Schedule.Schedule<unknown, AttemptError> =>
  Schedule.delays(schedule(policy)).pipe(
    Schedule.intersect(Schedule.identity<LlmFailure.LlmFailure>()),
    Schedule.intersect(Schedule.count),
    Schedule.mapInputEffect((error: AttemptError) =>
      Effect.map(Clock.currentTimeMillis, (now) => LlmFailure.failureOf(unmark(error), now))
    ),
    Schedule.whileInput((error: AttemptError) => !(error instanceof AfterOutput)),
    Schedule.onDecision(([[delay, failure], count], decision) =>
      ScheduleDecision.isDone(decision)
        ? Effect.void
        : onRetry({ retry: count + 1, delayMs: Duration.toMillis(delay), failure })
    )
  )

/**
 * Runs `attempt` and re-runs it after a failure, as the schedule says, while the failed attempt emitted nothing.
 *
 * Contract: once an attempt emitted an element, its failure goes to the caller unchanged and is not retried (the
 * agent's `requestError` hook decides what to do); a failure the schedule declines goes to the caller unchanged
 * too. `onRetry` runs before each wait.
 */
export const beforeOutput = <A, R>(
  attempt: Stream.Stream<A, AiError.AiError, R>,
  policy: RetryPolicy,
  onRetry: (notice: RetryNotice) => Effect.Effect<void>
): Stream.Stream<A, AiError.AiError, R> =>
  Stream.suspend(() => {
    // Whether this run of the attempt emitted: created afresh per run (`Stream.retry` re-runs the suspension),
    // read and written only by the fiber running it. A plain flag keeps the per-chunk path free of effects.
    let emitted = false
    return attempt.pipe(
      Stream.mapChunks((chunk) => {
        if (!emitted && Chunk.isNonEmpty(chunk)) emitted = true
        return chunk
      }),
      Stream.mapError((error): AttemptError => emitted ? new AfterOutput(error) : error)
    )
  }).pipe(
    Stream.retry(retrying(policy, onRetry)),
    Stream.mapError(unmark)
  )
