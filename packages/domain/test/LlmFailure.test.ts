import { AiError } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Option, Schema } from "effect"
import * as LlmFailure from "../src/LlmFailure.js"
import { bareFailure, decodeError, fullFailure, roundTrip } from "./fixtures.js"

const request = {
  method: "POST",
  url: "https://api.example.test/v1/chat/completions",
  urlParams: [],
  hash: Option.none(),
  headers: {}
} as const

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0)

const statusError = (status: number, options: {
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly description?: string
} = {}) =>
  new AiError.HttpResponseError({
    module: "test",
    method: "streamText",
    reason: "StatusCode",
    request,
    response: { status, headers: options.headers ?? {} },
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.description === undefined ? {} : { description: options.description })
  })

const responseError = (reason: "Decode" | "EmptyBody", status = 200) =>
  new AiError.HttpResponseError({ module: "test", method: "x", reason, request, response: { status, headers: {} } })

const requestError = (reason: "Transport" | "Encode" | "InvalidUrl", cause?: unknown) =>
  new AiError.HttpRequestError({
    module: "test",
    method: "x",
    reason,
    request,
    description: "socket hang up",
    ...(cause === undefined ? {} : { cause })
  })

const openAiError = (message: string, code: string) => JSON.stringify({ error: { message, type: code, code } })

/** [status, body, expected code] */
const statusTable: ReadonlyArray<readonly [number, string | undefined, LlmFailure.LlmFailureCode]> = [
  [401, openAiError("Incorrect API key provided", "invalid_api_key"), "AUTH"],
  [403, "forbidden", "AUTH"],
  [402, openAiError("Insufficient Balance", "invalid_request_error"), "QUOTA"],
  [408, undefined, "TIMEOUT"],
  [429, openAiError("Rate limit reached for requests", "rate_limit_exceeded"), "RATE_LIMIT"],
  [429, openAiError("You exceeded your current quota, please check your plan", "insufficient_quota"), "QUOTA"],
  [503, "Service Unavailable", "OVERLOADED"],
  [529, JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }), "OVERLOADED"],
  [500, "Internal Server Error", "SERVER"],
  [502, "<html>Bad Gateway</html>", "SERVER"],
  [504, undefined, "SERVER"],
  [400, openAiError("Invalid value for 'temperature'", "invalid_request_error"), "BAD_REQUEST"],
  [413, "Payload Too Large", "BAD_REQUEST"],
  [422, JSON.stringify({ message: "tools[0].name is invalid" }), "BAD_REQUEST"],
  [
    400,
    openAiError("This model's maximum context length is 65536 tokens. However, you requested 70000", "invalid_request"),
    "CONTEXT_LENGTH"
  ],
  [400, openAiError("too long", "context_length_exceeded"), "CONTEXT_LENGTH"],
  [
    413,
    JSON.stringify({ error: { type: "request_too_large", message: "prompt is too long: 210000 tokens" } }),
    "CONTEXT_LENGTH"
  ],
  [422, "input exceeds the context window", "CONTEXT_LENGTH"],
  [404, openAiError("The model `gpt-9` does not exist", "model_not_found"), "UNKNOWN"],
  [418, undefined, "UNKNOWN"]
]

