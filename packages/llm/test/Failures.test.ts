/**
 * Faults injected by the fake server, each classified through the domain's `failureOf` exactly as the agent will
 * classify it: status codes, connection failures and resets, malformed streams, stalls. Retries here are immediate
 * (no backoff delay); their timing is covered under `TestClock` in Retry.test.ts. Socket timeouts run live with
 * short real timeouts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { failing, languageModel, shape, stream, streamUntilFailure } from "./support/provider.js"
import * as Replies from "./support/replies.js"

const ok = Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] }))

const deepSeekError = (message: string, type: string) => ({ error: { message, type, param: null, code: type } })

describe("status failures", () => {
  it.scoped("401 is AUTH and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.otherwise(
        Replies.json(401, deepSeekError("Authentication Fails, Your api key is invalid", "authentication_error"))
      )
      const { error, failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "AUTH")
      assert.strictEqual(failure.status, 401)
      assert.include(failure.message, "Authentication Fails")
      assert.strictEqual(error._tag, "HttpResponseError")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("402 insufficient balance is QUOTA and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.otherwise(Replies.json(402, deepSeekError("Insufficient Balance", "unknown_error")))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "QUOTA")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("429 with a Retry-After beyond the cap is RATE_LIMIT with the hint, not retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxDelay: "10 seconds" } })
      yield* server.otherwise(
        Replies.json(429, deepSeekError("Rate limit reached", "rate_limit_error"), {
          "retry-after": "60",
          "x-request-id": "req-429"
        })
      )
      const { failure } = yield* failing(stream(model, "hi"))
      assert.deepStrictEqual(
        { code: failure.code, retryAfterMs: failure.retryAfterMs, requestId: failure.requestId },
        { code: "RATE_LIMIT", retryAfterMs: 60_000, requestId: "req-429" }
      )
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("500 then success: retried once, the caller sees only the success", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.reply(Replies.json(500, deepSeekError("Internal error", "server_error")), ok)
      const parts = yield* stream(model, "hi")
      assert.deepStrictEqual(shape(parts).map((part) => part.type), [
        "text-start",
        "text-delta",
        "text-end",
        "finish"
      ])
      assert.lengthOf(yield* server.requests, 2)
    }))

  it.scoped("503 forever: 1 + maxRetries attempts, then OVERLOADED", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxRetries: 3 } })
      yield* server.otherwise(Replies.json(503, deepSeekError("Server overloaded", "server_error")))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "OVERLOADED")
      assert.lengthOf(yield* server.requests, 4)
    }))

  it.scoped("400 naming the context length is CONTEXT_LENGTH; 422 is BAD_REQUEST; neither is retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.reply(
        Replies.json(
          400,
          deepSeekError("This model's maximum context length is 131072 tokens.", "invalid_request_error")
        ),
        Replies.json(422, deepSeekError("Invalid Parameters", "invalid_request_error"))
      )
      const context = yield* failing(stream(model, "hi"))
      const bad = yield* failing(stream(model, "hi"))
      assert.strictEqual(context.failure.code, "CONTEXT_LENGTH")
      assert.strictEqual(bad.failure.code, "BAD_REQUEST")
      assert.lengthOf(yield* server.requests, 2)
    }))
})

describe("transport failures", () => {
  it.scoped("a refused connection is NETWORK", () =>
    Effect.gen(function*() {
      // A port that was listening a moment ago and is closed now.
      const baseUrl = yield* Effect.scoped(Effect.map(FakeServer.make, (server) => server.baseUrl))
      const server = yield* FakeServer.make
      const model = yield* languageModel({ ...server, baseUrl }, { retry: { maxRetries: 1 } })
      const { error, failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "NETWORK")
      assert.strictEqual(error._tag, "HttpRequestError")
      assert.include(failure.message, "ECONNREFUSED")
    }))

  it.scoped("a connection cut after output began: NETWORK goes to the caller, no retry", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const frames = Fixtures.deepSeekStream({ reasoning: ["thinking"], content: ["Hel", "lo"] })
      yield* server.reply(Replies.sse(frames.slice(0, 4), { end: "cut" }), ok)
      const { error, parts } = yield* streamUntilFailure(model, "hi")
      assert.deepStrictEqual(shape(parts), [
        { type: "reasoning-start", id: "reasoning-1" },
        { type: "reasoning-delta", id: "reasoning-1", delta: "thinking" },
        { type: "reasoning-end", id: "reasoning-1" },
        { type: "text-start", id: "text-2" },
        { type: "text-delta", id: "text-2", delta: "Hel" }
      ])
      if (error === undefined) return assert.fail("the stream did not fail")
      const { failure } = yield* failing(Effect.fail(error))
      assert.strictEqual(failure.code, "NETWORK")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("a connection cut before any output is retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const frames = Fixtures.deepSeekStream({ content: ["Hello"] })
      // keep-alive and the role chunk only: nothing the caller would see.
      yield* server.reply(Replies.sse(frames.slice(0, 2), { end: "cut" }), ok)
      const parts = yield* stream(model, "hi")
      assert.strictEqual(parts.filter((part) => part.type === "text-delta").length, 1)
      assert.lengthOf(yield* server.requests, 2)
    }))

  it.scoped("a malformed chunk is MALFORMED and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.otherwise(Replies.sse(["data: {not json}\n\n"]))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "MALFORMED")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("an empty response is retried (EMPTY_RESPONSE is transient)", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({})), ok)
      const parts = yield* stream(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      assert.lengthOf(yield* server.requests, 2)
    }))

  it.scopedLive("a stream that stalls past the idle timeout is TIMEOUT", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { idleTimeout: "200 millis", retry: { maxRetries: 0 } })
      const frames = Fixtures.deepSeekStream({ content: ["Hel", "lo"] })
      yield* server.reply(Replies.sse(frames.slice(0, 3), { end: "stall" }))
      const { error, parts } = yield* streamUntilFailure(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      if (error === undefined) return assert.fail("the stream did not fail")
      const { failure } = yield* failing(Effect.fail(error))
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "idle timeout")
    }))

  it.scopedLive("a server that never answers is TIMEOUT after the request timeout, then retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { requestTimeout: "200 millis", retry: { maxRetries: 1 } })
      yield* server.reply(Replies.hang, ok)
      const parts = yield* stream(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      assert.lengthOf(yield* server.requests, 2)

      yield* server.reply(Replies.hang, Replies.hang)
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "request timeout")
    }))
})

describe("an error object inside a 200 stream is classified by its type and code, like a status", () => {
  const roleOnly = Fixtures.frame({
    id: "x",
    object: "chat.completion.chunk",
    created: 1767411028,
    model: "deepseek-v4-flash",
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]
  })
  // [the error object, its code, requests with maxRetries 2 (3 when the code is transient)]
  const cases: ReadonlyArray<readonly [Record<string, unknown>, string, number]> = [
    [{ message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" }, "AUTH", 1],
    [{ message: "Authentication Fails", type: "authentication_error" }, "AUTH", 1],
    [{ message: "No auth credentials found", code: 401 }, "AUTH", 1],
    [{ message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" }, "RATE_LIMIT", 3],
    [{ message: "You exceeded your current quota", type: "insufficient_quota" }, "QUOTA", 1],
    [{ message: "too long", type: "invalid_request_error", code: "context_length_exceeded" }, "CONTEXT_LENGTH", 1],
    [{ message: "Unknown parameter: 'foo'", type: "invalid_request_error", code: null }, "BAD_REQUEST", 1],
    [{ message: "Overloaded", type: "overloaded_error" }, "OVERLOADED", 3],
    [{ message: "The server had an error", type: "server_error" }, "SERVER", 3],
    [{ message: "upstream provider crashed", code: 502 }, "SERVER", 3],
    [{ message: "something happened" }, "SERVER", 3]
  ]

  it.scoped("data: {error} — auth, quota and bad requests are not retried; rate limits and server errors are", () =>
    Effect.gen(function*() {
      for (const [error, code, requests] of cases) {
        const server = yield* FakeServer.make
        const model = yield* languageModel(server, { retry: { maxRetries: 2 } })
        yield* server.otherwise(Replies.sse([roleOnly, Fixtures.frame({ error }), Fixtures.done]))
        const { failure } = yield* failing(stream(model, "hi"))
        const label = JSON.stringify(error)
        assert.strictEqual(failure.code, code, label)
        assert.include(failure.message, String(error["message"]), label)
        assert.lengthOf(yield* server.requests, requests, label)
      }
    }))

  it.scoped("event: error with an error object is classified the same way", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { retry: { maxRetries: 2 } })
      const body = { error: { message: "Invalid API key", type: "authentication_error", code: "invalid_api_key" } }
      yield* server.otherwise(Replies.sse([roleOnly, `event: error\ndata: ${JSON.stringify(body)}\n\n`]))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "AUTH")
      assert.include(failure.message, "Invalid API key")
      assert.lengthOf(yield* server.requests, 1)
    }))
})
