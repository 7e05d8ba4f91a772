/**
 * A chat-completions provider for `@effect/ai`'s `LanguageModel`: DeepSeek by default, and any OpenAI-compatible
 * server (vLLM, llama.cpp's server, Ollama's `/v1`, OpenRouter, OpenAI) through a base URL. It streams over
 * `@effect/platform`'s `HttpClient` and `@effect/experimental`'s `Sse`, maps every failure into `AiError` (with an
 * `LlmFailure` cause where the status alone is not precise), and retries only while nothing has been streamed.
 *
 * @since 0.0.0
 */
import { LanguageModel, Model } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { Json, ModelStream, Setting } from "@harness/domain"
import { Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import * as ChatCompletionsSettings from "./ChatCompletionsSettings.js"
import * as Client from "./internal/client.js"
import { settingOf } from "./internal/configSettings.js"
import type { RetryPolicy, Settings } from "./internal/settings.js"

/**
 * DeepSeek's API base URL, the default.
 *
 * @since 0.0.0
 * @category constants
 */
export const deepSeekBaseUrl = ChatCompletionsSettings.deepSeekBaseUrl

/**
 * The default model.
 *
 * @since 0.0.0
 * @category constants
 */
export const defaultModel = ChatCompletionsSettings.defaultModel

/**
 * DeepSeek's current chat models (`deepseek-chat` / `deepseek-reasoner` were retired in July 2026).
 *
 * @since 0.0.0
 * @category constants
 */
export const deepSeekModels = ChatCompletionsSettings.deepSeekModels

/**
 * DeepSeek's thinking switch, sent as `thinking: { type }`.
 *
 * @since 0.0.0
 * @category models
 */
export type Thinking = "enabled" | "disabled"

/**
 * The name of the output-token limit in the request body: `max_tokens` (DeepSeek, most servers) or
 * `max_completion_tokens` (newer OpenAI models).
 *
 * @since 0.0.0
 * @category models
 */
export type MaxTokensParameter = "max_tokens" | "max_completion_tokens"

/**
 * How failed requests are retried while nothing has been streamed to the caller.
 *
 * Contract: a model call makes at most `maxRetries + 1` attempts, whatever each attempt streamed before it failed;
 * the backoff grows per attempt across the call; a failure after a part reached the caller is never retried.
 *
 * @since 0.0.0
 * @category models
 */
export interface RetryOptions {
  /** Retries after the first attempt; 0 disables retrying. Default 2. */
  readonly maxRetries?: number | undefined
  /** The first backoff delay, doubled per retry and jittered by ±20%. Default 1 second. */
  readonly baseDelay?: Duration.DurationInput | undefined
  /** The cap on a backoff delay; a `Retry-After` longer than this means no retry. Default 30 seconds. */
  readonly maxDelay?: Duration.DurationInput | undefined
  /**
   * The most time one model call may take — every attempt and every wait between them — after which it fails with
   * `TIMEOUT`, output or not; a retry whose wait would end past it is not made. Default none (each attempt is still
   * bounded by {@link Options.deadline}).
   */
  readonly deadline?: Duration.DurationInput | undefined
}

/**
 * Provider options. Every field is optional: the defaults talk to DeepSeek (which then needs `apiKey`).
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The server's base URL (`…/chat/completions` is appended unless already there). Default DeepSeek's. */
  readonly baseUrl?: string | undefined
  /** The model name. Default `deepseek-v4-flash`. */
  readonly model?: string | undefined
  /**
   * The API key, sent only as `Authorization: Bearer …`. Required for DeepSeek's URL, optional for keyless local
   * servers. Never logged, never in errors.
   */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** The output-token limit. Not sent when absent. */
  readonly maxOutputTokens?: number | undefined
  /** The body field carrying {@link Options.maxOutputTokens}. Default `max_tokens`. */
  readonly maxTokensParameter?: MaxTokensParameter | undefined
  /** Sampling temperature, 0–2. Never sent in thinking mode. */
  readonly temperature?: number | undefined
  /** Nucleus sampling, (0, 1]. Never sent in thinking mode. */
  readonly topP?: number | undefined
  /**
   * DeepSeek's thinking mode. Default `enabled` for DeepSeek's URL (sent explicitly), unset elsewhere (nothing
   * sent). When enabled the thinking rules apply: `reasoning_content` is sent back on every assistant message
   * that made tool calls, and `temperature` / `top_p` are not sent.
   */
  readonly thinking?: Thinking | undefined
  /** `reasoning_effort` (DeepSeek: `low` / `high` / `max`; OpenAI: `minimal` … `high`). Not sent when absent. */
  readonly reasoningEffort?: string | undefined
  /** Extra request headers. `Redacted` values are secrets: redacted in errors, spans and logs. */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  /** Extra body fields, merged last (they win, except over `messages`, `tools`, `tool_choice`, `stream*`). */
  readonly body?: Json.JsonObject | undefined
  /** How long to wait for the response headers. Default 120 seconds. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /**
   * How long a response may go without progress once its headers arrived: without an SSE event when streaming
   * (keep-alive comments, `retry:` fields and partial lines do not count), without body bytes otherwise. Default
   * 120 seconds.
   */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /**
   * The most time one attempt may take, from sending the request to the end of the response, whatever the server
   * sends. Default 10 minutes.
   */
  readonly deadline?: Duration.DurationInput | undefined
  /**
   * The most one reply may carry — its text, reasoning, refusal and tool-call arguments together, in UTF-8 bytes —
   * after which the request fails with `REPLY_TOO_LARGE` (never retried; what was streamed before stays streamed).
   * Default 8 MiB.
   */
  readonly maxReplyBytes?: number | undefined
  readonly retry?: RetryOptions | undefined
}