describe("LlmFailure schema", () => {
  it.effect("round trips a failure with every field, and a bare one", () =>
    Effect.gen(function*() {
      yield* roundTrip(LlmFailure.LlmFailure, fullFailure)
      yield* roundTrip(LlmFailure.LlmFailure, bareFailure)
    }))

  it.effect("round trips every code", () =>
    Effect.gen(function*() {
      for (const code of LlmFailure.LlmFailureCode.literals) {
        yield* roundTrip(LlmFailure.LlmFailure, { code, message: code })
      }
    }))

  it.effect("refuses an unknown code and bad numbers, naming the key", () =>
    Effect.gen(function*() {
      const code = yield* decodeError(LlmFailure.LlmFailure, { code: "TEAPOT", message: "x" })
      assert.include(code, "[\"code\"]")
      assert.include(code, "actual \"TEAPOT\"")
      const retry = yield* decodeError(LlmFailure.LlmFailure, { code: "RATE_LIMIT", message: "x", retryAfterMs: -5 })
      assert.include(retry, "[\"retryAfterMs\"]")
      assert.include(retry, "expected a non-negative integer, got -5")
      const status = yield* decodeError(LlmFailure.LlmFailure, { code: "SERVER", message: "x", status: "500" })
      assert.include(status, "[\"status\"]")
    }))

  it("the transient codes are the ones worth retrying as is", () => {
    assert.deepStrictEqual(
      [...LlmFailure.transientCodes].sort(),
      ["EMPTY_RESPONSE", "NETWORK", "OVERLOADED", "RATE_LIMIT", "SERVER", "TIMEOUT"]
    )
  })
})

describe("LlmFailure.failureOf on HttpResponseError StatusCode", () => {
  for (const [status, body, code] of statusTable) {
    it(`${status} ${body === undefined ? "(no body)" : body.slice(0, 48)} → ${code}`, () => {
      const failure = LlmFailure.failureOf(statusError(status, body === undefined ? {} : { body }), NOW)
      assert.strictEqual(failure.code, code)
      assert.strictEqual(failure.status, status)
      assert.include(failure.message, `HTTP ${status}`)
      assert.isTrue(Schema.is(LlmFailure.LlmFailure)(failure))
    })
  }

  it("the provider's JSON error message becomes the message", () => {
    const failure = LlmFailure.failureOf(
      statusError(400, { body: openAiError("Invalid value for 'temperature'", "invalid_request_error") }),
      NOW
    )
    assert.strictEqual(failure.message, "HTTP 400: Invalid value for 'temperature'")
  })

  it("a top-level { message } body, a { error: string } body and a plain-text body are used too", () => {
    const top = LlmFailure.failureOf(statusError(422, { body: JSON.stringify({ message: "bad tool" }) }), NOW)
    assert.strictEqual(top.message, "HTTP 422: bad tool")
    const str = LlmFailure.failureOf(statusError(500, { body: JSON.stringify({ error: "upstream died" }) }), NOW)
    assert.strictEqual(str.message, "HTTP 500: upstream died")
    const plain = LlmFailure.failureOf(statusError(502, { body: "Bad Gateway" }), NOW)
    assert.strictEqual(plain.message, "HTTP 502: Bad Gateway")
  })

  it("without a body, the description names the problem", () => {
    const failure = LlmFailure.failureOf(statusError(503, { description: "upstream unavailable" }), NOW)
    assert.strictEqual(failure.message, "HTTP 503: upstream unavailable")
  })

  it("a long plain-text body is cut at 500 characters", () => {
    const failure = LlmFailure.failureOf(statusError(500, { body: "x".repeat(2000) }), NOW)
    assert.strictEqual(failure.message, `HTTP 500: ${"x".repeat(500)}…`)
  })

  it("x-request-id (or request-id) becomes requestId, whatever the header's case", () => {
    assert.strictEqual(
      LlmFailure.failureOf(statusError(500, { headers: { "x-request-id": "req_abc" } }), NOW).requestId,
      "req_abc"
    )
    assert.strictEqual(
      LlmFailure.failureOf(statusError(500, { headers: { "X-Request-Id": "req_up" } }), NOW).requestId,
      "req_up"
    )
    assert.strictEqual(
      LlmFailure.failureOf(statusError(529, { headers: { "request-id": "req_anthropic" } }), NOW).requestId,
      "req_anthropic"
    )
    assert.isFalse("requestId" in LlmFailure.failureOf(statusError(500), NOW))
  })
})

