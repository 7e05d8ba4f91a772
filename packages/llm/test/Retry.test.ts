/**
 * The retry policy: the `Schedule` itself (delays, jitter bounds, cap, `Retry-After`, which codes), and retries
 * over real HTTP driven by `TestClock` — the fake server answers at once, virtual time decides when the next
 * attempt goes out.
 */
import { assert, describe, it } from "@effect/vitest"
import type { LlmFailure } from "@harness/domain"
import {
  Chunk,
  Clock,
  Duration,
  Effect,
  Fiber,
  FiberRef,
  HashMap,
  HashSet,
  Logger,
  Option,
  Queue,
  Random,
  TestClock
} from "effect"
import * as Retry from "../src/internal/retry.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { languageModel, stream } from "./support/provider.js"
import * as Replies from "./support/replies.js"

const policy = (maxRetries: number, baseDelay: Duration.DurationInput, maxDelay: Duration.DurationInput) => ({
  maxRetries,
  baseDelay: Duration.decode(baseDelay),
  maxDelay: Duration.decode(maxDelay)
})

const failure = (code: LlmFailure.LlmFailureCode, retryAfterMs?: number): LlmFailure.LlmFailure =>
  retryAfterMs === undefined ? { code, message: code } : { code, message: code, retryAfterMs }

/** The delays (ms) the schedule gives for these consecutive failures until it declines, under a seeded `Random`. */
const delays = (p: ReturnType<typeof policy>, inputs: ReadonlyArray<LlmFailure.LlmFailure>, seed = 1) =>
  Effect.gen(function*() {
    const schedule = Retry.schedule(p)
    const out: Array<number> = []
    let state: unknown = schedule.initial
    for (const input of inputs) {
      const decided = yield* Retry.decide(schedule, state, input, 0)
      if (Option.isNone(decided)) break
      state = decided.value.state
      out.push(decided.value.delayMs)
    }
    return out
  }).pipe(Effect.withRandom(Random.make(seed)))

describe("the retry schedule", () => {
  it.effect("exponential from the base delay, jittered by ±20%, at most maxRetries times", () =>
    Effect.gen(function*() {
      for (const seed of [1, 2, 3, 4, 5]) {
        const out = yield* delays(policy(3, "1 second", "30 seconds"), Array(6).fill(failure("SERVER")), seed)
        assert.lengthOf(out, 3)
        const [a, b, c] = out as [number, number, number]
        assert.isTrue(a >= 800 && a <= 1200, `first delay ${a}`)
        assert.isTrue(b >= 1600 && b <= 2400, `second delay ${b}`)
        assert.isTrue(c >= 3200 && c <= 4800, `third delay ${c}`)
      }
    }))

  it.effect("a delay never exceeds maxDelay", () =>
    Effect.gen(function*() {
      const out = yield* delays(policy(4, "10 seconds", "15 seconds"), Array(5).fill(failure("OVERLOADED")))
      assert.lengthOf(out, 4)
      assert.isTrue(out.every((delay) => delay <= 15_000))
      assert.deepStrictEqual(out.slice(1), [15_000, 15_000, 15_000])
    }))

  it.effect("Retry-After replaces the backoff; beyond maxDelay it means no retry", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* delays(policy(2, "1 second", "30 seconds"), [failure("RATE_LIMIT", 2500), failure("RATE_LIMIT", 0)]),
        [2500, 0]
      )
      assert.deepStrictEqual(yield* delays(policy(2, "1 second", "30 seconds"), [failure("RATE_LIMIT", 30_001)]), [])
    }))

  it.effect("only transient codes are retried", () =>
    Effect.gen(function*() {
      const p = policy(5, "1 second", "30 seconds")
      for (const code of ["RATE_LIMIT", "OVERLOADED", "SERVER", "NETWORK", "TIMEOUT", "EMPTY_RESPONSE"] as const) {
        assert.lengthOf(yield* delays(p, [failure(code)]), 1, code)
      }
      for (
        const code of [
          "AUTH",
          "QUOTA",
          "BAD_REQUEST",
          "CONTEXT_LENGTH",
          "MALFORMED",
          "CONTENT_FILTER",
          "UNKNOWN"
        ] as const
      ) {
        assert.lengthOf(yield* delays(p, [failure(code)]), 0, code)
      }
      assert.lengthOf(yield* delays(policy(0, "1 second", "30 seconds"), [failure("SERVER")]), 0)
    }))
})

/** Collects the annotations of every retry notice the provider logs. */
const captureRetryNotices = Effect.gen(function*() {
  const notices = yield* Queue.unbounded<Record<string, unknown>>()
  const logger = Logger.make(({ annotations, message }) => {
    if (String(message).includes("retrying")) notices.unsafeOffer(Object.fromEntries(HashMap.toEntries(annotations)))
  })
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(logger))
  return notices
})

/** Waits (without advancing time) until some fiber sleeps until `time`. */
const sleepingUntil = (time: number) =>
  TestClock.sleeps().pipe(
    Effect.tap(() => Effect.yieldNow()),
    Effect.repeat({ until: (sleeps) => Chunk.some(sleeps, (wake) => wake === time) })
  )

const ok = Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] }))

describe("retries over HTTP under TestClock", () => {
  it.scoped("429 with Retry-After: 2 → the next attempt goes out exactly 2 seconds later", () =>
    Effect.gen(function*() {
      const notices = yield* captureRetryNotices
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { baseDelay: "1 second", maxDelay: "30 seconds" } })
      yield* server.reply(Replies.json(429, { error: { message: "Rate limit reached" } }, { "retry-after": "2" }), ok)
      const fiber = yield* Effect.fork(stream(model, "hi"))
      yield* server.takeRequest
      const notice = yield* Queue.take(notices)
      assert.deepStrictEqual([notice.retry, notice.delayMs, notice.code], [1, 2000, "RATE_LIMIT"])
      const start = yield* Clock.currentTimeMillis
      yield* sleepingUntil(start + 2000)
      yield* TestClock.adjust("1999 millis")
      assert.lengthOf(yield* server.requests, 1)
      yield* TestClock.adjust("1 millis")
      yield* server.takeRequest
      const parts = yield* Fiber.join(fiber)
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      assert.lengthOf(yield* server.requests, 2)
    }))

  it.scoped("500, 500, success: backoff of ~1s then ~2s (jittered), three attempts", () =>
    Effect.gen(function*() {
      const notices = yield* captureRetryNotices
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { baseDelay: "1 second", maxDelay: "30 seconds" } })
      const serverError = Replies.json(500, { error: { message: "Internal error" } })
      yield* server.reply(serverError, serverError, ok)
      const fiber = yield* Effect.fork(stream(model, "hi"))
      const bounds: Array<readonly [number, number]> = [[800, 1200], [1600, 2400]]
      for (const [low, high] of bounds) {
        yield* server.takeRequest
        const notice = yield* Queue.take(notices)
        const delay = Number(notice.delayMs)
        assert.isTrue(delay >= low && delay <= high, `delay ${delay} outside [${low}, ${high}]`)
        assert.strictEqual(notice.code, "SERVER")
        const now = yield* Clock.currentTimeMillis
        yield* sleepingUntil(now + delay)
        yield* TestClock.adjust(Duration.millis(delay))
      }
      yield* server.takeRequest
      yield* Fiber.join(fiber)
      assert.lengthOf(yield* server.requests, 3)
    }))
})
