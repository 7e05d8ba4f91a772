/**
 * Serializable facts about a failed model request, with a closed set of codes that the agent, retry policies and
 * goals route on. `@effect/ai`'s `AiError` is a closed union without such codes; {@link failureOf} classifies
 * any of them by one table.
 *
 * @since 0.0.0
 */
import type { AiError } from "@effect/ai"
import { Option, Schema } from "effect"
import { NonNegativeInt } from "./Json.js"

/**
 * The closed set of failure codes. `REPLY_TOO_LARGE`: the reply passed the provider's bound on its total size
 * (never retried: the same request would produce the same reply).
 *
 * @since 0.0.0
 * @category schemas
 */
export const LlmFailureCode = Schema.Literal(
  "AUTH",
  "RATE_LIMIT",
  "QUOTA",
  "OVERLOADED",
  "SERVER",
  "BAD_REQUEST",
  "CONTEXT_LENGTH",
  "NETWORK",
  "TIMEOUT",
  "MALFORMED",
  "EMPTY_RESPONSE",
  "CONTENT_FILTER",
  "REPLY_TOO_LARGE",
  "UNKNOWN"
)
/**
 * @since 0.0.0
 * @category models
 */
export type LlmFailureCode = typeof LlmFailureCode.Type

/**
 * A failed model request. `retryAfterMs` is the provider's own hint, when it gave one.
 *
 * @since 0.0.0
 * @category schemas
 */
export const LlmFailure = Schema.Struct({
  code: LlmFailureCode,
  message: Schema.String,
  status: Schema.optionalWith(NonNegativeInt, { exact: true }),
  retryAfterMs: Schema.optionalWith(NonNegativeInt, { exact: true }),
  requestId: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "LlmFailure" })
/**
 * @since 0.0.0
 * @category models
 */
export type LlmFailure = typeof LlmFailure.Type

/**
 * Codes worth retrying after a delay: the request may well succeed as it is.
 *
 * @since 0.0.0
 * @category constants
 */
export const transientCodes: ReadonlySet<LlmFailureCode> = new Set<LlmFailureCode>([
  "RATE_LIMIT",
  "OVERLOADED",
  "SERVER",
  "NETWORK",
  "TIMEOUT",
  "EMPTY_RESPONSE"
])

const decodeFailure = Schema.decodeUnknownOption(LlmFailure)

const header = (headers: Readonly<Record<string, string>>, name: string): string | undefined => {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key]
  return undefined
}

// A hint too large for a safe integer would make the failure fail its own schema (`NonNegativeInt`): drop it.
const safeDelay = (ms: number): number | undefined => Number.isSafeInteger(ms) ? ms : undefined

/**
 * Reads `retry-after-ms`, or `retry-after` as seconds or as an HTTP date (relative to `now`, epoch ms).
 *
 * @since 0.0.0
 * @category utils
 */
export const retryAfterMs = (headers: Readonly<Record<string, string>>, now: number): number | undefined => {
  const ms = header(headers, "retry-after-ms")
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return safeDelay(Math.ceil(Number(ms)))
  const value = header(headers, "retry-after")
  if (value === undefined) return undefined
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return safeDelay(Math.ceil(Number(value) * 1000))
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : safeDelay(Math.max(0, Math.ceil(date - now)))
}

const contextLengthPattern =
  /context[ _-]?length|context[ _-]?window|maximum context|too many tokens|prompt is too long|input is too long|reduce the length/i
const quotaPattern = /insufficient[ _-]?(quota|balance)|quota exceeded|exceeded your current quota|billing/i

/**
 * Extracts the provider's own message from an error body (`{ error: { message } }`, `{ message }`, or text).
 *
 * @since 0.0.0
 * @category utils
 */
export const providerMessage = (body: string | undefined): string | undefined => {
  if (body === undefined || body.trim() === "") return undefined
  try {
    const parsed: unknown = JSON.parse(body)
    if (typeof parsed === "object" && parsed !== null) {
      const error = "error" in parsed ? parsed.error : parsed
      if (typeof error === "string") return error
      if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
        return error.message
      }
    }
  } catch {
    // not JSON: the body itself is the message
  }
  return body.length > 500 ? `${body.slice(0, 500)}…` : body
}

