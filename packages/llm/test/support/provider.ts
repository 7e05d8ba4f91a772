/**
 * Shared test wiring: the provider built against a fake server with Node's HTTP client, in the test's scope, and
 * the tools the requests advertise.
 */
import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import type { AiError } from "@effect/ai"
import { Response } from "@effect/ai"
import { NodeHttpClient } from "@effect/platform-node"
import { LlmFailure } from "@harness/domain"
import {
  Clock,
  Context,
  Effect,
  Either,
  FiberRef,
  HashSet,
  Layer,
  Logger,
  LogLevel,
  Redacted,
  Schema,
  Stream
} from "effect"
import type { Scope } from "effect"
import { ChatCompletions } from "../../src/index.js"
import * as FakeServer from "./FakeServer.js"

/** Everything logged at any level in the current scope, as logfmt lines (annotations and causes included). */
export const captureLogs = Effect.gen(function*() {
  const lines: Array<string> = []
  const logger = Logger.map(Logger.logfmtLogger, (line) => lines.push(line))
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(logger))
  yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.All)
  return lines
})

/** A key that must never leak. */
export const apiKey = "sk-test-7Qx2LmZ9pV4rT8wK3nB6"

export const ReadFile = Tool.make("read_file", {
  description: "Read a file of the workspace",
  parameters: { path: Schema.String },
  success: Schema.String
})

/** A tool without parameters: its calls may carry empty argument text. */
export const ListDir = Tool.make("list_dir", { description: "List the workspace root", success: Schema.String })

export const Tools = Toolkit.make(ReadFile, ListDir)

/** The toolkit with a handler (the loop under test never runs it: resolution is disabled). */
export const ToolsLayer = Tools.toLayer({
  read_file: ({ path }) => Effect.succeed(`contents of ${path}`),
  list_dir: () => Effect.succeed("a.txt")
})

/**
 * The `LanguageModel` for `server`, built in the current scope. Defaults for tests: no backoff delay (retries are
 * immediate unless a test drives the clock), the key above.
 */
export const languageModel = (
  server: FakeServer.FakeServer,
  options: ChatCompletions.Options = {}
): Effect.Effect<LanguageModel.Service, never, Scope.Scope> =>
  Layer.build(
    ChatCompletions.layer({
      baseUrl: server.baseUrl,
      apiKey: Redacted.make(apiKey),
      ...options,
      retry: { baseDelay: 0, ...options.retry }
    }).pipe(Layer.provide(NodeHttpClient.layer))
  ).pipe(
    Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)),
    Effect.orDie
  )

/** A fake server and the model over it, retries off so each case sees the first failure (`options` add to that). */
export const serverAndModel = (options: ChatCompletions.Options = {}) =>
  Effect.gen(function*() {
    const server = yield* FakeServer.make
    const model = yield* languageModel(server, { ...options, retry: { maxRetries: 0, ...options.retry } })
    return { server, model }
  })

/** What streaming `prompt` (with the test tools) fails with once the server answers `reply`. */
export const failedStream = (
  fixture: { readonly server: FakeServer.FakeServer; readonly model: LanguageModel.Service },
  reply: FakeServer.Reply,
  prompt = "hi"
) => Effect.zipRight(fixture.server.reply(reply), failing(stream(fixture.model, prompt)))

/** Streams a prompt with the test tools advertised, collecting every part. */
export const stream = (
  model: LanguageModel.Service,
  prompt: Parameters<LanguageModel.Service["streamText"]>[0]["prompt"]
) =>
  model.streamText({ prompt, toolkit: Tools, disableToolCallResolution: true }).pipe(
    Stream.runCollect,
    Effect.map((chunk): ReadonlyArray<Response.StreamPart<Toolkit.Tools<typeof Tools>>> => Array.from(chunk)),
    Effect.provide(ToolsLayer)
  )

/**
 * The parts as plain JSON without `response-metadata` parts, part metadata or type ids, for readable assertions.
 */
export const shape = (
  parts: ReadonlyArray<Response.AnyPart>
): ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }> =>
  parts.flatMap((part) => {
    if (part.type === "response-metadata") return []
    const { metadata: _metadata, [Response.PartTypeId]: _typeId, ...rest } = part
    return [JSON.parse(JSON.stringify(rest))]
  })

/** The `harness` metadata of the finish part. */
export const finishFacts = (parts: ReadonlyArray<Response.AnyPart>): unknown =>
  parts.find((part) => part.type === "finish")?.metadata["harness"]

/** Runs `effect` expecting an `AiError`, and classifies it the way the agent does. */
export const failing = <A, R>(effect: Effect.Effect<A, AiError.AiError, R>) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(effect)
    const failure = LlmFailure.failureOf(error, yield* Clock.currentTimeMillis)
    return { error, failure }
  })

/** Streams like {@link stream} but keeps what was emitted before a failure, and the failure. */
export const streamUntilFailure = (
  model: LanguageModel.Service,
  prompt: Parameters<LanguageModel.Service["streamText"]>[0]["prompt"]
) =>
  model.streamText({ prompt, toolkit: Tools, disableToolCallResolution: true }).pipe(
    Stream.either,
    Stream.runCollect,
    Effect.map((chunk) => {
      const items = Array.from(chunk)
      const parts = items.flatMap((item) => (Either.isRight(item) ? [item.right] : []))
      const errors = items.flatMap((item) => (Either.isLeft(item) ? [item.left] : []))
      return { parts, error: errors[0] }
    }),
    Effect.provide(ToolsLayer)
  )
