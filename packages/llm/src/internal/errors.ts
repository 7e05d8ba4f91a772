/**
 * Every failure of the provider, mapped into `@effect/ai`'s `AiError` at the edge. Status failures are
 * `HttpResponseError`s (the domain's `failureOf` classifies them by status, body and `Retry-After`); every failure
 * the status cannot describe carries an `LlmFailure` as its `cause` so `failureOf` reads the precise code.
 *
 * Secrets never enter an error: every text, header name and header value is scrubbed through the context's
 * `Scrubber` (scrubbed first, then truncated), request headers are copied with secret values replaced, and
 * {@link scrubError} runs over every error once more where it leaves the provider.
 */
import { AiError } from "@effect/ai"
import { LlmFailure } from "@harness/domain"
import { Option } from "effect"
import type { Scrubber } from "./scrub.js"
import { redactedText } from "./scrub.js"

/** The `module` field of every error this provider raises. */
const moduleName = "ChatCompletions"

/** The `method` field: which `LanguageModel` operation failed. */
export type Method = "generateText" | "streamText"

/** What an error may show of the request, with secrets already removed. */
export interface RequestContext {
  readonly url: string
  /** Request headers with every secret value replaced by `<redacted>`. */
  readonly headers: Readonly<Record<string, string>>
  /** Scrubs the secret values (the API key, secret header values) from any text kept in an error. */
  readonly scrub: Scrubber
  /** Header names whose values are secret (lower case). */
  readonly secretHeaderNames: ReadonlyArray<string>
}

/** The longest provider text an error keeps (bodies, chunks, messages), after scrubbing. */
const maxText = 2_000

/** Copies headers, replacing the values of secret headers and scrubbing every other name and value. */
export const redactHeaders = (
  headers: Readonly<Record<string, string>>,
  secretHeaderNames: ReadonlyArray<string>,
  scrub: Scrubber
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    out[scrub.clip(name, 200)] = secretHeaderNames.includes(name.toLowerCase())
      ? redactedText
      : scrub.clip(value, 500)
  }
  return out
}

const requestDetails = (context: RequestContext): typeof AiError.HttpRequestDetails.Type => ({
  method: "POST",
  url: context.scrub.text(context.url),
  urlParams: [],
  hash: Option.none(),
  headers: context.headers
})

const failure = (code: LlmFailure.LlmFailureCode, message: string): LlmFailure.LlmFailure => ({ code, message })

/** A transport failure classified as `code` (`HttpRequestError` with reason `Transport`). */
const transport = (
  code: "NETWORK" | "TIMEOUT"
) =>
(context: RequestContext, method: Method, message: string): AiError.AiError => {
  const description = context.scrub.clip(message, maxText)
  return new AiError.HttpRequestError({
    module: moduleName,
    method,
    reason: "Transport",
    request: requestDetails(context),
    description,
    cause: failure(code, description)
  })
}

/** The connection failed or was reset (before or during the response). */
export const network = transport("NETWORK")

/** No response within the request timeout, no event within the idle timeout, or past the deadline. */
export const timeout = transport("TIMEOUT")

/**
 * The response broke the wire format: a chunk that is not valid JSON, an event over the size limit, a body that is
 * not an event stream, a stream closed before `[DONE]`.
 */
export const malformed = (context: RequestContext, method: Method, message: string): AiError.AiError => {
  const description = context.scrub.clip(message, maxText)
  return new AiError.MalformedOutput({
    module: moduleName,
    method,
    description,
    cause: failure("MALFORMED", description)
  })
}

/** A failure no HTTP status describes: the `LlmFailure` cause carries its code. */
const unknown = (
  context: RequestContext,
  method: Method,
  code: LlmFailure.LlmFailureCode,
  message: string
): AiError.AiError => {
  const description = context.scrub.clip(message, maxText)
  return new AiError.UnknownError({ module: moduleName, method, description, cause: failure(code, description) })
}

/** A completed response with no content, no reasoning and no tool calls. */
export const emptyResponse = (context: RequestContext, method: Method): AiError.AiError =>
  unknown(context, method, "EMPTY_RESPONSE", "the model completed without content, reasoning or tool calls")

/** The reply passed `maxReplyBytes`: the message names the bound and the option, nothing of the host. */
export const replyTooLarge = (context: RequestContext, method: Method, limit: number): AiError.AiError =>
  unknown(
    context,
    method,
    "REPLY_TOO_LARGE",
    `the reply exceeded ${limit} bytes of text, reasoning and tool-call arguments (maxReplyBytes); raise maxReplyBytes (LLM_MAX_REPLY_BYTES) to allow longer replies`
  )