/**
 * The provider was misconfigured. `option` names the offending option; `message` says what to do.
 *
 * @since 0.0.0
 * @category errors
 */
export class ChatCompletionsConfigError extends Schema.TaggedError<ChatCompletionsConfigError>(
  "@harness/llm/ChatCompletionsConfigError"
)("ChatCompletionsConfigError", {
  reason: Schema.Literal("MissingApiKey", "InvalidApiKey", "InvalidOption"),
  option: Schema.String,
  message: Schema.String
}) {}

const isDeepSeek = (url: URL): boolean => url.hostname === "api.deepseek.com"

const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** Whether `value` holds a character an HTTP header value cannot carry (Node refuses it when sending). */
const badHeaderValue = (value: string): boolean =>
  Array.from(value).some((char) => {
    const code = char.codePointAt(0) ?? 0
    return (code < 0x20 && code !== 0x09) || code === 0x7f || code > 0xff
  })

/** What is wrong with a (non-empty) API key, in words that never show the key. */
const apiKeyProblem = (key: string): string | undefined => {
  if (/^[\r\n]|[\r\n]$/.test(key)) {
    return "the API key ends with a line break (CR/LF) — probably read from a file with its newline: remove it"
  }
  if (key !== key.trim()) return "the API key has leading or trailing whitespace: remove it"
  if (/[^\u0021-\u007e]/u.test(key)) {
    return "the API key contains a character that cannot be sent in the Authorization header (a control character, a space or a non-ASCII character)"
  }
  return undefined
}

/**
 * The largest SSE event held (string code units): 1 MiB, a thousand times a normal chunk. The parser's own default
 * (10 MiB) costs seconds of CPU per oversized event, since it re-reads its growing buffer on every network chunk.
 */
const maxEventSize = 1024 * 1024

/** The default bound on a reply: 8 MiB of text, reasoning and arguments, far beyond any model's output limit. */
const defaultMaxReplyBytes = 8 * 1024 * 1024

const invalid = (option: string, message: string) =>
  Either.left(new ChatCompletionsConfigError({ reason: "InvalidOption", option, message }))

const isHttpUrl = (text: string): boolean => {
  if (!URL.canParse(text)) return false
  const { protocol } = new URL(text)
  return protocol === "http:" || protocol === "https:"
}

const NonBlank = Schema.String.pipe(Schema.filter((text) => text.trim() !== "" || "must not be empty"))

const Between = (low: number, high: number, lowOpen: boolean, message: string) =>
  Schema.Number.pipe(
    Schema.filter((n) => (Number.isFinite(n) && (lowOpen ? n > low : n >= low) && n <= high) || message)
  )

