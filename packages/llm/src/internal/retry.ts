/**
 * Retrying a model request while nothing has reached the caller. The policy is a `Schedule` over classified
 * failures: exponential backoff with jitter, capped in count and delay, replaced by the provider's `Retry-After`
 * when it gave one — and declined when that hint exceeds the cap or the code is not transient.
 */
import type { AiError } from "@effect/ai"
import { LlmFailure } from "@harness/domain"
import {
  Chunk,
  Clock,
  Duration,
  Effect,
  Option,
  Ref,
  Schedule,
  ScheduleDecision,
  ScheduleIntervals,
  Stream
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

/**
 * One step of the schedule: the next state and the delay before the next attempt (ms), or none when the schedule
 * declines. `state` is the schedule's state (`initial` before the first failure).
 */
export const decide = (
  retrySchedule: Schedule.Schedule<LlmFailure.LlmFailure, LlmFailure.LlmFailure>,
  state: unknown,
  failure: LlmFailure.LlmFailure,
  now: number
): Effect.Effect<Option.Option<{ readonly state: unknown; readonly delayMs: number }>> =>
  Effect.map(retrySchedule.step(now, failure, state), ([next, , decision]) =>
    ScheduleDecision.isDone(decision)
      ? Option.none()
      : Option.some({ state: next, delayMs: Math.max(0, ScheduleIntervals.start(decision.intervals) - now) }))

/** What the retry loop tells its observer before it waits. */
export interface RetryNotice {
  /** 1 for the first retry. */
  readonly retry: number
  readonly delayMs: number
  readonly failure: LlmFailure.LlmFailure
}

/**
 * Runs `attempt` and re-runs it after a failure, as the schedule says, while the failed attempt emitted nothing.
 *
 * Contract: once an attempt emitted an element, its failure goes to the caller unchanged (the agent's
 * `requestError` hook decides what to do); a failure the schedule declines goes to the caller unchanged too.
 * `onRetry` runs before each wait.
 */
export const beforeOutput = <A, R>(
  attempt: Stream.Stream<A, AiError.AiError, R>,
  policy: RetryPolicy,
  onRetry: (notice: RetryNotice) => Effect.Effect<void>
): Stream.Stream<A, AiError.AiError, R> => {
  const retrySchedule = schedule(policy)
  return Stream.unwrap(Effect.gen(function*() {
    const scheduleState = yield* Ref.make<unknown>(retrySchedule.initial)
    const retries = yield* Ref.make(0)

    const decideNext = (error: AiError.AiError): Effect.Effect<Option.Option<RetryNotice>> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const failure = LlmFailure.failureOf(error, now)
        const decided = yield* decide(retrySchedule, yield* Ref.get(scheduleState), failure, now)
        if (Option.isNone(decided)) return Option.none()
        yield* Ref.set(scheduleState, decided.value.state)
        const retry = yield* Ref.updateAndGet(retries, (n) => n + 1)
        return Option.some({ retry, delayMs: decided.value.delayMs, failure })
      })

    const loop: Stream.Stream<A, AiError.AiError, R> = Stream.unwrap(Effect.gen(function*() {
      const emitted = yield* Ref.make(false)
      return attempt.pipe(
        Stream.mapChunksEffect((chunk) =>
          Chunk.isEmpty(chunk) ? Effect.succeed(chunk) : Effect.as(Ref.set(emitted, true), chunk)
        ),
        Stream.catchAll((error) =>
          Stream.unwrap(Effect.gen(function*() {
            if (yield* Ref.get(emitted)) return Stream.fail(error)
            const notice = yield* decideNext(error)
            if (Option.isNone(notice)) return Stream.fail(error)
            yield* onRetry(notice.value)
            if (notice.value.delayMs > 0) yield* Effect.sleep(Duration.millis(notice.value.delayMs))
            return loop
          }))
        )
      )
    }))
    return loop
  }))
}