const statusCode = (status: number, body: string): LlmFailureCode => {
  switch (status) {
    case 401:
    case 403:
      return "AUTH"
    case 402:
      return "QUOTA"
    case 408:
      return "TIMEOUT"
    case 429:
      return quotaPattern.test(body) ? "QUOTA" : "RATE_LIMIT"
    case 503:
    case 529:
      return "OVERLOADED"
    case 400:
    case 413:
    case 422:
      return contextLengthPattern.test(body) ? "CONTEXT_LENGTH" : "BAD_REQUEST"
  }
  return status >= 500 ? "SERVER" : "UNKNOWN"
}

const withoutUndefined = (failure: {
  code: LlmFailureCode
  message: string
  status?: number | undefined
  retryAfterMs?: number | undefined
  requestId?: string | undefined
}): LlmFailure => {
  const out: { -readonly [K in keyof LlmFailure]: LlmFailure[K] } = { code: failure.code, message: failure.message }
  if (failure.status !== undefined) out.status = failure.status
  if (failure.retryAfterMs !== undefined) out.retryAfterMs = failure.retryAfterMs
  if (failure.requestId !== undefined) out.requestId = failure.requestId
  return out
}

/**
 * Classifies any `AiError`, purely. `now` (epoch ms) resolves a `Retry-After` given as an HTTP date.
 *
 * Contract, one table, first match wins:
 * - an error whose `cause` decodes as an `LlmFailure` → that failure (how providers and the testkit say
 *   `TIMEOUT`, `EMPTY_RESPONSE`, `CONTEXT_LENGTH` precisely);
 * - `HttpRequestError` with reason `Transport` → `NETWORK`;
 * - `HttpResponseError` with reason `StatusCode` → by status and body: 401/403 `AUTH`, 402 `QUOTA`, 408 `TIMEOUT`,
 *   429 `RATE_LIMIT` (`QUOTA` when the body says the quota is spent), 503/529 `OVERLOADED`, other 5xx `SERVER`,
 *   400/413/422 `CONTEXT_LENGTH` when the body says so and `BAD_REQUEST` otherwise, with `retryAfterMs` from
 *   `Retry-After` and `requestId` from `x-request-id`;
 * - `HttpResponseError` with reason `EmptyBody` → `EMPTY_RESPONSE`, with reason `Decode` → `MALFORMED`;
 * - `MalformedOutput` → `MALFORMED`;
 * - anything else → `UNKNOWN`.
 *
 * @since 0.0.0
 * @category utils
 */
export const failureOf = (error: AiError.AiError, now: number): LlmFailure => {
  if ("cause" in error && error.cause !== undefined) {
    const carried = decodeFailure(error.cause)
    if (Option.isSome(carried)) return carried.value
  }
  switch (error._tag) {
    case "HttpRequestError":
      return withoutUndefined({
        code: error.reason === "Transport" ? "NETWORK" : "UNKNOWN",
        message: error.description ?? `${error.reason} error while sending the request`
      })
    case "HttpResponseError": {
      const status = error.response.status
      const headers = error.response.headers
      const requestId = header(headers, "x-request-id") ?? header(headers, "request-id")
      const body = error.body ?? ""
      const code: LlmFailureCode = error.reason === "StatusCode"
        ? statusCode(status, body)
        : error.reason === "EmptyBody"
        ? "EMPTY_RESPONSE"
        : "MALFORMED"
      const detail = providerMessage(error.body) ?? error.description ?? `${error.reason}`
      return withoutUndefined({
        code,
        message: `HTTP ${status}: ${detail}`,
        status,
        retryAfterMs: retryAfterMs(headers, now),
        requestId
      })
    }
    case "MalformedOutput":
      return withoutUndefined({ code: "MALFORMED", message: error.description ?? "the model's output was malformed" })
    case "MalformedInput":
      return withoutUndefined({ code: "UNKNOWN", message: error.description ?? "the request could not be encoded" })
    case "UnknownError":
      return withoutUndefined({ code: "UNKNOWN", message: error.description ?? error.message })
  }
}
