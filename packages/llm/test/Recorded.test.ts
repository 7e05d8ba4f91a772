/**
 * The stream fixture suite (ADR 0011): complete response bodies in the OpenAI and DeepSeek wire formats
 * (`fixtures/streams/`, provenance in its SOURCES.md) replayed byte for byte — whole, one byte per chunk (every byte
 * boundary a chunk boundary, UTF-8 code points and CRLF pairs cut in half), and over real HTTP whole and one byte
 * per write — through the provider and `LanguageModel`. Every replay must give the same outcome: the text, the
 * reasoning, the tool calls, the finish and usage, or the typed failure.
 */
import type { AiError, Response } from "@effect/ai"
import { LanguageModel, Prompt } from "@effect/ai"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure, ModelStream } from "@harness/domain"
import type { Tracer } from "effect"
import { Context, Effect, Either, Layer, Option, Redacted, Stream } from "effect"
import { readFileSync } from "node:fs"
import { ChatCompletions } from "../src/index.js"
import * as FakeServer from "./support/FakeServer.js"
import type { Reply } from "./support/FakeServer.js"
import { apiKey, languageModel, streamUntilFailure, Tools, ToolsLayer } from "./support/provider.js"

const fixture = (name: string): Uint8Array =>
  new Uint8Array(readFileSync(new URL(`./fixtures/streams/${name}`, import.meta.url)))

/** What a caller (the agent) makes of a response. */
interface Outcome {
  readonly model?: string | undefined
  readonly text: string
  readonly reasoning: string
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly params: unknown }>
  readonly finish?: string | undefined
  readonly usage?: unknown
  readonly failure?: { readonly code: string; readonly message: string } | undefined
}

const outcome = (parts: ReadonlyArray<Response.AnyPart>, error: AiError.AiError | undefined): Outcome => {
  const finish = parts.find((part) => part.type === "finish")
  const failure = error === undefined ? undefined : LlmFailure.failureOf(error, 0)
  return {
    model: parts.flatMap((part) => (part.type === "response-metadata" ? [Option.getOrUndefined(part.modelId)] : []))[0],
    text: parts.map((part) => (part.type === "text-delta" ? part.delta : "")).join(""),
    reasoning: parts.map((part) => (part.type === "reasoning-delta" ? part.delta : "")).join(""),
    calls: parts.flatMap((part) =>
      part.type === "tool-call"
        ? [{ id: part.id, name: part.name, params: JSON.parse(JSON.stringify(part.params)) }]
        : []
    ),
    finish: finish?.type === "finish" ? finish.reason : undefined,
    usage: finish?.type === "finish" ? JSON.parse(JSON.stringify(finish.usage)) : undefined,
    failure: failure === undefined ? undefined : { code: failure.code, message: failure.message }
  }
}

const expected: ReadonlyArray<readonly [string, Outcome]> = [
  ["openai-text-usage.sse", {
    model: "gpt-4o-mini-2024-07-18",
    text: "Bonjour le monde — héllo 世界!",
    reasoning: "",
    calls: [],
    finish: "stop",
    usage: { inputTokens: 19, outputTokens: 9, totalTokens: 28, reasoningTokens: 0, cachedInputTokens: 0 }
  }],
  ["openai-parallel-tools.sse", {
    model: "gpt-4o-mini-2024-07-18",
    text: "",
    reasoning: "",
    calls: [
      { id: "call_h3Kq9WmZ", name: "read_file", params: { path: "a.txt" } },
      { id: "call_P0xT2bYe", name: "list_dir", params: {} }
    ],
    finish: "tool-calls",
    usage: { inputTokens: 88, outputTokens: 41, totalTokens: 129, reasoningTokens: 0, cachedInputTokens: 64 }
  }],
  ["openai-refusal.sse", {
    text: "",
    reasoning: "",
    calls: [],
    failure: { code: "CONTENT_FILTER", message: "the model refused: I'm sorry, but I can't help with that." }
  }],
  ["openai-n3.sse", {
    model: "gpt-4o-mini-2024-07-18",
    text: "Hello there",
    reasoning: "",
    calls: [],
    finish: "stop",
    usage: { inputTokens: 12, outputTokens: 18, totalTokens: 30 }
  }],
  ["deepseek-thinking-tool-call.sse", {
    model: "deepseek-v4-flash",
    text: "",
    reasoning: "The user wants a.txt; I should read it.",
    calls: [{ id: "call_00_Xk7pQ2rLm9", name: "read_file", params: { path: "a.txt" } }],
    finish: "tool-calls",
    usage: { inputTokens: 310, outputTokens: 42, totalTokens: 352, reasoningTokens: 17, cachedInputTokens: 256 }
  }],
  ["deepseek-text-crlf.sse", {
    model: "deepseek-v4-flash",
    text: "Two plus two is 4.",
    reasoning: "",
    calls: [],
    finish: "stop",
    usage: { inputTokens: 14, outputTokens: 5, totalTokens: 19, cachedInputTokens: 0 }
  }],
  // Shapes seen in public recordings (SOURCES.md): `usage: null` on every chunk, a `finish_reason` already on the
  // role chunk, and a body that ends right after `data: [DONE]` with no blank line (openai-node dispatches it).
  ["openai-done-without-final-newline.sse", {
    model: "gpt-4o-2024-05-13",
    text: "Sure! The answer is 42.",
    reasoning: "",
    calls: [],
    finish: "stop",
    usage: { inputTokens: 11, outputTokens: 8, totalTokens: 19 }
  }],
  // A body that ends after the finish chunk and the usage-only chunk without `[DONE]`: by the provider's contract
  // (ADR 0011) a stream without `[DONE]` is truncated, so this is a MALFORMED failure and no tool call is run.
  ["openai-tool-call-without-done.sse", {
    model: "gpt-4-turbo-2024-04-09",
    text: "",
    reasoning: "",
    calls: [],
    failure: { code: "MALFORMED", message: "the stream closed before [DONE]" }
  }],
  // DeepSeek behind Azure: `content_filter_results`, an empty fingerprint, a tool call named alone then given its
  // arguments whole (with `type`, without `id`), `*_tokens_details: null`.
  ["deepseek-azure-tool-call.sse", {
    model: "DeepSeek-V3.2-Exp",
    text: "我先读取这个文件。",
    reasoning: "",
    calls: [{ id: "call_3e9a1f7c2b5d4e8f9a0b1c2d", name: "read_file", params: { path: "a.txt" } }],
    finish: "tool-calls",
    usage: { inputTokens: 402, outputTokens: 48, totalTokens: 450 }
  }]
]

