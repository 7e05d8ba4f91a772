/**
 * Response mappings over real HTTP: SSE chunks in the DeepSeek and OpenAI wire formats → `@effect/ai` stream parts
 * (through `LanguageModel`, so every part also passes its decoding), and non-streamed completions → parts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChatCompletions } from "../src/index.js"
import * as Fixtures from "./support/fixtures.js"
import {
  failedStream,
  failing,
  finishFacts,
  serverAndModel,
  shape,
  stream,
  streamUntilFailure,
  Tools,
  ToolsLayer
} from "./support/provider.js"
import * as Replies from "./support/replies.js"

/** The server and model of these tests: thinking mode on unless `options` say otherwise. */
const setup = (options: ChatCompletions.Options = {}) => serverAndModel({ thinking: "enabled", ...options })

/** The `shape` of one streamed block: its start, one delta per piece, its end. */
const streamed = (kind: "text" | "reasoning", id: string, ...deltas: ReadonlyArray<string>) => [
  { type: `${kind}-start`, id },
  ...deltas.map((delta) => ({ type: `${kind}-delta`, id, delta })),
  { type: `${kind}-end`, id }
]

describe("streaming", () => {
  it.scoped("DeepSeek thinking mode: reasoning then text, finish with usage and cache tokens", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({
        reasoning: ["The user ", "greets me."],
        content: ["Hel", "lo!"]
      })))
      const parts = yield* stream(model, "hi")
      assert.deepStrictEqual(shape(parts), [
        ...streamed("reasoning", "reasoning-1", "The user ", "greets me."),
        ...streamed("text", "text-2", "Hel", "lo!"),
        {
          type: "finish",
          reason: "stop",
          usage: { inputTokens: 120, outputTokens: 48, totalTokens: 168, reasoningTokens: 30, cachedInputTokens: 64 }
        }
      ])
      assert.deepStrictEqual(finishFacts(parts), {
        finishReason: "stop",
        promptCacheHitTokens: 64,
        promptCacheMissTokens: 56
      })
      const metadata = parts[0]
      assert.strictEqual(metadata?.type, "response-metadata")
    }))

  it.scoped("OpenAI format: the usage arrives in a last chunk with no choices", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup({ thinking: undefined })
      yield* server.reply(Replies.sse(Fixtures.openAiStream({ content: ["Hi", " there"] })))
      const parts = yield* stream(model, "hi")
      assert.deepStrictEqual(shape(parts), [
        ...streamed("text", "text-1", "Hi", " there"),
        {
          type: "finish",
          reason: "stop",
          usage: { inputTokens: 35, outputTokens: 12, totalTokens: 47, reasoningTokens: 0, cachedInputTokens: 16 }
        }
      ])
    }))

  it.scoped("tool-call fragments split mid-JSON are assembled per index; the raw text is kept verbatim", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({
        reasoning: ["Read it."],
        toolCalls: [{ id: "call_00_abc", name: "read_file", fragments: ["{\"pa", "th\": \"", "a.txt\"", "}"] }]
      })))
      const parts = yield* stream(model, "read a.txt")
      assert.deepStrictEqual(shape(parts), [
        { type: "reasoning-start", id: "reasoning-1" },
        { type: "reasoning-delta", id: "reasoning-1", delta: "Read it." },
        { type: "reasoning-end", id: "reasoning-1" },
        { type: "tool-params-start", id: "call_00_abc", name: "read_file", providerExecuted: false },
        { type: "tool-params-delta", id: "call_00_abc", delta: "{\"pa" },
        { type: "tool-params-delta", id: "call_00_abc", delta: "th\": \"" },
        { type: "tool-params-delta", id: "call_00_abc", delta: "a.txt\"" },
        { type: "tool-params-delta", id: "call_00_abc", delta: "}" },
        { type: "tool-params-end", id: "call_00_abc" },
        { type: "tool-call", id: "call_00_abc", name: "read_file", params: { path: "a.txt" }, providerExecuted: false },
        {
          type: "finish",
          reason: "tool-calls",
          usage: { inputTokens: 120, outputTokens: 48, totalTokens: 168, reasoningTokens: 30, cachedInputTokens: 64 }
        }
      ])
      const call = parts.find((part) => part.type === "tool-call")
      assert.deepStrictEqual(call?.metadata["harness"], { rawArguments: "{\"path\": \"a.txt\"}" })
    }))

  it.scoped("parallel tool calls (OpenAI format) keep their order; empty argument text means {}", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup({ thinking: undefined })
      yield* server.reply(Replies.sse(Fixtures.openAiStream({
        toolCalls: [
          { id: "call_1", name: "read_file", fragments: ["{\"path\":", "\"a.txt\"}"] },
          { id: "call_2", name: "list_dir", fragments: [] }
        ]
      })))
      const parts = yield* stream(model, "go")
      assert.deepStrictEqual(shape(parts).slice(0, -1), [
        { type: "tool-params-start", id: "call_1", name: "read_file", providerExecuted: false },
        { type: "tool-params-delta", id: "call_1", delta: "{\"path\":" },
        { type: "tool-params-delta", id: "call_1", delta: "\"a.txt\"}" },
        { type: "tool-params-start", id: "call_2", name: "list_dir", providerExecuted: false },
        { type: "tool-params-end", id: "call_1" },
        { type: "tool-params-end", id: "call_2" },
        { type: "tool-call", id: "call_1", name: "read_file", params: { path: "a.txt" }, providerExecuted: false },
        { type: "tool-call", id: "call_2", name: "list_dir", params: {}, providerExecuted: false }
      ])
    }))

  it.scoped("whole tool calls in one chunk without an index (Ollama style) are told apart by id", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup({ thinking: undefined })
      yield* server.reply(Replies.sse([
        Fixtures.frame({
          id: "chatcmpl-1",
          object: "chat.completion.chunk",
          created: 1767411028,
          model: "qwen3:8b",
          choices: [{
            index: 0,
            delta: {
              role: "assistant",
              content: "",
              tool_calls: [
                { id: "call_x", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a\"}" } },
                { id: "call_y", type: "function", function: { name: "list_dir", arguments: "{}" } }
              ]
            },
            finish_reason: "tool_calls"
          }]
        }),
        Fixtures.done
      ]))
      const parts = yield* stream(model, "go")
      assert.deepStrictEqual(
        parts.flatMap((part) => (part.type === "tool-call" ? [[part.id, part.name, part.params]] : [])),
        [["call_x", "read_file", { path: "a" }], ["call_y", "list_dir", {}]]
      )
    }))

  it.scoped("an unadvertised tool, non-object or invalid arguments: params parts only, no tool-call, no failure", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({
        toolCalls: [
          { id: "call_a", name: "delete_everything", fragments: ["{}"] },
          { id: "call_b", name: "read_file", fragments: ["[1,", "2]"] },
          { id: "call_c", name: "read_file", fragments: ["{\"path\": "] }
        ]
      })))
      const parts = yield* stream(model, "go")
      assert.deepStrictEqual(parts.filter((part) => part.type === "tool-call"), [])
      assert.deepStrictEqual(
        parts.flatMap((part) => (part.type === "tool-params-start" ? [[part.id, part.name]] : [])),
        [["call_a", "delete_everything"], ["call_b", "read_file"], ["call_c", "read_file"]]
      )
      assert.deepStrictEqual(
        parts.flatMap((part) => (part.type === "tool-params-end" ? [part.id] : [])),
        ["call_a", "call_b", "call_c"]
      )
      assert.deepStrictEqual(finishFacts(parts), {
        finishReason: "tool_calls",
        promptCacheHitTokens: 64,
        promptCacheMissTokens: 56,
        invalidToolCalls: [
          { id: "call_a", name: "delete_everything", rawArguments: "{}" },
          { id: "call_b", name: "read_file", rawArguments: "[1,2]" },
          { id: "call_c", name: "read_file", rawArguments: "{\"path\": " }
        ]
      })
    }))

  it.scoped("finish reasons: length, content_filter (even without content), anything else is other", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(
        Replies.sse(Fixtures.deepSeekStream({ content: ["cut sh"], finishReason: "length" })),
        Replies.sse(Fixtures.deepSeekStream({ finishReason: "content_filter" })),
        Replies.sse(Fixtures.deepSeekStream({ content: ["x"], finishReason: "eos" }))
      )
      const reasons: Array<string> = []
      for (let i = 0; i < 3; i++) {
        const parts = yield* stream(model, "go")
        const finish = parts.find((part) => part.type === "finish")
        reasons.push(finish?.type === "finish" ? finish.reason : "missing")
      }
      assert.deepStrictEqual(reasons, ["length", "content-filter", "other"])
    }))

  it.scoped("insufficient_system_resource is an OVERLOADED failure", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(
        Replies.sse(Fixtures.deepSeekStream({ content: ["partial"], finishReason: "insufficient_system_resource" }))
      )
      const { error, parts } = yield* streamUntilFailure(model, "go")
      assert.deepStrictEqual(shape(parts).map((part) => part.type), [
        "text-start",
        "text-delta"
      ])
      if (error === undefined) return assert.fail("the stream did not fail")
      const { failure } = yield* failing(Effect.fail(error))
      assert.strictEqual(failure.code, "OVERLOADED")
    }))

  it.scoped("a completed response with nothing in it is EMPTY_RESPONSE", () =>
    Effect.gen(function*() {
      const { failure } = yield* failedStream(yield* setup(), Replies.sse(Fixtures.deepSeekStream({})), "go")
      assert.strictEqual(failure.code, "EMPTY_RESPONSE")
    }))

  it.scoped("a stream that closes before [DONE] is MALFORMED", () =>
    Effect.gen(function*() {
      const { error, failure } = yield* failedStream(
        yield* setup(),
        Replies.sse(Fixtures.deepSeekStream({ content: ["Hello"], withDone: false })),
        "go"
      )
      assert.strictEqual(failure.code, "MALFORMED")
      assert.strictEqual(error._tag, "MalformedOutput")
      assert.include(failure.message, "[DONE]")
    }))

  it.scoped("a chunk that is not valid JSON is MALFORMED", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      const frames = Fixtures.deepSeekStream({ content: ["Hello"] })
      yield* server.reply(Replies.sse([...frames.slice(0, 2), "data: {\"id\": \"x\", \"choices\": [{\"delta\n\n"]))
      const { failure } = yield* failing(stream(model, "go"))
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "not a valid chat.completion.chunk")
    }))

  it.scoped("SSE frames split anywhere across writes, with keep-alive comments, decode the same", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      const whole = Fixtures.deepSeekStream({ reasoning: ["r"], content: ["a", "b"] }).join(Fixtures.keepAlive)
      const pieces: Array<string> = []
      for (let at = 0; at < whole.length; at += 7) pieces.push(whole.slice(at, at + 7))
      yield* server.reply(Replies.sse(pieces))
      const parts = yield* stream(model, "go")
      assert.deepStrictEqual(
        shape(parts).flatMap((part) => (typeof part.delta === "string" ? [part.delta] : [])),
        ["r", "a", "b"]
      )
    }))

  it.scoped("a multi-byte character split across writes decodes intact", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      const bytes = new TextEncoder().encode(Fixtures.deepSeekStream({ content: ["héllo 🌍 ok"] }).join(""))
      const at = bytes.indexOf(0xf0) + 2 // inside the four bytes of the emoji
      yield* server.reply(Replies.sse([bytes.slice(0, at), bytes.slice(at)]))
      const parts = yield* stream(model, "go")
      assert.deepStrictEqual(
        parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : [])),
        ["héllo 🌍 ok"]
      )
    }))

  it.scoped("an error object inside the stream is a SERVER failure", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(Replies.sse([
        Fixtures.frame({ error: { message: "upstream provider crashed", code: 502 } }),
        Fixtures.done
      ]))
      const { failure } = yield* failing(stream(model, "go"))
      assert.strictEqual(failure.code, "SERVER")
      assert.include(failure.message, "upstream provider crashed")
    }))
})