describe("LlmFailure Retry-After", () => {
  const retryAfter = (headers: Record<string, string>, now = NOW) =>
    LlmFailure.failureOf(statusError(429, { headers }), now).retryAfterMs

  it("in seconds", () => {
    assert.strictEqual(retryAfter({ "retry-after": "2" }), 2000)
    assert.strictEqual(retryAfter({ "Retry-After": "0" }), 0)
    assert.strictEqual(retryAfter({ "retry-after": "1.5" }), 1500)
    assert.strictEqual(retryAfter({ "retry-after": " 30 " }), 30_000)
  })

  it("as an HTTP date, relative to now", () => {
    const now = Date.UTC(2015, 9, 21, 7, 27, 58)
    assert.strictEqual(retryAfter({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }, now), 2000)
    assert.strictEqual(retryAfter({ "retry-after": "Wed, 21 Oct 2015 08:27:58 GMT" }, now), 3_600_000)
    assert.strictEqual(retryAfter({ "retry-after": "Wed, 21 Oct 2015 07:00:00 GMT" }, now), 0, "a past date is 0")
    assert.strictEqual(
      retryAfter({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }, now + 0.5),
      2000,
      "rounded up to whole ms"
    )
  })

  it("retry-after-ms, which wins over retry-after", () => {
    assert.strictEqual(retryAfter({ "retry-after-ms": "250" }), 250)
    assert.strictEqual(retryAfter({ "retry-after-ms": "250.2" }), 251)
    assert.strictEqual(retryAfter({ "retry-after-ms": "250", "retry-after": "9" }), 250)
    assert.strictEqual(retryAfter({ "retry-after-ms": "soon", "retry-after": "9" }), 9000)
  })

  it("absent or unreadable gives no hint (no `retryAfterMs` key)", () => {
    assert.isFalse("retryAfterMs" in LlmFailure.failureOf(statusError(429), NOW))
    assert.isUndefined(retryAfter({ "retry-after": "not a date" }))
  })

  it("a hint too large for a safe integer is dropped, so the failure stays valid (regression)", () => {
    const failure = LlmFailure.failureOf(statusError(429, { headers: { "retry-after": "99999999999999999999" } }), NOW)
    assert.isFalse("retryAfterMs" in failure)
    assert.isTrue(Schema.is(LlmFailure.LlmFailure)(failure))
  })

  it("retryAfterMs reads the same headers directly", () => {
    assert.strictEqual(LlmFailure.retryAfterMs({ "retry-after": "3" }, NOW), 3000)
    assert.isUndefined(LlmFailure.retryAfterMs({}, NOW))
  })
})

describe("LlmFailure.failureOf on the other AiErrors", () => {
  it("HttpRequestError Transport → NETWORK", () => {
    assert.deepStrictEqual(LlmFailure.failureOf(requestError("Transport"), NOW), {
      code: "NETWORK",
      message: "socket hang up"
    })
    const bare = new AiError.HttpRequestError({ module: "m", method: "x", reason: "Transport", request })
    assert.strictEqual(LlmFailure.failureOf(bare, NOW).code, "NETWORK")
  })

  it("HttpRequestError Encode or InvalidUrl → UNKNOWN", () => {
    assert.strictEqual(LlmFailure.failureOf(requestError("Encode"), NOW).code, "UNKNOWN")
    assert.strictEqual(LlmFailure.failureOf(requestError("InvalidUrl"), NOW).code, "UNKNOWN")
  })

  it("HttpResponseError EmptyBody → EMPTY_RESPONSE", () => {
    const failure = LlmFailure.failureOf(responseError("EmptyBody"), NOW)
    assert.strictEqual(failure.code, "EMPTY_RESPONSE")
    assert.strictEqual(failure.status, 200)
  })

  it("HttpResponseError Decode → MALFORMED", () => {
    assert.strictEqual(LlmFailure.failureOf(responseError("Decode"), NOW).code, "MALFORMED")
  })

  it("MalformedOutput → MALFORMED", () => {
    const failure = LlmFailure.failureOf(
      new AiError.MalformedOutput({ module: "m", method: "x", description: "tool call without a name" }),
      NOW
    )
    assert.deepStrictEqual(failure, { code: "MALFORMED", message: "tool call without a name" })
    assert.strictEqual(
      LlmFailure.failureOf(new AiError.MalformedOutput({ module: "m", method: "x" }), NOW).code,
      "MALFORMED"
    )
  })

  it("MalformedInput → UNKNOWN", () => {
    assert.strictEqual(
      LlmFailure.failureOf(new AiError.MalformedInput({ module: "m", method: "x" }), NOW).code,
      "UNKNOWN"
    )
  })

  it("UnknownError → UNKNOWN, with its description or its message", () => {
    assert.deepStrictEqual(
      LlmFailure.failureOf(new AiError.UnknownError({ module: "m", method: "x", description: "weird" }), NOW),
      { code: "UNKNOWN", message: "weird" }
    )
    assert.deepStrictEqual(LlmFailure.failureOf(new AiError.UnknownError({ module: "m", method: "x" }), NOW), {
      code: "UNKNOWN",
      message: "m.x: An error occurred"
    })
  })
})