/**
 * A response body that hands out `chunks` as they are read, one each, and lets the event loop turn every 256 of them.
 * Read from memory, a body is all promises (microtasks): replayed byte by byte on a loaded machine it kept the test
 * worker from its timers for minutes, so vitest's RPC deadline passed ("Timeout calling onTaskUpdate") and the run
 * failed, and the test's own timeout could not fire.
 */
const bodyOf = (chunks: ReadonlyArray<Uint8Array>) => {
  let next = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next > 0 && next % 256 === 0) await new Promise((resolve) => setImmediate(resolve))
      if (next < chunks.length) controller.enqueue(chunks[next++]!)
      else controller.close()
    }
  })
}

/**
 * The provider (its `LanguageModel` and `ModelStream`) over an in-memory `HttpClient` whose response body arrives
 * as exactly these chunks.
 */
const inMemoryContext = (chunks: ReadonlyArray<Uint8Array>) =>
  Layer.build(
    ChatCompletions.layer({
      baseUrl: "http://fixtures.invalid/v1",
      apiKey: Redacted.make(apiKey),
      retry: { maxRetries: 0 }
    }).pipe(Layer.provide(Layer.succeed(
      HttpClient.HttpClient,
      HttpClient.make((request) =>
        Effect.sync(() =>
          HttpClientResponse.fromWeb(
            request,
            new globalThis.Response(
              bodyOf(chunks),
              { status: 200, headers: { "content-type": "text/event-stream; charset=utf-8" } }
            )
          )
        )
      )
    )))
  ).pipe(Effect.orDie)

const inMemory = (chunks: ReadonlyArray<Uint8Array>) =>
  Effect.map(inMemoryContext(chunks), (context) => Context.get(context, LanguageModel.LanguageModel))

// Through JSON so that absent and `undefined` fields compare equal.
const replay = (model: LanguageModel.Service) =>
  Effect.map(
    streamUntilFailure(model, "hi"),
    ({ error, parts }): Outcome => JSON.parse(JSON.stringify(outcome(parts, error)))
  )

const perByte = (bytes: Uint8Array): ReadonlyArray<Uint8Array> => Array.from(bytes, (byte) => Uint8Array.of(byte))

/** A reply writing the chunks one write each (flushed in turn), then ending. */
const writes = (chunks: ReadonlyArray<Uint8Array>): Reply => (_, response) => {
  response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" })
  response.flushHeaders()
  const from = (index: number): void => {
    if (index >= chunks.length) return void response.end()
    response.write(chunks[index], () => from(index + 1))
  }
  from(0)
}

/**
 * The bound for a replay byte by byte: CPU-bound and deterministic, a few seconds on a quiet machine and up to half a
 * minute on a loaded one, so vitest's default 30 s would make the outcome the machine's speed.
 */
const slow = 180_000