describe("generateText (non-streaming)", () => {
  it.scoped("maps reasoning, text, tool calls and usage; sends no stream fields", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(Replies.json(
        200,
        Fixtures.deepSeekCompletion({
          content: "Reading it.",
          reasoning_content: "I should read the file.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a.txt\"}" } },
            { id: "call_2", type: "function", function: { name: "nope", arguments: "{}" } }
          ]
        }, "tool_calls")
      ))
      const response = yield* model.generateText({
        prompt: "read a.txt",
        toolkit: Tools,
        disableToolCallResolution: true
      }).pipe(Effect.provide(ToolsLayer))
      assert.deepStrictEqual(shape(response.content), [
        { type: "reasoning", text: "I should read the file." },
        { type: "text", text: "Reading it." },
        { type: "tool-call", id: "call_1", name: "read_file", params: { path: "a.txt" }, providerExecuted: false },
        {
          type: "finish",
          reason: "tool-calls",
          usage: { inputTokens: 120, outputTokens: 48, totalTokens: 168, reasoningTokens: 30, cachedInputTokens: 64 }
        }
      ])
      assert.deepStrictEqual(finishFacts(response.content), {
        finishReason: "tool_calls",
        promptCacheHitTokens: 64,
        promptCacheMissTokens: 56,
        invalidToolCalls: [{ id: "call_2", name: "nope", rawArguments: "{}" }]
      })
      const [request] = yield* server.requests
      assert.strictEqual(request?.body.stream, undefined)
      assert.strictEqual(request?.body.stream_options, undefined)
      assert.strictEqual(request?.headers.accept, "application/json")
    }))

  it.scoped("an empty completion is EMPTY_RESPONSE; a body that is not JSON is MALFORMED", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup()
      yield* server.reply(
        Replies.json(200, Fixtures.deepSeekCompletion({ content: "" })),
        (_, response) => {
          response.writeHead(200, { "content-type": "application/json" })
          response.end("\n\n{\"choices\": [")
        }
      )
      const empty = yield* failing(model.generateText({ prompt: "go" }))
      assert.strictEqual(empty.failure.code, "EMPTY_RESPONSE")
      const broken = yield* failing(model.generateText({ prompt: "go" }))
      assert.strictEqual(broken.failure.code, "MALFORMED")
    }))
})
