/**
 * The provider's two operations over `HttpClient`: a streamed request decoded as server-sent events, and a
 * non-streamed one. Both build the body from the prompt, send it with the API key in the `Authorization` header
 * only, bound every attempt by a deadline and an idle timeout, map every failure at the edge (defects included)
 * into a scrubbed `AiError`, and retry (per the settings' policy) while nothing has reached the caller.
 */
import type { LanguageModel, Response } from "@effect/ai"
import type { AiError } from "@effect/ai"
import { Headers, HttpBody, HttpClient, HttpClientRequest } from "@effect/platform"
import type { HttpClientError, HttpClientResponse } from "@effect/platform"
import { ModelStream } from "@harness/domain"
import {
  Cause,
  Chunk,
  Clock,
  Duration,
  Effect,
  Either,
  ExecutionStrategy,
  Exit,
  Option,
  ParseResult,
  Redacted,
  Ref,
  Scope,
  Stream
} from "effect"
import * as Decode from "./decode.js"
import * as Errors from "./errors.js"
import * as EventStream from "./eventStream.js"
import * as Request from "./request.js"
import * as Retry from "./retry.js"
import * as Scrub from "./scrub.js"
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
  /** The same stream with its parts typed where they are built ({@link ModelStream.typed}), for `ModelStream`. */
  readonly streamTyped: (
    options: LanguageModel.ProviderOptions
  ) => Stream.Stream<ModelStream.Part, AiError.AiError>
  /** `streamTyped`'s response as the pull it is made of (`ModelStream.pullText`, ADR 0083). */
  readonly pullTyped: (options: LanguageModel.ProviderOptions) => Effect.Effect<ModelStream.Pull, never, Scope.Scope>
}

/** Header names whose values are always secret. */
const alwaysSecret = ["authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"]

/** The most of an unexpected body (an error page, a non-SSE 200) that is read to describe it. */
const headLimit = 64 * 1024

/** The largest non-streamed response body read (bytes); a larger one is `MALFORMED`, never buffered whole. */
const maxBodyBytes = 16 * 1024 * 1024

