/**
 * The provider's two operations over `HttpClient`: a streamed request decoded with `Sse`, and a non-streamed one.
 * Both build the body from the prompt, send it with the API key in the `Authorization` header only, map every
 * failure at the edge, and retry (per the settings' policy) while nothing has reached the caller.
 */
import type { AiError, LanguageModel, Response } from "@effect/ai"
import * as Sse from "@effect/experimental/Sse"
import { Headers, HttpBody, HttpClient, HttpClientRequest } from "@effect/platform"
import type { HttpClientError, HttpClientResponse } from "@effect/platform"
import { Chunk, Duration, Effect, Either, ParseResult, Redacted, Stream } from "effect"
import * as Decode from "./decode.js"
import * as Errors from "./errors.js"
import * as Request from "./request.js"
import * as Retry from "./retry.js"
import type { Settings } from "./settings.js"
import * as Wire from "./wire.js"

/** The provider operations, shaped for `LanguageModel.make`. */
export interface Operations {
  readonly generateText: (
    options: LanguageModel.ProviderOptions
  ) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError>
  readonly streamText: (
    options: LanguageModel.ProviderOptions
  ) => Stream.Stream<Response.StreamPartEncoded, AiError.AiError>
}

/** Header names whose values are always secret. */
const alwaysSecret = ["authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"]

const describeCause = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = "code" in cause && typeof cause.code === "string" ? ` (${cause.code})` : ""
    return `${cause.message}${code}`
  }
  return cause === undefined ? "unknown cause" : String(cause)
}

const truncate = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text)

type Item = { readonly _tag: "Event"; readonly event: string; readonly data: string } | { readonly _tag: "End" }

interface Output {
  readonly parts: ReadonlyArray<Response.StreamPartEncoded>
  readonly done: boolean
}

/**
 * Builds the operations. Contract: the API key and secret header values go into each request's headers and into
 * the list of texts scrubbed from errors — nowhere else; the error copies of the headers show `<redacted>`.
 */