const HeaderValue = Schema.Union(Schema.String, Schema.RedactedFromSelf(Schema.String)).pipe(
  Schema.filter((value) =>
    !badHeaderValue(Redacted.isRedacted(value) ? Redacted.value(value) : value) ||
    "contains a line break or another character a header cannot carry"
  )
)

const PositiveDuration = Setting.DurationInput({ allowZero: false })
const NonNegativeDuration = Setting.DurationInput({ allowZero: true })

/**
 * The options every value of which can be checked alone (`apiKey` is checked apart: its messages must never show
 * it, and its absence matters only for DeepSeek's URL). Decoding applies nothing but the checks and the durations.
 */
const OptionsSchema = Schema.Struct({
  baseUrl: Schema.optional(
    Schema.String.pipe(
      Schema.filter((text) => isHttpUrl(text.trim()) || `must be an http(s) URL, got ${JSON.stringify(text.trim())}`)
    )
  ),
  model: Schema.optional(NonBlank),
  maxOutputTokens: Schema.optional(Setting.PositiveInt),
  maxTokensParameter: Schema.optional(Schema.Literal("max_tokens", "max_completion_tokens")),
  temperature: Schema.optional(Between(0, 2, false, "must be between 0 and 2")),
  topP: Schema.optional(Between(0, 1, true, "must be in (0, 1]")),
  thinking: Schema.optional(Schema.Literal("enabled", "disabled")),
  reasoningEffort: Schema.optional(NonBlank),
  headers: Schema.optional(
    Schema.Record({ key: Schema.String, value: HeaderValue }).pipe(Schema.filter((headers) => {
      const bad = Object.keys(headers).find((name) => !headerName.test(name))
      return bad === undefined || `${JSON.stringify(bad)} is not a header name`
    }))
  ),
  body: Schema.optional(
    Json.JsonObject.pipe(Schema.filter((body) =>
      body["n"] === undefined || body["n"] === 1 ||
      "has n other than 1: this provider reads only the first choice (leave n out or set it to 1)"
    ))
  ),
  requestTimeout: Schema.optional(PositiveDuration),
  idleTimeout: Schema.optional(PositiveDuration),
  deadline: Schema.optional(PositiveDuration),
  maxReplyBytes: Schema.optional(Setting.PositiveInt),
  retry: Schema.optional(Schema.Struct({
    maxRetries: Schema.optional(Setting.NonNegativeInt),
    baseDelay: Schema.optional(NonNegativeDuration),
    maxDelay: Schema.optional(NonNegativeDuration),
    deadline: Schema.optional(PositiveDuration)
  }))
})

const decodeOptions = Schema.decodeUnknownEither(OptionsSchema, { errors: "first" })

/** The option a problem's path names: `retry.*` keeps its field, a header or body entry names its option. */
const optionOf = (path: string): string => path.startsWith("retry.") ? path : path.split(".")[0] ?? path

/**
 * Validates options and applies the defaults. Contract: pure; fails with a message that names the option and
 * says what to do.
 */
