/**
 * Every failure of the provider, mapped into `@effect/ai`'s `AiError` at the edge. Status failures are
 * `HttpResponseError`s (the domain's `failureOf` classifies them by status, body and `Retry-After`); every failure
 * the status cannot describe carries an `LlmFailure` as its `cause` so `failureOf` reads the precise code.
 *
 * Secrets never enter an error: request headers are copied with secret values replaced, and provider bodies are
 * scrubbed of every secret value before they are kept.
 */
import { AiError } from "@effect/ai"
import { LlmFailure } from "@harness/domain"
import { Option } from "effect"

/** The `module` field of every error this provider raises. */
export const moduleName = "ChatCompletions"

/** The `method` field: which `LanguageModel` operation failed. */
export type Method = "generateText" | "streamText"

/** What an error may show of the request, with secrets already removed. */
export interface RequestContext {
  readonly url: string
  /** Request headers with every secret value replaced by `<redacted>`. */
  readonly headers: Readonly<Record<string, string>>
  /** Secret values to scrub from any text kept in an error (the API key, secret header values). */
  readonly secrets: ReadonlyArray<string>
  /** Header names whose values are secret (lower case). */
  readonly secretHeaderNames: ReadonlyArray<string>
}

const redactedText = "<redacted>"

/** Replaces every occurrence of every secret in `text`. */
export const scrub = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) {
    if (secret.length > 0) out = out.split(secret).join(redactedText)
  }
  return out
}

/** Copies headers, replacing the values of secret headers. */
export const redactHeaders = (
  headers: Readonly<Record<string, string>>,
  secretHeaderNames: ReadonlyArray<string>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    out[name] = secretHeaderNames.includes(name.toLowerCase()) ? redactedText : value
  }
  return out
}

const requestDetails = (context: RequestContext): typeof AiError.HttpRequestDetails.Type => ({
  method: "POST",
  url: context.url,
  urlParams: [],
  hash: Option.none(),
  headers: context.headers
})

const failure = (code: LlmFailure.LlmFailureCode, message: string): LlmFailure.LlmFailure => ({ code, message })

/** The connection failed or was reset (before or during the response). */
export const network = (context: RequestContext, method: Method, message: string): AiError.AiError =>
  new AiError.HttpRequestError({
    module: moduleName,
    method,
    reason: "Transport",
    request: requestDetails(context),
    description: scrub(message, context.secrets),
    cause: failure("NETWORK", scrub(message, context.secrets))
  })

/** No response within the request timeout, or no bytes within the idle-stream timeout. */
export const timeout = (context: RequestContext, method: Method, message: string): AiError.AiError =>
  new AiError.HttpRequestError({
    module: moduleName,
    method,
    reason: "Transport",
    request: requestDetails(context),
    description: message,
    cause: failure("TIMEOUT", message)
  })

/** The response broke the wire format: a chunk that is not valid JSON, a stream closed before `[DONE]`. */
export const malformed = (context: RequestContext, method: Method, message: string): AiError.AiError => {
  const description = scrub(message, context.secrets)
  return new AiError.MalformedOutput({
    module: moduleName,
    method,
    description,
    cause: failure("MALFORMED", description)
  })
}

/** A failure no HTTP status describes: the `LlmFailure` cause carries its code. */
const unknown = (method: Method, code: LlmFailure.LlmFailureCode, description: string): AiError.AiError =>
  new AiError.UnknownError({ module: moduleName, method, description, cause: failure(code, description) })

/** A completed response with no content, no reasoning and no tool calls. */
export const emptyResponse = (method: Method): AiError.AiError =>
  unknown(method, "EMPTY_RESPONSE", "the model completed without content, reasoning or tool calls")

/** DeepSeek's `insufficient_system_resource` finish: the server ran out of capacity mid-response. */
export const insufficientResource = (method: Method): AiError.AiError =>
  unknown(method, "OVERLOADED", "the server interrupted the response: insufficient system resource")

/** An error object sent inside a 200 stream (OpenRouter and some proxies do this). */
export const streamError = (context: RequestContext, method: Method, message: string): AiError.AiError =>
  unknown(method, "SERVER", scrub(message, context.secrets))

/** The prompt or tools cannot be expressed as a chat-completions request. */
export const malformedInput = (method: Method, message: string): AiError.AiError =>
  new AiError.MalformedInput({ module: moduleName, method, description: message })

/**
 * A non-2xx status. `body` is the response text; it is scrubbed and truncated before it is kept.
 */
export const status = (
  context: RequestContext,
  method: Method,
  response: { readonly status: number; readonly headers: Readonly<Record<string, string>> },
  body: string
): AiError.AiError => {
  const scrubbed = scrub(body.length > 8_000 ? `${body.slice(0, 8_000)}…` : body, context.secrets)
  const message = LlmFailure.providerMessage(scrubbed)
  return new AiError.HttpResponseError({
    module: moduleName,
    method,
    reason: "StatusCode",
    request: requestDetails(context),
    response: {
      status: response.status,
      headers: redactHeaders(response.headers, ["set-cookie", ...context.secretHeaderNames])
    },
    ...(scrubbed === "" ? {} : { body: scrubbed }),
    ...(message === undefined ? {} : { description: message })
  })
}
