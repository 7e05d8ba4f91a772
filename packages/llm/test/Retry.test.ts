/**
 * The retry policy: the `Schedule` itself (delays, jitter bounds, cap, `Retry-After`, which codes), and retries
 * over real HTTP driven by `TestClock` — the fake server answers at once, virtual time decides when the next
 * attempt goes out.
 */
import { AiError } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure } from "@harness/domain"
import {
  Cause,
  Chunk,
  Clock,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberRef,
  HashMap,
  HashSet,
  Logger,
  Option,
  Queue,
  Random,
  Ref,
  ScheduleDecision,
  ScheduleIntervals,
  Stream,
  TestClock
} from "effect"
import * as Retry from "../src/internal/retry.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { failing, languageModel, stream } from "./support/provider.js"
import * as Replies from "./support/replies.js"

const policy = (maxRetries: number, baseDelay: Duration.DurationInput, maxDelay: Duration.DurationInput) => ({
  maxRetries,
  baseDelay: Duration.decode(baseDelay),
  maxDelay: Duration.decode(maxDelay),
  deadline: undefined
})

/** Hooks for `Retry.beforeOutput` with `onRetry` (these policies have no deadline). */
const hooks = (onRetry: Retry.Hooks["onRetry"]): Retry.Hooks => ({
  onRetry,
  pastDeadline: () => aiFailure("TIMEOUT")
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
      const [next, , decision] = yield* schedule.step(0, input, state)
      if (ScheduleDecision.isDone(decision)) break
      state = next
      out.push(ScheduleIntervals.start(decision.intervals))
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

/** A failure the provider would classify as `code` (carried as the error's cause, as the provider does). */
const aiFailure = (code: LlmFailure.LlmFailureCode) =>
  new AiError.UnknownError({
    module: "Retry.test",
    method: "attempt",
    description: code,
    cause: { code, message: code }
  })

/**
 * An attempt that counts its runs, gives `emit` elements and then fails with `code` — until `failingRuns` runs
 * have failed; later runs give "ok" and end.
 */
const scriptedAttempt = (
  runs: Ref.Ref<number>,
  emit: ReadonlyArray<string>,
  code: LlmFailure.LlmFailureCode,
  failingRuns: number
) =>
  Effect.flatMap(Ref.updateAndGet(runs, (n) => n + 1), (run) =>
    Stream.toPull(
      run > failingRuns
        ? Stream.make("ok")
        : Stream.concat(Stream.fromIterable(emit), Stream.fail(aiFailure(code)))
    ))

describe("Retry.beforeOutput", () => {
  const instant = policy(3, 0, 0)

  it.effect("a failure before any output is retried, and each retry is announced", () =>
    Effect.gen(function*() {
      const runs = yield* Ref.make(0)
      const notices = yield* Ref.make<ReadonlyArray<number>>([])
      const out = yield* Stream.fromPull(Retry.beforeOutput(
        scriptedAttempt(runs, [], "SERVER", 2),
        instant,
        hooks((notice) => Ref.update(notices, (all) => [...all, notice.retry]))
      )).pipe(Stream.runCollect)
      assert.deepStrictEqual(Chunk.toArray(out), ["ok"])
      assert.strictEqual(yield* Ref.get(runs), 3)
      assert.deepStrictEqual(yield* Ref.get(notices), [1, 2])
    }))

  it.effect("no retry after the first output: the failure reaches the caller and nothing is replayed", () =>
    Effect.gen(function*() {
      const runs = yield* Ref.make(0)
      const notices = yield* Ref.make(0)
      const delivered: Array<string> = []
      const exit = yield* Stream.fromPull(Retry.beforeOutput(
        scriptedAttempt(runs, ["Hel", "lo"], "SERVER", 1),
        instant,
        hooks(() => Ref.update(notices, (n) => n + 1))
      )).pipe(
        Stream.runForEach((element) => Effect.sync(() => delivered.push(element))),
        Effect.exit
      )
      // SERVER is transient and retries remain: only the output already delivered stops the retry.
      assert.deepStrictEqual(delivered, ["Hel", "lo"])
      assert.strictEqual(yield* Ref.get(runs), 1)
      assert.strictEqual(yield* Ref.get(notices), 0)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = Cause.failureOption(exit.cause)
        assert.isTrue(
          Option.isSome(error) && error.value._tag === "UnknownError",
          "the provider's own error, unwrapped"
        )
      }
    }))

  it.effect("a failure the schedule declines reaches the caller unchanged after one attempt", () =>
    Effect.gen(function*() {
      const runs = yield* Ref.make(0)
      const exit = yield* Stream.fromPull(
        Retry.beforeOutput(scriptedAttempt(runs, [], "AUTH", 5), instant, hooks(() => Effect.void))
      )
        .pipe(
          Stream.runCollect,
          Effect.exit
        )
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* Ref.get(runs), 1)
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

/** DeepSeek's first chunk: a role-only delta, which produces no part. */
const roleOnly = Fixtures.frame({
  id: "x",
  object: "chat.completion.chunk",
  created: 1767411028,
  model: "deepseek-v4-flash",
  choices: [{ index: 0, delta: { role: "assistant", content: null, reasoning_content: "" }, finish_reason: null }]
})

/** Streams `hi` expecting a failure; returns its code and how many requests the server received. */
const failedAttempts = (server: FakeServer.FakeServer, model: Parameters<typeof stream>[0]) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(stream(model, "hi"))
    assert.isTrue(Exit.isFailure(exit), "the stream did not fail")
    if (Exit.isSuccess(exit)) return { code: undefined, requests: 0 }
    const error = Cause.failureOption(exit.cause)
    const code = Option.isSome(error)
      ? LlmFailure.failureOf(error.value, yield* Clock.currentTimeMillis).code
      : undefined
    return { code, requests: (yield* server.requests).length }
  })

describe("a request makes at most maxRetries + 1 attempts, whatever each attempt streamed before failing", () => {
  it.scoped("a role-only delta, then a reset: 3 requests with maxRetries 2, then NETWORK", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxRetries: 2 } })
      yield* server.otherwise(Replies.sse([roleOnly], { end: "cut" }))
      assert.deepStrictEqual(yield* failedAttempts(server, model), { code: "NETWORK", requests: 3 })
    }))

  it.scopedLive("a role-only delta, then a stall: 3 requests with maxRetries 2, then TIMEOUT (idle timeout)", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { idleTimeout: "100 millis", retry: { maxRetries: 2 } })
      yield* server.otherwise(Replies.sse([roleOnly], { end: "stall" }))
      assert.deepStrictEqual(yield* failedAttempts(server, model), { code: "TIMEOUT", requests: 3 })
    }))

  it.scoped("a role-only delta, then event: error: 3 requests with maxRetries 2, then SERVER", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxRetries: 2 } })
      yield* server.otherwise(Replies.sse([
        roleOnly,
        `event: error\ndata: ${JSON.stringify({ error: { message: "upstream failed", type: "server_error" } })}\n\n`
      ]))
      assert.deepStrictEqual(yield* failedAttempts(server, model), { code: "SERVER", requests: 3 })
    }))

  it.scopedLive("a body of keep-alive comments only: 3 requests with maxRetries 2, then TIMEOUT (idle timeout)", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { idleTimeout: "100 millis", retry: { maxRetries: 2 } })
      yield* server.otherwise(Replies.forever([Fixtures.keepAlive], () => Fixtures.keepAlive))
      assert.deepStrictEqual(yield* failedAttempts(server, model), { code: "TIMEOUT", requests: 3 })
    }))

  it.scoped("keep-alive comments, then a reset: maxRetries 0 means exactly one request", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxRetries: 0 } })
      yield* server.otherwise(Replies.sse([Fixtures.keepAlive, Fixtures.keepAlive], { end: "cut" }))
      assert.deepStrictEqual(yield* failedAttempts(server, model), { code: "NETWORK", requests: 1 })
    }))

  it.scoped("the backoff grows per attempt across the request (~1 s, ~2 s, ~4 s), then the failure: 4 requests", () =>
    Effect.gen(function*() {
      const notices = yield* captureRetryNotices
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        retry: { maxRetries: 3, baseDelay: "1 second", maxDelay: "30 seconds" }
      })
      yield* server.otherwise(Replies.sse([roleOnly], { end: "cut" }))
      const fiber = yield* Effect.fork(failedAttempts(server, model))
      const bounds: Array<readonly [number, number]> = [[800, 1200], [1600, 2400], [3200, 4800]]
      for (const [index, [low, high]] of bounds.entries()) {
        yield* server.takeRequest
        const notice = yield* Queue.take(notices)
        const delay = Number(notice.delayMs)
        assert.strictEqual(notice.retry, index + 1)
        assert.isTrue(delay >= low && delay <= high, `retry ${index + 1}: delay ${delay} outside [${low}, ${high}]`)
        const now = yield* Clock.currentTimeMillis
        yield* sleepingUntil(now + delay)
        yield* TestClock.adjust(Duration.millis(delay))
      }
      yield* server.takeRequest
      assert.deepStrictEqual(yield* Fiber.join(fiber), { code: "NETWORK", requests: 4 })
      assert.strictEqual(yield* Queue.size(notices), 0)
    }))
})