const resolve = (options: Options): Either.Either<Settings, ChatCompletionsConfigError> =>
  Either.gen(function*() {
    const checked = decodeOptions(options)
    if (Either.isLeft(checked)) {
      const problem = Setting.problemOf(checked.left)
      const option = optionOf(problem.path)
      const detail = problem.path === option ? "" : ` (${problem.path.slice(option.length + 1)})`
      return yield* invalid(option, `${option}${detail} ${problem.message}`)
    }
    const valid = checked.right
    const base = (valid.baseUrl ?? deepSeekBaseUrl).trim()
    const parsed = new URL(base)
    const trimmed = base.replace(/\/+$/, "")
    const url = trimmed.endsWith("/chat/completions") ? trimmed : `${trimmed}/chat/completions`
    const deepSeek = isDeepSeek(parsed)

    const apiKey = options.apiKey
    if (apiKey !== undefined && Redacted.value(apiKey).trim() === "") {
      return yield* Either.left(
        new ChatCompletionsConfigError({
          reason: "MissingApiKey",
          option: "apiKey",
          message:
            "the API key is empty: pass a non-empty apiKey (or set LLM_API_KEY), or leave it out for keyless servers"
        })
      )
    }
    const keyProblem = apiKey === undefined ? undefined : apiKeyProblem(Redacted.value(apiKey))
    if (keyProblem !== undefined) {
      return yield* Either.left(
        new ChatCompletionsConfigError({
          reason: "InvalidApiKey",
          option: "apiKey",
          message: `${keyProblem} (apiKey / LLM_API_KEY)`
        })
      )
    }
    if (deepSeek && apiKey === undefined) {
      return yield* Either.left(
        new ChatCompletionsConfigError({
          reason: "MissingApiKey",
          option: "apiKey",
          message: `an API key is required for ${parsed.origin}: pass apiKey (as Redacted) or set LLM_API_KEY`
        })
      )
    }

    const retry: RetryPolicy = {
      maxRetries: valid.retry?.maxRetries ?? 2,
      baseDelay: valid.retry?.baseDelay ?? Duration.seconds(1),
      maxDelay: valid.retry?.maxDelay ?? Duration.seconds(30),
      deadline: valid.retry?.deadline
    }
    const thinking = valid.thinking ?? (deepSeek ? "enabled" : undefined)
    return {
      url,
      model: valid.model ?? defaultModel,
      apiKey,
      maxOutputTokens: valid.maxOutputTokens,
      maxTokensParameter: valid.maxTokensParameter ?? "max_tokens",
      temperature: valid.temperature,
      topP: valid.topP,
      thinking,
      thinkingMode: thinking === "enabled",
      reasoningEffort: valid.reasoningEffort,
      // In the order given, secret values still `Redacted` (the decoded record keeps them as they were).
      headers: Object.entries(valid.headers ?? {}),
      body: valid.body ?? {},
      requestTimeout: valid.requestTimeout ?? Duration.seconds(120),
      idleTimeout: valid.idleTimeout ?? Duration.seconds(120),
      deadline: valid.deadline ?? Duration.minutes(10),
      maxEventSize,
      maxReplyBytes: valid.maxReplyBytes ?? defaultMaxReplyBytes,
      retry
    }
  })

/**
 * Builds the `LanguageModel` service.
 *
 * Contract:
 * - `streamText` sends `stream: true` with `stream_options.include_usage`; `generateText` sends a plain request.
 *   Both map the same way; a completed response with no content, reasoning or tool calls fails with
 *   `EMPTY_RESPONSE`, a stream that closes before `[DONE]` or sends a chunk that is not valid JSON with
 *   `MALFORMED`.
 * - A `tool-call` part is emitted only for an advertised tool with arguments that parse to a JSON object; every
 *   call is always emitted as `tool-params-start/delta/end` with the raw argument text.
 * - Only the choice with `index` 0 is read. A refusal (`refusal` instead of content) fails with `CONTENT_FILTER`
 *   carrying the refusal text, and is not retried.
 * - Every attempt is bounded: `requestTimeout` until the headers, then `idleTimeout` between SSE events (comments,
 *   `retry:` fields and partial lines are not progress; `retry:` is ignored), and `deadline` overall.
 * - A reply is bounded by `maxReplyBytes` (text, reasoning, refusal and tool-call arguments, in UTF-8 bytes): past
 *   it the request fails with `REPLY_TOO_LARGE`, and the chunk that crossed it is not emitted.
 * - Failures are `AiError`s; `LlmFailure.failureOf` classifies every one of them — transport, status, framing
 *   (an event over the 1 MiB limit, a 200 that is not an event stream), decoding, and defects below the
 *   provider (`UNKNOWN`, one line, no stack trace or file path).
 * - Nothing that leaves the provider — failures, their headers, bodies and messages, and the parts — contains the
 *   API key or a `Redacted` header value (as sent, JSON-escaped or URL-encoded, in any case): texts are scrubbed
 *   before they are cut.
 * - A failed request is retried (per {@link RetryOptions}) only while nothing has been streamed to the caller, at
 *   most `retry.maxRetries` times per model call with a backoff that grows per attempt, and within
 *   `retry.deadline` when set.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = Effect.fn("ChatCompletions.make")(function*(options: Options = {}) {
  return Context.get(yield* makeContext(options), LanguageModel.LanguageModel)
})

/**
 * The provider's `LanguageModel` together with its lower interface, `ModelStream` (the same stream with its parts
 * typed where the provider builds them, so the agent skips `LanguageModel`'s per-request schema work, ADR 0019; and
 * the same response as a pull, so it pays no stream stage per chunk, ADR 0083).
 *
 * Contract: both services send the same requests and yield the same parts and failures.
 *
 * @since 0.0.0
 * @category constructors
 */