/** DeepSeek's `insufficient_system_resource` finish: the server ran out of capacity mid-response. */
export const insufficientResource = (context: RequestContext, method: Method): AiError.AiError =>
  unknown(context, method, "OVERLOADED", "the server interrupted the response: insufficient system resource")

/** An error object as a server sends it inside a 200 stream: its message, `type` and `code` as given. */
export interface ProviderError {
  readonly message: string
  readonly type?: string | undefined
  readonly code?: unknown
}

// Error `type` / `code` names, as OpenAI, Anthropic-style proxies, OpenRouter, vLLM and DeepSeek spell them; first
// match wins.
const codeByName: ReadonlyArray<readonly [RegExp, LlmFailure.LlmFailureCode]> = [
  [/api_key|authentication|unauthori[sz]ed|permission|forbidden|access_denied|invalid_token/, "AUTH"],
  [/quota|insufficient_(balance|funds|credits?)|billing|payment/, "QUOTA"],
  [/rate_limit|too_many_requests/, "RATE_LIMIT"],
  [/context_length|context_window|max_tokens_exceeded|tokens_exceeded/, "CONTEXT_LENGTH"],
  [/overloaded|unavailable|capacity|insufficient_system_resource/, "OVERLOADED"],
  [/timeout|timed_out/, "TIMEOUT"],
  [/invalid|bad_request|not_found|unsupported|validation/, "BAD_REQUEST"],
  [/server|internal|api_error|upstream/, "SERVER"]
]

// A numeric `code` (OpenRouter sends the HTTP status it would have answered): the status table of `failureOf`.
const codeByStatus = (status: number): LlmFailure.LlmFailureCode => {
  if (status === 401 || status === 403) return "AUTH"
  if (status === 402) return "QUOTA"
  if (status === 408) return "TIMEOUT"
  if (status === 429) return "RATE_LIMIT"
  if (status === 503 || status === 529) return "OVERLOADED"
  if (status === 400 || status === 413 || status === 422) return "BAD_REQUEST"
  return status >= 500 ? "SERVER" : "UNKNOWN"
}

const contextLengthPattern = /context[ _-]?length|context[ _-]?window|maximum context|too many tokens/i
const quotaPattern = /insufficient[ _-]?(quota|balance)|quota exceeded|exceeded your current quota|billing/i

const codeOfName = (name: unknown): LlmFailure.LlmFailureCode | undefined => {
  if (typeof name === "number" && Number.isInteger(name) && name >= 400 && name < 600) return codeByStatus(name)
  if (typeof name !== "string") return undefined
  const trimmed = name.trim().toLowerCase()
  if (/^[45]\d\d$/.test(trimmed)) return codeByStatus(Number(trimmed))
  return codeByName.find(([pattern]) => pattern.test(trimmed))?.[1]
}

/**
 * The code of an error object sent inside a 200 stream. Contract: its `code` decides when recognised, else its
 * `type` (OpenAI sends a bad key as `type: invalid_request_error, code: invalid_api_key`): names of authentication,
 * quota, rate limit, context length, overload, timeout, invalid request and server errors, or a numeric HTTP status
 * by the status table; as on the status path, a rate limit whose message says the quota is spent is `QUOTA` and a
 * bad request whose message names the context length is `CONTEXT_LENGTH`; anything unrecognised is `SERVER`.
 */
const streamErrorCode = (error: ProviderError): LlmFailure.LlmFailureCode => {
  const code = codeOfName(error.code) ?? codeOfName(error.type) ?? "SERVER"
  if (code === "RATE_LIMIT" && quotaPattern.test(error.message)) return "QUOTA"
  if (code === "BAD_REQUEST" && contextLengthPattern.test(error.message)) return "CONTEXT_LENGTH"
  return code
}

/** An error object sent inside a 200 stream (OpenRouter and some proxies do this), classified by its type and code. */
export const streamError = (context: RequestContext, method: Method, error: ProviderError): AiError.AiError =>
  unknown(context, method, streamErrorCode(error), error.message)

/**
 * The model refused (`refusal` instead of content). `CONTENT_FILTER` is not transient, so it is never retried; the
 * refusal text is kept in the message (up to {@link maxText} characters).
 */
export const refusal = (context: RequestContext, method: Method, text: string): AiError.AiError =>
  unknown(context, method, "CONTENT_FILTER", `the model refused: ${text}`)

/**
 * Something failed that is not a transport, status or wire failure we know (a defect below the provider). Only the
 * failure's own one-line message is kept — never a stack trace.
 */
export const unexpected = (context: RequestContext, method: Method, message: string): AiError.AiError =>
  unknown(context, method, "UNKNOWN", `the request failed unexpectedly: ${message}`)