export const make = (settings: Settings, client: HttpClient.HttpClient): Operations => {
  const secretHeaderNames = [
    ...alwaysSecret,
    ...settings.headers.filter(([, value]) => Redacted.isRedacted(value)).map(([name]) => name.toLowerCase())
  ]
  const secrets = [
    ...(settings.apiKey === undefined ? [] : [Redacted.value(settings.apiKey)]),
    ...settings.headers.flatMap(([, value]) => (Redacted.isRedacted(value) ? [Redacted.value(value)] : []))
  ]
  // What an error may show of the request headers: secret values replaced.
  const context = (accept: string): Errors.RequestContext => {
    const shown: Record<string, string> = { "content-type": "application/json", accept }
    if (settings.apiKey !== undefined) shown.authorization = "<redacted>"
    for (const [name, value] of settings.headers) {
      shown[name.toLowerCase()] = Redacted.isRedacted(value) ? "<redacted>" : value
    }
    return { url: settings.url, headers: Errors.redactHeaders(shown, secretHeaderNames), secrets, secretHeaderNames }
  }
  const streamContext = context("text/event-stream")
  const jsonContext = context("application/json")
  const scopedClient = HttpClient.withScope(client)

  const request = (body: string, accept: string): HttpClientRequest.HttpClientRequest => {
    const headers: Record<string, string> = { accept }
    if (settings.apiKey !== undefined) headers.authorization = `Bearer ${Redacted.value(settings.apiKey)}`
    for (const [name, value] of settings.headers) {
      headers[name.toLowerCase()] = Redacted.isRedacted(value) ? Redacted.value(value) : value
    }
    return HttpClientRequest.post(settings.url, {
      headers,
      body: HttpBody.text(body, "application/json")
    })
  }

  const encodeBody = (
    method: Errors.Method,
    options: LanguageModel.ProviderOptions,
    stream: boolean
  ): Effect.Effect<string, AiError.AiError> =>
    Either.match(Request.body(settings, options, stream), {
      onLeft: (problem) => Effect.fail(Errors.malformedInput(method, problem)),
      onRight: (body) =>
        Effect.try({
          try: () => JSON.stringify(body),
          catch: (cause) => Errors.malformedInput(method, `the request is not JSON: ${describeCause(cause)}`)
        })
    })

  // The response body as bytes: a broken connection is NETWORK, a silence longer than the idle timeout TIMEOUT.
  const bytes = (
    response: HttpClientResponse.HttpClientResponse,
    method: Errors.Method,
    ctx: Errors.RequestContext
  ): Stream.Stream<Uint8Array, AiError.AiError> =>
    response.stream.pipe(
      Stream.mapError((error) =>
        Errors.network(ctx, method, `the connection broke while reading the response: ${describeCause(error.cause)}`)
      ),
      Stream.timeoutFail(
        () =>
          Errors.timeout(
            ctx,
            method,
            `the response stalled: no data for ${Duration.format(settings.idleTimeout)} (idle timeout)`
          ),
        settings.idleTimeout
      )
    )

  const headersOf = (response: HttpClientResponse.HttpClientResponse): Record<string, string> => {
    const out: Record<string, string> = {}
    for (const [name, value] of Object.entries(response.headers)) out[name] = value
    return out
  }

  const mapRequestError = (
    error: HttpClientError.HttpClientError,
    method: Errors.Method,
    ctx: Errors.RequestContext
  ): AiError.AiError =>
    error._tag === "RequestError" && error.reason === "Transport"
      ? Errors.network(ctx, method, `the request failed: ${describeCause(error.cause)}`)
      : Errors.malformedInput(method, `the request could not be sent: ${error.reason}`)

  // Sends the request; resolves with a 2xx response, fails with the mapped status error otherwise.
  const send = (
    body: string,
    method: Errors.Method,
    ctx: Errors.RequestContext,
    accept: string
  ) =>
    scopedClient.execute(request(body, accept)).pipe(
      Effect.mapError((error) => mapRequestError(error, method, ctx)),
      Effect.timeoutFail({
        duration: settings.requestTimeout,
        onTimeout: () =>
          Errors.timeout(
            ctx,
            method,
            `no response within ${Duration.format(settings.requestTimeout)} (request timeout)`
          )
      }),
      Effect.flatMap((response) =>
        response.status >= 200 && response.status < 300
          ? Effect.succeed(response)
          : bytes(response, method, ctx).pipe(
            Stream.decodeText(),
            Stream.mkString,
            Effect.orElseSucceed(() => ""),
            Effect.flatMap((text) =>
              Effect.fail(Errors.status(ctx, method, { status: response.status, headers: headersOf(response) }, text))
            )
          )
      ),
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...secretHeaderNames])
    )

  const onRetry = (notice: Retry.RetryNotice): Effect.Effect<void> =>
    Effect.logWarning("model request failed before any output; retrying").pipe(
      Effect.annotateLogs({
        retry: notice.retry,
        delayMs: notice.delayMs,
        code: notice.failure.code,
        failure: notice.failure.message
      })
    )

  const fold =
    (advertised: ReadonlySet<string>) =>
    (state: Decode.State, item: Item): Effect.Effect<readonly [Decode.State, Output], AiError.AiError> => {
      if (item._tag === "End") {
        return Effect.fail(Errors.malformed(streamContext, "streamText", "the stream closed before [DONE]"))
      }
      if (item.event === "error") {
        return Effect.fail(Errors.streamError(streamContext, "streamText", truncate(item.data, 2_000)))
      }
      if (item.data.trim() === "[DONE]") {
        return Either.match(Decode.done(state, advertised), {
          onLeft: (problem) => Effect.fail(problemError(problem, "streamText", streamContext)),
          onRight: (parts) => Effect.succeed([state, { parts, done: true }] as const)
        })
      }
      const chunk = Wire.decodeChunk(item.data)
      if (Either.isLeft(chunk)) {
        return Effect.fail(
          Errors.malformed(
            streamContext,
            "streamText",
            `the server sent a chunk that is not a valid chat.completion.chunk: ${
              truncate(ParseResult.TreeFormatter.formatErrorSync(chunk.left), 500)
            }`
          )
        )
      }
      return Either.match(Decode.step(state, chunk.right), {
        onLeft: (problem) => Effect.fail(problemError(problem, "streamText", streamContext)),
        onRight: ([next, parts]) => Effect.succeed([next, { parts, done: false }] as const)
      })
    }

  const streamText: Operations["streamText"] = (options) => {
    const advertised = new Set(options.tools.map((tool) => tool.name))
    return Stream.unwrap(Effect.map(encodeBody("streamText", options, true), (body) => {
      const attempt = Stream.unwrapScoped(Effect.map(
        send(body, "streamText", streamContext, "text/event-stream"),
        (response) =>
          bytes(response, "streamText", streamContext).pipe(
            Stream.decodeText(),
            Stream.pipeThroughChannel(Sse.makeChannel<AiError.AiError, unknown>()),
            Stream.map((event): Item => ({ _tag: "Event", event: event.event, data: event.data })),
            Stream.concat(Stream.succeed<Item>({ _tag: "End" })),
            Stream.mapAccumEffect(Decode.initial, fold(advertised)),
            Stream.takeUntil((output) => output.done),
            Stream.mapConcat((output) => output.parts)
          )
      ))
      return Retry.beforeOutput(attempt, settings.retry, onRetry)
    }))
  }

  const generateText: Operations["generateText"] = (options) => {
    const advertised = new Set(options.tools.map((tool) => tool.name))
    return Effect.flatMap(encodeBody("generateText", options, false), (body) => {
      const attempt = Stream.fromEffect(Effect.scoped(
        send(body, "generateText", jsonContext, "application/json").pipe(
          Effect.flatMap((response) =>
            bytes(response, "generateText", jsonContext).pipe(Stream.decodeText(), Stream.mkString)
          ),
          Effect.flatMap((text) => {
            const completion = Wire.decodeCompletion(text)
            if (Either.isLeft(completion)) {
              return Effect.fail(
                Errors.malformed(
                  jsonContext,
                  "generateText",
                  `the server sent a body that is not a valid chat.completion: ${
                    truncate(ParseResult.TreeFormatter.formatErrorSync(completion.left), 500)
                  }`
                )
              )
            }
            return Either.match(Decode.completion(completion.right, advertised), {
              onLeft: (problem) => Effect.fail(problemError(problem, "generateText", jsonContext)),
              onRight: (parts) => Effect.succeed(parts)
            })
          })
        )
      ))
      return Retry.beforeOutput(attempt, settings.retry, onRetry).pipe(
        Stream.runCollect,
        Effect.map((chunks) => Chunk.toArray(chunks).flatMap((parts) => [...parts]))
      )
    })
  }

  return { generateText, streamText }
}

const problemError = (
  problem: Decode.Problem,
  method: Errors.Method,
  ctx: Errors.RequestContext
): AiError.AiError => {
  switch (problem._tag) {
    case "Empty":
      return Errors.emptyResponse(method)
    case "InsufficientResource":
      return Errors.insufficientResource(method)
    case "StreamError":
      return Errors.streamError(ctx, method, problem.message)
  }
}