export const makeContext = Effect.fn("ChatCompletions.makeContext")(function*(options: Options = {}) {
  const settings = yield* resolve(options)
  const client = yield* HttpClient.HttpClient
  const operations = Client.make(settings, client)
  const model = yield* LanguageModel.make(operations)
  return Context.make(LanguageModel.LanguageModel, model).pipe(
    Context.add(ModelStream.ModelStream, {
      model,
      streamText: operations.streamTyped,
      pullText: operations.pullTyped
    })
  )
})

/**
 * The provider as a `LanguageModel` layer, with its `ModelStream` (see {@link makeContext}).
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  LanguageModel.LanguageModel | ModelStream.ModelStream,
  ChatCompletionsConfigError,
  HttpClient.HttpClient
> => Layer.effectContext(makeContext(options))

/**
 * One setting of the standard configuration ({@link config}), described: what `harness config` and similar tools
 * list — the option it sets, its environment key, what it means, its default and whether it is a secret.
 *
 * @since 0.0.0
 * @category models
 */
export type ConfigSetting = ChatCompletionsSettings.ConfigSetting

/**
 * Every setting {@link config} reads, in the order of {@link Options} (also in `ChatCompletionsSettings`, which
 * loads nothing else).
 *
 * @since 0.0.0
 * @category constants
 */
export const configSettings = ChatCompletionsSettings.configSettings

/** The `Config` of one described setting: read by its name (nested under `LLM` by {@link config}), described. */
const read = <A>(
  setting: { readonly name: string; readonly description: string },
  of: (name: string) => Config.Config<A>
) => Config.withDescription(of(setting.name), setting.description)

const optional = <A>(
  setting: { readonly name: string; readonly description: string },
  of: (name: string) => Config.Config<A>
) => Config.option(read(setting, of))

const jsonConfig = <A, I>(setting: { readonly key: string }, schema: Schema.Schema<A, I>) => (name: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((text) =>
      Either.mapLeft(
        Schema.decodeUnknownEither(Schema.parseJson(schema))(text),
        () => ConfigError.InvalidData([], `${setting.key} must be a JSON object (${schema.ast.toString()})`)
      )
    )
  )

const SecretHeaders = Schema.Record({ key: Schema.String, value: Schema.String })

const present = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)

/**
 * The standard configuration, nested under `LLM` — as environment variables (all optional):
 * `LLM_BASE_URL`, `LLM_MODEL`, `LLM_API_KEY`, `LLM_MAX_OUTPUT_TOKENS`, `LLM_MAX_TOKENS_PARAMETER`
 * (`max_tokens` | `max_completion_tokens`), `LLM_TEMPERATURE`, `LLM_TOP_P`, `LLM_THINKING` (`enabled` |
 * `disabled`), `LLM_REASONING_EFFORT`, `LLM_HEADERS` (a JSON object; every value is treated as a secret),
 * `LLM_BODY` (a JSON object), `LLM_REQUEST_TIMEOUT`, `LLM_IDLE_TIMEOUT`, `LLM_DEADLINE` (durations such as
 * `30 seconds`), `LLM_MAX_REPLY_BYTES`, `LLM_MAX_RETRIES`, `LLM_RETRY_BASE_DELAY`, `LLM_RETRY_MAX_DELAY`, `LLM_RETRY_DEADLINE`.
 * {@link configSettings} describes each one (every `Config` here carries the same description); a
 * `ConfigProvider.fromMap` needs `pathDelim: "_"` for these names.
 *
 * @since 0.0.0
 * @category utils
 */