describe("LlmFailure.failureOf: a cause that decodes as an LlmFailure wins", () => {
  it("UnknownError with a TIMEOUT cause → TIMEOUT", () => {
    const cause = { code: "TIMEOUT", message: "no first token within 60 s" }
    assert.deepStrictEqual(
      LlmFailure.failureOf(new AiError.UnknownError({ module: "m", method: "x", cause }), NOW),
      cause
    )
  })

  it("it wins over the table: Transport with an EMPTY_RESPONSE cause, MalformedOutput with CONTEXT_LENGTH", () => {
    assert.strictEqual(
      LlmFailure.failureOf(requestError("Transport", { code: "EMPTY_RESPONSE", message: "stream ended" }), NOW).code,
      "EMPTY_RESPONSE"
    )
    const contextLength: LlmFailure.LlmFailure = { code: "CONTEXT_LENGTH", message: "too long", status: 400 }
    assert.deepStrictEqual(
      LlmFailure.failureOf(new AiError.MalformedOutput({ module: "m", method: "x", cause: contextLength }), NOW),
      contextLength
    )
  })

  it("an Error object carrying a known code and message counts as a failure", () => {
    const cause = Object.assign(new Error("deadline exceeded"), { code: "TIMEOUT" })
    assert.deepStrictEqual(LlmFailure.failureOf(new AiError.UnknownError({ module: "m", method: "x", cause }), NOW), {
      code: "TIMEOUT",
      message: "deadline exceeded"
    })
  })

  it("a cause that is not an LlmFailure falls through to the table", () => {
    for (const cause of [new Error("x"), { code: "ECONNRESET", message: "reset" }, { code: "TIMEOUT" }, "TIMEOUT"]) {
      assert.strictEqual(LlmFailure.failureOf(requestError("Transport", cause), NOW).code, "NETWORK")
    }
  })
})

describe("LlmFailure.failureOf is total", () => {
  const headerValue = fc.oneof(
    fc.constantFrom("0", "2", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999999999999", "", "soon"),
    fc.string()
  )
  const headers = fc.dictionary(
    fc.constantFrom("retry-after", "Retry-After", "retry-after-ms", "x-request-id", "content-type"),
    headerValue
  )

  it.prop(
    "every status, header and body gives a failure that satisfies its own schema and survives JSON",
    [fc.integer({ min: 100, max: 599 }), headers, fc.option(fc.string(), { nil: undefined }), fc.nat()],
    ([status, hs, body, now]) => {
      const failure = LlmFailure.failureOf(
        statusError(status, body === undefined ? { headers: hs } : { headers: hs, body }),
        now
      )
      assert.isTrue(Schema.is(LlmFailure.LlmFailure)(failure), JSON.stringify(failure))
      assert.deepStrictEqual(
        Schema.decodeUnknownSync(LlmFailure.LlmFailure)(JSON.parse(JSON.stringify(failure))),
        failure
      )
    }
  )
})
