/**
 * Options and `Config`: defaults (DeepSeek), validation with messages that say what to do, the standard config
 * keys, and the `model` preset. DeepSeek's own URL cannot be served by the fake server, so the DeepSeek-default
 * tests fake the network edge with an `HttpClient` that records the request and answers with a fixture.
 */
import { LanguageModel, Prompt } from "@effect/ai"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import {
  Cause,
  ConfigError,
  ConfigProvider,
  ConfigProviderPathPatch,
  Context,
  Duration,
  Effect,
  Exit,
  HashSet,
  Layer,
  Redacted,
  Stream
} from "effect"
import { ChatCompletions } from "../src/index.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { apiKey, stream } from "./support/provider.js"
import * as Replies from "./support/replies.js"

interface Sent {
  readonly url: string
  readonly authorization: string | undefined
  readonly body: { readonly [key: string]: unknown }
}

/** An `HttpClient` that records each request and answers with a DeepSeek stream. */
const recordingClient = (sent: Array<Sent>) =>
  Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((request, url) =>
      Effect.sync(() => {
        const text = request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : "{}"
        sent.push({ url: url.toString(), authorization: request.headers.authorization, body: JSON.parse(text) })
        const body = Fixtures.deepSeekStream({ content: ["ok"] }).join("")
        return HttpClientResponse.fromWeb(
          request,
          new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })
        )
      })
    )
  )

const buildError = (options: ChatCompletions.Options) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(
      Layer.build(ChatCompletions.layer(options).pipe(Layer.provide(NodeHttpClient.layer)))
    )
    assert.isTrue(Exit.isFailure(exit), `accepted ${JSON.stringify(options)}`)
    if (Exit.isSuccess(exit)) return assert.fail("expected a configuration error")
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "None") return assert.fail(Cause.pretty(exit.cause))
    return failure.value
  })

const toolTurn = Prompt.fromMessages([
  Prompt.userMessage({ content: [Prompt.textPart({ text: "read a.txt" })] }),
  Prompt.assistantMessage({
    content: [
      Prompt.reasoningPart({ text: "Read it." }),
      Prompt.toolCallPart({ id: "c1", name: "read_file", params: { path: "a.txt" }, providerExecuted: false })
    ]
  }),
  Prompt.toolMessage({
    content: [
      Prompt.toolResultPart({ id: "c1", name: "read_file", isFailure: false, result: "alpha", providerExecuted: false })
    ]
  })
])