export const config: Config.Config<Options> = Config.all({
  baseUrl: read(settingOf.baseUrl, Config.string).pipe(Config.withDefault(deepSeekBaseUrl)),
  model: read(settingOf.model, Config.string).pipe(Config.withDefault(defaultModel)),
  apiKey: optional(settingOf.apiKey, (name) => Config.redacted(name)),
  maxOutputTokens: optional(settingOf.maxOutputTokens, Config.integer),
  maxTokensParameter: read(settingOf.maxTokensParameter, Config.literal("max_tokens", "max_completion_tokens")).pipe(
    Config.withDefault<MaxTokensParameter>("max_tokens")
  ),
  temperature: optional(settingOf.temperature, Config.number),
  topP: optional(settingOf.topP, Config.number),
  thinking: optional(settingOf.thinking, Config.literal("enabled", "disabled")),
  reasoningEffort: optional(settingOf.reasoningEffort, Config.string),
  headers: optional(settingOf.headers, jsonConfig(settingOf.headers, SecretHeaders)),
  body: optional(settingOf.body, jsonConfig(settingOf.body, Json.JsonObject)),
  requestTimeout: read(settingOf.requestTimeout, Config.duration).pipe(Config.withDefault(Duration.seconds(120))),
  idleTimeout: read(settingOf.idleTimeout, Config.duration).pipe(Config.withDefault(Duration.seconds(120))),
  deadline: read(settingOf.deadline, Config.duration).pipe(Config.withDefault(Duration.minutes(10))),
  maxReplyBytes: read(settingOf.maxReplyBytes, Config.integer).pipe(Config.withDefault(defaultMaxReplyBytes)),
  retry: Config.all({
    maxRetries: read(settingOf.maxRetries, Config.integer).pipe(Config.withDefault(2)),
    baseDelay: read(settingOf.retryBaseDelay, Config.duration).pipe(Config.withDefault(Duration.seconds(1))),
    maxDelay: read(settingOf.retryMaxDelay, Config.duration).pipe(Config.withDefault(Duration.seconds(30))),
    deadline: optional(settingOf.retryDeadline, Config.duration)
  })
}).pipe(
  Config.nested("LLM"),
  Config.map((c): Options => {
    const headers = present(c.headers)
    return {
      ...c,
      apiKey: present(c.apiKey),
      maxOutputTokens: present(c.maxOutputTokens),
      temperature: present(c.temperature),
      topP: present(c.topP),
      thinking: present(c.thinking),
      reasoningEffort: present(c.reasoningEffort),
      headers: headers === undefined
        ? undefined
        : Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Redacted.make(value)])),
      body: present(c.body),
      retry: { ...c.retry, deadline: present(c.retry.deadline) }
    }
  })
)

/**
 * The provider as a layer configured from `Config` ({@link config} by default). Contract: a misconfiguration is
 * a `ConfigError` whose message says what to do (a missing API key for DeepSeek is `MissingData`).
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { FetchHttpClient } from "@effect/platform"
 * import { ChatCompletions } from "@harness/llm"
 * import { Effect, Layer } from "effect"
 *
 * // Settings come from the environment (DEEPSEEK_API_KEY, …; see `config`).
 * const ModelLive = ChatCompletions.layerConfig().pipe(Layer.provide(FetchHttpClient.layer))
 *
 * const program = LanguageModel.generateText({ prompt: "Say hello" }).pipe(Effect.provide(ModelLive))
 * ```
 *
 * @since 0.0.0
 * @category layers
 */
export const layerConfig = (
  options: Config.Config<Options> = config
): Layer.Layer<LanguageModel.LanguageModel | ModelStream.ModelStream, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Layer.effectContext(
    Effect.flatMap(options, (resolved) =>
      makeContext(resolved).pipe(
        Effect.mapError((error) =>
          error.reason === "MissingApiKey"
            ? ConfigError.MissingData([error.option], error.message)
            : ConfigError.InvalidData([error.option], error.message)
        )
      ))
  )

/**
 * A model preset for `Effect.provide`: `ChatCompletions.model("deepseek-v4-pro", { apiKey })`. Contract: a
 * misconfiguration is a defect here (use {@link layer} to handle it as an error).
 *
 * @since 0.0.0
 * @category utils
 */
export const model = (
  name: string,
  options: Omit<Options, "model"> = {}
): Model.Model<"chat-completions", LanguageModel.LanguageModel | ModelStream.ModelStream, HttpClient.HttpClient> =>
  Model.make("chat-completions", Layer.orDie(layer({ ...options, model: name })))