// Absolute file paths (stack frames, module paths) are machine details: never part of a failure message.
const absolutePath = /(?<![\w:/.-])(?:file:\/\/)?\/(?:[^\s:/()'"]+\/)+[^\s:()'"]*/g

/** One line saying what a foreign failure was: its message and code, never its stack or a file path. */
const describeCause = (cause: unknown): string => {
  const text = cause instanceof Error
    ? `${cause.message}${"code" in cause && typeof cause.code === "string" ? ` (${cause.code})` : ""}`
    : typeof cause === "string"
    ? cause
    : cause === undefined
    ? "unknown cause"
    : Object.prototype.toString.call(cause)
  const line = text.split(/\r?\n/)[0] ?? ""
  return line.replace(absolutePath, "<path>").trim() || "no message"
}

/** What a stream's parts become as they leave: kept encoded, or typed. */
type Convert<A> = (parts: ReadonlyArray<Response.StreamPartEncoded>) => Either.Either<ReadonlyArray<A>, string>

const encoded: Convert<Response.StreamPartEncoded> = Either.right

const typedParts: Convert<ModelStream.Part> = (parts) => {
  const out: Array<ModelStream.Part> = []
  for (const part of parts) {
    const typed = ModelStream.typed(part)
    if (Either.isLeft(typed)) {
      return Either.left(
        `a ${part.type} part does not decode: ${ParseResult.TreeFormatter.formatErrorSync(typed.left)}`
      )
    }
    out.push(typed.right)
  }
  return Either.right(out)
}

/** What an attempt runs under: its progress mark (for the idle timeout) and the scope its request lives in. */
interface Watch {
  readonly progress: Effect.Effect<void>
  /** Closing it aborts the request (`HttpClient.withScope`): the watchdog's way to end a waiting read. */
  readonly scope: Scope.Scope
}

/**
 * A decode failure in words. Text that is not JSON is said to be so without the parser's own message: V8 quotes the
 * first characters of the text there, a cut the scrubber cannot recognise when it falls inside a secret.
 */
const decodeProblem = (error: ParseResult.ParseError, text: string): string => {
  try {
    JSON.parse(text)
  } catch {
    return "it is not JSON"
  }
  return ParseResult.TreeFormatter.formatErrorSync(error)
}
/**
 * Builds the operations. Contract: the API key and secret header values go into each request's headers and into
 * the scrubber — nowhere else; every error and every part that leaves here has been scrubbed.
 */
export const make = (settings: Settings, client: HttpClient.HttpClient): Operations => {
  const secretHeaderNames = [
    ...alwaysSecret,
    ...settings.headers.filter(([, value]) => Redacted.isRedacted(value)).map(([name]) => name.toLowerCase())
  ]
  const scrub = Scrub.make([
    ...(settings.apiKey === undefined ? [] : [Redacted.value(settings.apiKey)]),
    ...settings.headers.flatMap(([, value]) => (Redacted.isRedacted(value) ? [Redacted.value(value)] : []))
  ])
  // What an error may show of the request headers: secret values replaced.
  const context = (accept: string): Errors.RequestContext => {
    const shown: Record<string, string> = { "content-type": "application/json", accept }
    if (settings.apiKey !== undefined) shown.authorization = "<redacted>"
    for (const [name, value] of settings.headers) {
      shown[name.toLowerCase()] = Redacted.isRedacted(value) ? "<redacted>" : value
    }
    return {
      url: settings.url,
      headers: Errors.redactHeaders(shown, secretHeaderNames, scrub),
      scrub,
      secretHeaderNames
    }
  }
  const streamContext = context("text/event-stream")
  const jsonContext = context("application/json")
  const scopedClient = HttpClient.withScope(client)
  const deadlineMs = Duration.toMillis(settings.deadline)
  const idleMs = Duration.toMillis(settings.idleTimeout)

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
    ctx: Errors.RequestContext,
    options: LanguageModel.ProviderOptions,
    stream: boolean
  ): Effect.Effect<string, AiError.AiError> =>
    Either.match(Request.body(settings, options, stream), {
      onLeft: (problem) => Effect.fail(Errors.malformedInput(ctx, method, problem)),
      onRight: (body) =>
        Effect.try({
          try: () => JSON.stringify(body),
          catch: (cause) => Errors.malformedInput(ctx, method, `the request is not JSON: ${describeCause(cause)}`)
        })
    })

  /**
   * Runs one attempt under its two clocks. Contract: the attempt fails with `TIMEOUT` once `deadline` has passed
   * since it started (whatever the server sends), or once `idleTimeout` has passed since the last progress mark
   * (marks start when the response headers arrive; only what the attempt marks counts — for a stream, SSE events,
   * never bytes, comments or `retry:` fields). The watchdog is a fiber of its own that, when a clock runs out, aborts
   * the request (closes its scope) so that a waiting read ends, and the attempt's failure is then the timeout; no
   * element races it (`Stream.interruptWhen` forks three fibers per element, most of a streamed chunk's cost).
   */
  const watched = <A>(
    ctx: Errors.RequestContext,
    method: Errors.Method,
    attempt: (watch: Watch) => Effect.Effect<Retry.Pull<A>, AiError.AiError, Scope.Scope>
  ): Effect.Effect<Retry.Pull<A>, AiError.AiError, Scope.Scope> =>
    Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const last = yield* Ref.make<number | undefined>(undefined)
      const progress = Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.set(last, now))
      const watchdog: Effect.Effect<never, AiError.AiError> = Effect.gen(function*() {
        while (true) {
          const now = yield* Clock.currentTimeMillis
          const left = started + deadlineMs - now
          if (left <= 0) {
            return yield* Effect.fail(Errors.timeout(
              ctx,
              method,
              `the response did not complete within ${Duration.format(settings.deadline)} (deadline)`
            ))
          }
          const seen = yield* Ref.get(last)
          if (seen !== undefined && now - seen >= idleMs) {
            return yield* Effect.fail(Errors.timeout(
              ctx,
              method,
              `the response stalled: no ${method === "streamText" ? "event" : "data"} for ${
                Duration.format(settings.idleTimeout)
              } (idle timeout; keep-alive comments do not count)`
            ))
          }
          const idleLeft = seen === undefined ? idleMs : seen + idleMs - now
          yield* Effect.sleep(Duration.millis(Math.max(1, Math.min(left, idleLeft))))
        }
      })
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const alarm = yield* Ref.make(Option.none<AiError.AiError>())
      yield* Effect.forkScoped(Effect.catchAll(
        watchdog,
        (error) => Effect.zipRight(Ref.set(alarm, Option.some(error)), Scope.close(scope, Exit.void))
      ))
      // Whatever fails once the watchdog has fired (the aborted request, its read) fails with the watchdog's error.
      const alarmed = <E>(cause: Cause.Cause<E>, wrap: (error: AiError.AiError) => E) =>
        Effect.flatMap(
          Ref.get(alarm),
          Option.match({ onNone: () => Effect.failCause(cause), onSome: (error) => Effect.fail(wrap(error)) })
        )
      const pull = yield* Effect.catchAllCause(
        attempt({ progress, scope }),
        (cause) => alarmed(cause, (error) => error)
      )
      return Effect.catchAllCause(pull, (cause) => {
        const failure = Cause.failureOption(cause)
        // The end of the response is no failure.
        return Option.isSome(failure) && Option.isNone(failure.value)
          ? Effect.failCause(cause)
          : alarmed(cause, Option.some)
      })
    })

  const bytes = (
    response: HttpClientResponse.HttpClientResponse,
    method: Errors.Method,
    ctx: Errors.RequestContext
  ): Stream.Stream<Uint8Array, AiError.AiError> =>
    response.stream.pipe(
      Stream.mapError((error) =>
        Errors.network(ctx, method, `the connection broke while reading the response: ${describeCause(error.cause)}`)
      )
    )

  // The start of a body (at most `headLimit` characters), to describe what the server sent instead.
  const head = (
    response: HttpClientResponse.HttpClientResponse,
    method: Errors.Method,
    ctx: Errors.RequestContext
  ): Effect.Effect<string> =>
    bytes(response, method, ctx).pipe(
      Stream.decodeText(),
      Stream.runFoldWhile("", (text) => text.length < headLimit, (text, piece) => text + piece),
      Effect.orElseSucceed(() => "")
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
      : Errors.malformedInput(
        ctx,
        method,
        `the request could not be sent (${error.reason})${
          error.description === undefined ? "" : `: ${describeCause(error.description)}`
        }`
      )

  // Sends the request; resolves with a 2xx response, fails with the mapped status error otherwise.
  const send = (
    body: string,
    method: Errors.Method,
    ctx: Errors.RequestContext,
    accept: string,
    watch: Watch
  ) =>
    Scope.extend(scopedClient.execute(request(body, accept)), watch.scope).pipe(
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
      Effect.tap(() => watch.progress),
      Effect.flatMap((response) =>
        response.status >= 200 && response.status < 300
          ? Effect.succeed(response)
          : Effect.flatMap(
            head(response, method, ctx),
            (text) =>
              Effect.fail(Errors.status(ctx, method, { status: response.status, headers: headersOf(response) }, text))
          )
      ),
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...secretHeaderNames])
    )

  // A 200 that is not an event stream: say what it was (content type, the provider's message, the first bytes).
  const notEventStream = (contentType: string, text: string): AiError.AiError => {
    const trimmed = text.trim()
    const completion = Wire.decodeCompletion(trimmed)
    const what = Either.isRight(completion)
      ? "a whole chat.completion (the server ignored stream: true)"
      : (() => {
        const message = /json/i.test(contentType) ? Wire.errorMessage(trimmed) : undefined
        return message === undefined ? "something else" : `an error: ${message}`
      })()
    return Errors.malformed(
      streamContext,
      "streamText",
      `the server answered 200 with content type ${contentType} instead of an event stream (text/event-stream): ${what}; ${
        trimmed === "" ? "empty body" : `body starts: ${streamContext.scrub.clip(trimmed, 200)}`
      }`
    )
  }

  const onRetry = (notice: Retry.RetryNotice): Effect.Effect<void> =>
    Effect.logWarning("model request failed before any output; retrying").pipe(
      Effect.annotateLogs({
        retry: notice.retry,
        delayMs: notice.delayMs,
        code: notice.failure.code,
        failure: scrub.text(notice.failure.message)
      })
    )

  const retryHooks = (ctx: Errors.RequestContext, method: Errors.Method): Retry.Hooks => ({
    onRetry,
    pastDeadline: (deadline) =>
      Errors.timeout(
        ctx,
        method,
        `the model call did not complete within ${Duration.format(deadline)} (retry.deadline), retries included`
      )
  })

  /**
   * One response's fold of its events into output (the event stream's `event` option): its decoding state is this closure's,
   * made per attempt and used only by the fiber that runs the attempt's stream.
   */
  const fold = <A>(advertised: ReadonlySet<string>, convert: Convert<A>) => {
    let state = Decode.initial
    const out = (parts: ReadonlyArray<Response.StreamPartEncoded>, done: boolean) =>
      Either.match(convert(parts.map(scrub.deep)), {
        onLeft: (problem) => Either.left(Errors.malformed(streamContext, "streamText", problem)),
        onRight: (output): Either.Either<EventStream.Folded<A>, AiError.AiError> => Either.right({ output, done })
      })
    return (item: { readonly event: string; readonly data: string }) => {
      if (item.event === "error") {
        const details = Wire.errorDetails(item.data)
        return Either.left(Errors.streamError(streamContext, "streamText", {
          message: details?.message ?? item.data,
          type: details?.type,
          code: details?.code
        }))
      }
      if (item.data.trim() === "[DONE]") {
        return Either.match(Decode.done(state, advertised), {
          onLeft: (problem) => Either.left(problemError(problem, "streamText", streamContext)),
          onRight: (parts) => out(parts, true)
        })
      }
      const chunk = Wire.decodeChunk(item.data)
      if (Either.isLeft(chunk)) {
        return Either.left(Errors.malformed(
          streamContext,
          "streamText",
          `the server sent a chunk that is not a valid chat.completion.chunk: ${decodeProblem(chunk.left, item.data)}`
        ))
      }
      return Either.match(Decode.step(state, chunk.right, settings.maxReplyBytes), {
        onLeft: (problem) => Either.left(problemError(problem, "streamText", streamContext)),
        onRight: ([next, parts]) => {
          state = next
          return out(parts, false)
        }
      })
    }
  }

  /**
   * The last guard where anything leaves: a response opened by `open` as a pull, whose open never fails (its failure
   * is the first pull's). A defect (a bug, a library throwing) becomes a classified `UNKNOWN` failure with a one-line
   * message, interruption stays interruption, and every error is scrubbed.
   */
  const edge = <A>(
    open: Effect.Effect<Retry.Pull<A>, AiError.AiError, Scope.Scope>,
    ctx: Errors.RequestContext,
    method: Errors.Method
  ): Effect.Effect<Retry.Pull<A>, never, Scope.Scope> => {
    const guard = (pull: Retry.Pull<A>): Retry.Pull<A> =>
      Effect.catchAllCause(pull, (cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          return Effect.fail(Option.map(failure.value, (error) => Errors.scrubError(error, scrub)))
        }
        const defect = Cause.dieOption(cause)
        const error = Errors.unexpected(
          ctx,
          method,
          Option.isSome(defect) ? describeCause(defect.value) : "interrupted"
        )
        return Effect.fail(Option.some(Errors.scrubError(error, scrub)))
      })
    return Effect.catchAllCause(
      Effect.map(open, guard),
      (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.succeed(guard(Effect.failCause(Cause.map(cause, Option.some))))
    )
  }

  /**
   * A streamed response as a pull (ADR 0083): the request, its attempts under the watchdog and the retry, each pull
   * the output of one read of the body. What a `Stream` of it would add per chunk (an executor stage for each layer)
   * is not paid: the only executor under a pull is the body's.
   */
  const pull = <A>(
    options: LanguageModel.ProviderOptions,
    convert: Convert<A>
  ): Effect.Effect<Retry.Pull<A>, never, Scope.Scope> => {
    const advertised = new Set(options.tools.map((tool) => tool.name))
    const ctx = streamContext
    const attempt = (body: string) =>
      watched(
        ctx,
        "streamText",
        (watch) =>
          Effect.flatMap(send(body, "streamText", ctx, "text/event-stream", watch), (response) => {
            const contentType = Errors.contentTypeOf(response.headers)
            return Effect.flatMap(Stream.toPull(bytes(response, "streamText", ctx)), (read) =>
              EventStream.pull(read, {
                maxEventSize: settings.maxEventSize,
                progress: watch.progress,
                labelled: contentType !== undefined && /^\s*text\/event-stream\b/i.test(contentType),
                notEventStream: (text) => notEventStream(contentType ?? "(none)", text),
                headLimit,
                event: fold(advertised, convert),
                tooLarge: (max) =>
                  Errors.malformed(
                    ctx,
                    "streamText",
                    `the server sent an SSE event larger than ${max} characters (the parser's limit)`
                  ),
                truncated: () => Errors.malformed(ctx, "streamText", "the stream closed before [DONE]")
              }))
          })
      )
    return edge(
      Effect.flatMap(
        encodeBody("streamText", ctx, options, true),
        (body) => Retry.beforeOutput(attempt(body), settings.retry, retryHooks(ctx, "streamText"))
      ),
      ctx,
      "streamText"
    )
  }

  const streamText: Operations["streamText"] = (options) => Stream.fromPull(pull(options, encoded))
  const streamTyped: Operations["streamTyped"] = (options) => Stream.fromPull(pull(options, typedParts))
  const pullTyped: Operations["pullTyped"] = (options) => pull(options, typedParts)

  const generateText: Operations["generateText"] = (options) => {
    const advertised = new Set(options.tools.map((tool) => tool.name))
    const ctx = jsonContext
    const decodeBody = (response: HttpClientResponse.HttpClientResponse, text: string) => {
      const completion = Wire.decodeCompletion(text)
      if (Either.isLeft(completion)) {
        const contentType = Errors.contentTypeOf(response.headers) ?? "(none)"
        return Effect.fail(
          Errors.malformed(
            ctx,
            "generateText",
            `the server sent a body (content type ${contentType}) that is not a valid chat.completion: ${
              decodeProblem(completion.left, text)
            }; body starts: ${ctx.scrub.clip(text.trim(), 200)}`
          )
        )
      }
      return Either.match(Decode.completion(completion.right, advertised, settings.maxReplyBytes), {
        onLeft: (problem) => Effect.fail(problemError(problem, "generateText", ctx)),
        onRight: (parts) => Effect.succeed(parts.map(scrub.deep))
      })
    }
    // An attempt reads the whole body before its pull gives the parts, so any failure comes before output.
    const attempt = (body: string) =>
      watched(ctx, "generateText", (watch) =>
        send(body, "generateText", ctx, "application/json", watch).pipe(
          Effect.flatMap((response) =>
            bytes(response, "generateText", ctx).pipe(
              Stream.tap(() => watch.progress),
              Stream.mapAccumEffect(0, (total, piece: Uint8Array) =>
                total + piece.length > maxBodyBytes
                  ? Effect.fail(Errors.malformed(
                    ctx,
                    "generateText",
                    `the response body is larger than ${maxBodyBytes} bytes (the limit for a completion)`
                  ))
                  : Effect.succeed([total + piece.length, piece] as const)),
              Stream.decodeText(),
              Stream.mkString,
              Effect.flatMap((text) => decodeBody(response, text))
            )
          ),
          Effect.flatMap((parts) => Stream.toPull(Stream.succeed(parts)))
        ))
    const open = Effect.flatMap(
      encodeBody("generateText", ctx, options, false),
      (body) => Retry.beforeOutput(attempt(body), settings.retry, retryHooks(ctx, "generateText"))
    )
    return Stream.fromPull(edge(open, ctx, "generateText")).pipe(
      Stream.runCollect,
      Effect.map((chunks) => Chunk.toArray(chunks).flatMap((parts) => [...parts]))
    )
  }

  return { generateText, streamText, streamTyped, pullTyped }
}

const problemError = (
  problem: Decode.Problem,
  method: Errors.Method,
  ctx: Errors.RequestContext
): AiError.AiError => {
  switch (problem._tag) {
    case "Empty":
      return Errors.emptyResponse(ctx, method)
    case "InsufficientResource":
      return Errors.insufficientResource(ctx, method)
    case "StreamError":
      return Errors.streamError(ctx, method, problem)
    case "Refusal":
      return Errors.refusal(ctx, method, problem.text)
    case "TooLarge":
      return Errors.replyTooLarge(ctx, method, problem.limit)
  }
}