/** The prompt or tools cannot be expressed as a chat-completions request. */
export const malformedInput = (context: RequestContext, method: Method, message: string): AiError.AiError =>
  new AiError.MalformedInput({ module: moduleName, method, description: context.scrub.clip(message, maxText) })

const isJson = (contentType: string): boolean => /\bjson\b/i.test(contentType)

/** The response's content type as sent, or a phrase saying there was none. */
export const contentTypeOf = (headers: Readonly<Record<string, string>>): string | undefined =>
  Object.entries(headers).find(([name]) => name.toLowerCase() === "content-type")?.[1]

/**
 * A JSON body decoded, scrubbed and encoded again, so that no escape (`\u0073k-…`) can hide a secret from the
 * scrubber only to be decoded later by whoever reads the body; any other text as it is.
 */
const normalizedJson = (body: string, scrub: Scrubber): string => {
  try {
    return JSON.stringify(scrub.deep(JSON.parse(body)))
  } catch {
    return body
  }
}

/**
 * A non-2xx status. `body` is the response text.
 *
 * Contract: a JSON or plain-text body is kept (scrubbed, then cut to {@link maxText}) so `failureOf` can read the
 * provider's message; any other body (an HTML error page) and any redirect are described instead — status, where
 * a redirect points, the content type and the first bytes — because redirects are never followed (the
 * `Authorization` header would go with them).
 */
export const status = (
  context: RequestContext,
  method: Method,
  response: {
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
  },
  body: string
): AiError.AiError => {
  const headers = redactHeaders(response.headers, ["set-cookie", ...context.secretHeaderNames], context.scrub)
  const contentType = contentTypeOf(response.headers)
  const redirect = response.status >= 300 && response.status < 400
  const readable = !redirect && (contentType === undefined || isJson(contentType) || /^text\/plain/i.test(contentType))
  const statusLine = `HTTP ${response.status}`
  const kept = readable ? context.scrub.clip(normalizedJson(body, context.scrub), maxText) : ""
  const described = (() => {
    if (readable) return LlmFailure.providerMessage(kept)
    const location = Object.entries(response.headers).find(([name]) => name.toLowerCase() === "location")?.[1]
    const what = redirect
      ? `the server redirected (${statusLine})${
        location === undefined ? "" : ` to ${context.scrub.clip(location, 500)}`
      }; redirects are not followed (the Authorization header would go with them): set baseUrl to the final URL`
      : `the server answered ${statusLine}`
    return `${what}; content type ${contentType ?? "(none)"}${
      body.trim() === "" ? ", empty body" : `, body starts: ${context.scrub.clip(body.trim(), 200)}`
    }`
  })()
  return new AiError.HttpResponseError({
    module: moduleName,
    method,
    reason: "StatusCode",
    request: requestDetails(context),
    response: { status: response.status, headers },
    ...(kept === "" ? {} : { body: kept }),
    description: described ?? `the server answered ${statusLine} with an empty body`
  })
}

/**
 * The error with every string in it scrubbed once more — the last guard where errors leave the provider.
 * Contract: the tag, fields and classification are unchanged.
 */
export const scrubError = (error: AiError.AiError, scrub: Scrubber): AiError.AiError => {
  switch (error._tag) {
    case "HttpRequestError":
      return new AiError.HttpRequestError({
        module: error.module,
        method: error.method,
        reason: error.reason,
        request: { ...scrub.deep({ ...error.request, hash: undefined }), hash: error.request.hash },
        description: error.description === undefined ? undefined : scrub.text(error.description),
        cause: scrub.deep(error.cause)
      })
    case "HttpResponseError":
      return new AiError.HttpResponseError({
        module: error.module,
        method: error.method,
        reason: error.reason,
        request: { ...scrub.deep({ ...error.request, hash: undefined }), hash: error.request.hash },
        response: scrub.deep(error.response),
        body: error.body === undefined ? undefined : scrub.text(error.body),
        description: error.description === undefined ? undefined : scrub.text(error.description)
      })
    case "MalformedInput":
      return new AiError.MalformedInput({
        module: error.module,
        method: error.method,
        description: error.description === undefined ? undefined : scrub.text(error.description),
        cause: scrub.deep(error.cause)
      })
    case "MalformedOutput":
      return new AiError.MalformedOutput({
        module: error.module,
        method: error.method,
        description: error.description === undefined ? undefined : scrub.text(error.description),
        cause: scrub.deep(error.cause)
      })
    case "UnknownError":
      return new AiError.UnknownError({
        module: error.module,
        method: error.method,
        description: error.description === undefined ? undefined : scrub.text(error.description),
        cause: scrub.deep(error.cause)
      })
  }
}