describe("recorded-format streams, replayed byte for byte", () => {
  for (const [name, want] of expected) {
    it.scoped(`${name}: whole, and one byte per chunk (every byte boundary)`, () =>
      Effect.gen(function*() {
        const bytes = fixture(name)
        assert.deepStrictEqual(yield* replay(yield* inMemory([bytes])), want)
        assert.deepStrictEqual(yield* replay(yield* inMemory(perByte(bytes))), want)
      }), { timeout: slow })

    it.scoped(`${name}: over real HTTP, whole and one byte per write`, () =>
      Effect.gen(function*() {
        const bytes = fixture(name)
        const server = yield* FakeServer.make
        const model = yield* languageModel(server, { retry: { maxRetries: 0 } })
        yield* server.reply(writes([bytes]), writes(perByte(bytes)))
        assert.deepStrictEqual(yield* replay(model), want)
        assert.deepStrictEqual(yield* replay(model), want)
      }), { timeout: slow })
  }
})

describe("a body that ends early", () => {
  it.scoped(
    "cut anywhere before its finish_reason, a stream is a MALFORMED failure, never a short success",
    () =>
      Effect.gen(function*() {
        for (
          const name of ["openai-text-usage.sse", "openai-tool-call-without-done.sse", "deepseek-azure-tool-call.sse"]
        ) {
          const bytes = fixture(name)
          const text = new TextDecoder().decode(bytes)
          const finish =
            new TextEncoder().encode(text.slice(0, text.search(/"finish_reason":"(stop|tool_calls)"/))).length
          for (let cut = 0; cut < finish; cut += 101) {
            const got = yield* replay(yield* inMemory([bytes.slice(0, cut)]))
            assert.strictEqual(got.failure?.code, "MALFORMED", `${name} cut at byte ${cut}`)
            assert.isUndefined(got.finish, `${name} cut at byte ${cut}`)
          }
        }
      }),
    { timeout: 120_000 }
  )
})

// Every part as JSON with its own keys in order (the `assistant/chunk` the agent logs depends on both), and the
// failure, if any.
const exact = <E, R>(stream: Stream.Stream<object, E, R>) =>
  stream.pipe(
    Stream.either,
    Stream.runCollect,
    Effect.map((items) =>
      Array.from(items, (item) =>
        Either.isRight(item)
          ? { keys: Reflect.ownKeys(item.right).map(String), json: JSON.stringify(item.right) }
          : { failure: JSON.stringify(item.left) })
    )
  )

describe("ModelStream (ADR 0019): the provider's typed parts equal what LanguageModel decodes", () => {
  for (const [name] of expected) {
    it.scoped(
      `${name}: same parts, keys, order and failure through both interfaces, whole and byte by byte`,
      () =>
        Effect.gen(function*() {
          const bytes = fixture(name)
          for (const chunks of [[bytes], perByte(bytes)]) {
            const context = yield* inMemoryContext(chunks)
            const model = Context.get(context, LanguageModel.LanguageModel)
            const lower = Context.get(context, ModelStream.ModelStream)
            assert.strictEqual(lower.model, model, "the ModelStream names the LanguageModel it belongs to")
            const standard = yield* exact(
              model.streamText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true })
            ).pipe(Effect.provide(ToolsLayer))
            const options = (span: Tracer.Span) => ({
              prompt: Prompt.make("hi"),
              tools: Object.values(Tools.tools),
              toolChoice: "auto" as const,
              responseFormat: { type: "text" as const },
              span
            })
            const typed = yield* Effect.scoped(Effect.flatMap(
              Effect.makeSpanScoped("test"),
              (span) => exact(lower.streamText(options(span)))
            ))
            assert.isAbove(standard.length, 0)
            assert.deepStrictEqual(typed, standard)
            // The same response pulled (ADR 0083): the same parts and failure; a body read whole is one chunk.
            const pullText = lower.pullText
            assert.isDefined(pullText, "the provider offers its response as a pull")
            const pulls = yield* Effect.scoped(Effect.flatMap(
              Effect.makeSpanScoped("test"),
              (span) => Stream.fromPull(pullText!(options(span))).pipe(Stream.chunks, Stream.either, Stream.runCollect)
            ))
            const pulled = yield* Effect.scoped(Effect.flatMap(
              Effect.makeSpanScoped("test"),
              (span) => exact(Stream.fromPull(pullText!(options(span))))
            ))
            assert.deepStrictEqual(pulled, standard)
            if (chunks.length === 1) {
              // One read: one chunk, and one more at the end for a last event the body never dispatched (no blank line).
              const parts = standard.filter((item) => "json" in item).length
              const dispatched = /(\r?\n){2}$/.test(new TextDecoder().decode(bytes))
              const given = Array.from(pulls).filter(Either.isRight).length
              assert.strictEqual(given, parts === 0 ? 0 : dispatched ? 1 : 2, "every event of one read in one chunk")
            }
          }
        }),
      { timeout: slow }
    )
  }
})