describe("retry.deadline bounds a whole model call", () => {
  it.scoped("a stalled attempt ends at the deadline with TIMEOUT naming it, and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        requestTimeout: "1 hour",
        idleTimeout: "1 hour",
        retry: { maxRetries: 5, deadline: "5 seconds" }
      })
      yield* server.otherwise(Replies.sse([roleOnly], { end: "stall" }))
      const fiber = yield* Effect.fork(failing(stream(model, "hi")))
      const start = yield* Clock.currentTimeMillis
      yield* server.takeRequest
      yield* sleepingUntil(start + 5000)
      yield* TestClock.adjust("5 seconds")
      const { failure } = yield* Fiber.join(fiber)
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "5s")
      assert.include(failure.message, "retry.deadline")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("no retry whose wait would end past the deadline: the last failure goes to the caller at once", () =>
    Effect.gen(function*() {
      const notices = yield* captureRetryNotices
      const server = yield* FakeServer.make
      // Waits of [0.8, 1.2] s then [1.6, 2.4] s: the first ends before 2.3 s, the second always after.
      const model = yield* languageModel(server, {
        retry: { maxRetries: 5, baseDelay: "1 second", maxDelay: "30 seconds", deadline: "2300 millis" }
      })
      yield* server.otherwise(Replies.sse([roleOnly], { end: "cut" }))
      const fiber = yield* Effect.fork(failedAttempts(server, model))
      yield* server.takeRequest
      const notice = yield* Queue.take(notices)
      const delay = Number(notice.delayMs)
      const now = yield* Clock.currentTimeMillis
      yield* sleepingUntil(now + delay)
      yield* TestClock.adjust(Duration.millis(delay))
      yield* server.takeRequest
      assert.deepStrictEqual(yield* Fiber.join(fiber), { code: "NETWORK", requests: 2 })
      assert.strictEqual(yield* Queue.size(notices), 0)
    }))
})