describe("configuration", () => {
  it.scoped("DeepSeek by default: its URL and model, thinking enabled and sent, the reasoning rule on", () =>
    Effect.gen(function*() {
      const sent: Array<Sent> = []
      const context = yield* Layer.build(
        ChatCompletions.layer({ apiKey: Redacted.make(apiKey), temperature: 0.5 }).pipe(
          Layer.provide(recordingClient(sent))
        )
      )
      const model = Context.get(context, LanguageModel.LanguageModel)
      yield* stream(model, toolTurn)
      const [request] = sent
      assert.strictEqual(request?.url, "https://api.deepseek.com/chat/completions")
      assert.strictEqual(request?.authorization, `Bearer ${apiKey}`)
      assert.strictEqual(request?.body.model, "deepseek-v4-flash")
      assert.deepStrictEqual(request?.body.thinking, { type: "enabled" })
      assert.strictEqual(request?.body.temperature, undefined)
      assert.deepStrictEqual((request?.body.messages as ReadonlyArray<unknown>)[1], {
        role: "assistant",
        content: null,
        reasoning_content: "Read it.",
        tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a.txt\"}" } }]
      })
    }))

  it.scoped("the model preset provides a LanguageModel for a named model", () =>
    Effect.gen(function*() {
      const sent: Array<Sent> = []
      yield* LanguageModel.streamText({ prompt: "hi" }).pipe(
        Stream.runDrain,
        Effect.provide(ChatCompletions.model("deepseek-v4-pro", { apiKey: Redacted.make(apiKey) })),
        Effect.provide(recordingClient(sent))
      )
      assert.strictEqual(sent[0]?.body.model, "deepseek-v4-pro")
    }))

  it.scoped("DeepSeek without an API key is a configuration error that says what to do", () =>
    Effect.gen(function*() {
      const error = yield* buildError({})
      assert.strictEqual(error.reason, "MissingApiKey")
      assert.include(error.message, "https://api.deepseek.com")
      assert.include(error.message, "LLM_API_KEY")
    }))

  it.scoped("invalid options are refused with the option named", () =>
    Effect.gen(function*() {
      const local = { baseUrl: "http://127.0.0.1:1" }
      const cases: ReadonlyArray<readonly [ChatCompletions.Options, string]> = [
        [{ baseUrl: "ftp://example.com" }, "baseUrl"],
        [{ baseUrl: "not a url" }, "baseUrl"],
        [{ ...local, model: " " }, "model"],
        [{ ...local, apiKey: Redacted.make("") }, "apiKey"],
        [{ ...local, maxOutputTokens: 0 }, "maxOutputTokens"],
        [{ ...local, maxOutputTokens: 1.5 }, "maxOutputTokens"],
        [{ ...local, temperature: 3 }, "temperature"],
        [{ ...local, topP: 0 }, "topP"],
        [{ ...local, headers: { "bad header": "x" } }, "headers"],
        [{ ...local, headers: { "X-A": "a\r\nb" } }, "headers"],
        [{ ...local, requestTimeout: 0 }, "requestTimeout"],
        // Not a `DurationInput` (as untyped input would be): the cast is the point of the case.
        [{ ...local, idleTimeout: "soon" as Duration.DurationInput }, "idleTimeout"],
        [{ ...local, retry: { maxRetries: -1 } }, "retry.maxRetries"],
        [{ ...local, retry: { baseDelay: -5 } }, "retry.baseDelay"]
      ]
      for (const [options, option] of cases) {
        const error = yield* buildError(options)
        assert.strictEqual(error.option, option, JSON.stringify(options))
      }
    }))

  it.scoped("a refused option is named with what was wrong with it", () =>
    Effect.gen(function*() {
      const local = { baseUrl: "http://127.0.0.1:1" }
      const cases: ReadonlyArray<readonly [ChatCompletions.Options, string]> = [
        [{ baseUrl: "ftp://example.com" }, "baseUrl must be an http(s) URL, got \"ftp://example.com\""],
        [{ ...local, maxOutputTokens: 1.5 }, "maxOutputTokens must be a positive integer, got 1.5"],
        [{ ...local, topP: 0 }, "topP must be in (0, 1]"],
        [{ ...local, headers: { "bad header": "x" } }, "headers \"bad header\" is not a header name"],
        [{ ...local, headers: { "X-A": "a\r\nb" } }, "headers (X-A) contains a line break"],
        [{ ...local, body: { n: 2 } }, "body has n other than 1"],
        [{ ...local, deadline: -1 }, "deadline must be a positive finite duration"],
        [{ ...local, retry: { maxRetries: -1 } }, "retry.maxRetries must be a non-negative integer, got -1"],
        [{ ...local, retry: { maxDelay: "soon" as Duration.DurationInput } }, "retry.maxDelay must be a non-negative"],
        [{ ...local, retry: { deadline: 0 } }, "retry.deadline must be a positive finite duration"],
        [{ ...local, maxReplyBytes: 0 }, "maxReplyBytes must be a positive integer, got 0"]
      ]
      for (const [options, message] of cases) {
        const error = yield* buildError(options)
        assert.strictEqual(error.reason, "InvalidOption")
        assert.include(error.message, message)
      }
    }))

  it.effect("configSettings describes exactly the keys config reads, each once", () =>
    Effect.gen(function*() {
      const read = new Set<string>()
      const recording = ConfigProvider.fromFlat(ConfigProvider.makeFlat({
        load: (path) => {
          read.add(path.join("_"))
          return Effect.fail(ConfigError.MissingData([...path], "not set"))
        },
        enumerateChildren: () => Effect.succeed(HashSet.empty()),
        patch: ConfigProviderPathPatch.empty
      }))
      const options = yield* ChatCompletions.config.pipe(Effect.withConfigProvider(recording))
      const keys = ChatCompletions.configSettings.map((setting) => setting.key)
      assert.strictEqual(new Set(keys).size, keys.length)
      assert.deepStrictEqual([...read].sort(), [...keys].sort())
      for (const setting of ChatCompletions.configSettings) assert.isAbove(setting.description.length, 10, setting.key)
      // Nothing set: the described defaults are the ones applied.
      assert.deepStrictEqual(
        [options.baseUrl, options.model, options.maxTokensParameter, options.retry?.maxRetries],
        [ChatCompletions.deepSeekBaseUrl, ChatCompletions.defaultModel, "max_tokens", 2]
      )
    }))

  it.scoped("a keyless local server needs no key", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      yield* server.reply(Replies.sse(Fixtures.openAiStream({ content: ["ok"] })))
      const context = yield* Layer.build(
        ChatCompletions.layer({ baseUrl: `${server.baseUrl}/v1`, model: "qwen3:8b" }).pipe(
          Layer.provide(NodeHttpClient.layer)
        )
      )
      yield* stream(Context.get(context, LanguageModel.LanguageModel), "hi")
      const request = yield* server.takeRequest
      assert.strictEqual(request.headers.authorization, undefined)
      assert.strictEqual(request.body.model, "qwen3:8b")
    }))

  it.scoped("layerConfig reads the standard keys", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      yield* server.reply(Replies.sse(Fixtures.openAiStream({ content: ["ok"] })))
      const provider = ConfigProvider.fromMap(
        new Map([
          ["LLM_BASE_URL", `${server.baseUrl}/v1`],
          ["LLM_MODEL", "gpt-5-mini"],
          ["LLM_API_KEY", apiKey],
          ["LLM_MAX_OUTPUT_TOKENS", "512"],
          ["LLM_MAX_TOKENS_PARAMETER", "max_completion_tokens"],
          ["LLM_TEMPERATURE", "0.2"],
          ["LLM_TOP_P", "0.5"],
          ["LLM_REASONING_EFFORT", "minimal"],
          ["LLM_HEADERS", "{\"X-Title\":\"harness\"}"],
          ["LLM_BODY", "{\"seed\":1,\"metadata\":{\"run\":\"t\"}}"],
          ["LLM_REQUEST_TIMEOUT", "30 seconds"],
          ["LLM_IDLE_TIMEOUT", "45 seconds"],
          ["LLM_MAX_RETRIES", "0"],
          ["LLM_RETRY_BASE_DELAY", "100 millis"],
          ["LLM_RETRY_MAX_DELAY", "5 seconds"]
        ]),
        // The configuration is nested under `LLM`: a flat map names its keys with `_` between the parts.
        { pathDelim: "_" }
      )
      const context = yield* Layer.build(
        ChatCompletions.layerConfig().pipe(
          Layer.provide(NodeHttpClient.layer),
          Layer.provide(Layer.setConfigProvider(provider))
        )
      )
      yield* stream(Context.get(context, LanguageModel.LanguageModel), "hi")
      const request = yield* server.takeRequest
      assert.strictEqual(request.path, "/v1/chat/completions")
      assert.strictEqual(request.headers.authorization, `Bearer ${apiKey}`)
      assert.strictEqual(request.headers["x-title"], "harness")
      assert.deepStrictEqual(
        [
          request.body.model,
          request.body.max_completion_tokens,
          request.body.temperature,
          request.body.top_p,
          request.body.reasoning_effort,
          request.body.seed,
          request.body.metadata,
          request.body.thinking
        ],
        ["gpt-5-mini", 512, 0.2, 0.5, "minimal", 1, { run: "t" }, undefined]
      )
    }))

  it.effect("config reads LLM_RETRY_DEADLINE into retry.deadline; unset, there is none", () =>
    Effect.gen(function*() {
      const read = (entries: ReadonlyArray<readonly [string, string]>) =>
        ChatCompletions.config.pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(entries), { pathDelim: "_" }))
        )
      const set = yield* read([["LLM_RETRY_DEADLINE", "2 minutes"]])
      assert.deepStrictEqual(set.retry?.deadline, Duration.minutes(2))
      const unset = yield* read([])
      assert.strictEqual(unset.retry?.deadline, undefined)
    }))

  it.scoped("layerConfig: a missing DeepSeek key is MissingData, a bad value InvalidData", () =>
    Effect.gen(function*() {
      const attempt = (entries: ReadonlyArray<readonly [string, string]>) =>
        Effect.exit(Layer.build(
          ChatCompletions.layerConfig().pipe(
            Layer.provide(NodeHttpClient.layer),
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries), { pathDelim: "_" })))
          )
        ))
      const missing = yield* attempt([])
      assert.isTrue(Exit.isFailure(missing))
      if (Exit.isFailure(missing)) {
        const pretty = Cause.pretty(missing.cause)
        assert.include(pretty, "Missing data at apiKey")
        assert.include(pretty, "LLM_API_KEY")
      }
      const badJson = yield* attempt([["LLM_BASE_URL", "http://127.0.0.1:1"], ["LLM_BODY", "[1]"]])
      assert.isTrue(Exit.isFailure(badJson))
      if (Exit.isFailure(badJson)) assert.include(Cause.pretty(badJson.cause), "LLM_BODY must be a JSON object")
      const badLiteral = yield* attempt([["LLM_BASE_URL", "http://127.0.0.1:1"], ["LLM_THINKING", "maybe"]])
      assert.isTrue(Exit.isFailure(badLiteral))
    }))
})
