/**
 * Prompt → request over real HTTP: the fake server records what it receives and the tests check it — the DeepSeek
 * `reasoning_content` rule, raw argument text byte for byte, tool messages, advertised tools and `tool_choice`,
 * sampling parameters, extra headers and body fields, authentication.
 */
import { Prompt, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema, Stream } from "effect"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { apiKey, languageModel, ListDir, ReadFile, stream, Tools, ToolsLayer } from "./support/provider.js"
import * as Replies from "./support/replies.js"

const ok = Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] }))

/** A history as the agent derives it: reasoning kept on assistant messages, raw argument text in the options. */
const history = Prompt.fromMessages([
  Prompt.systemMessage({ content: "You are terse." }),
  Prompt.userMessage({ content: [Prompt.textPart({ text: "hi" })] }),
  Prompt.assistantMessage({
    content: [Prompt.reasoningPart({ text: "Greet back." }), Prompt.textPart({ text: "Hello!" })]
  }),
  Prompt.userMessage({ content: [Prompt.textPart({ text: "read a.txt, list the root" })] }),
  Prompt.assistantMessage({
    content: [
      Prompt.reasoningPart({ text: "I need " }),
      Prompt.reasoningPart({ text: "both." }),
      Prompt.textPart({ text: "Looking." }),
      Prompt.toolCallPart({
        id: "call_1",
        name: "read_file",
        params: { path: "a.txt" },
        providerExecuted: false,
        options: { harness: { rawArguments: "{\"path\":  \"a.txt\" , \"x\":1.0}" } }
      }),
      Prompt.toolCallPart({
        id: "call_2",
        name: "list_dir",
        params: {},
        providerExecuted: false,
        options: { harness: { rawArguments: "" } }
      })
    ]
  }),
  Prompt.toolMessage({
    content: [
      Prompt.toolResultPart({
        id: "call_1",
        name: "read_file",
        isFailure: false,
        result: "alpha",
        providerExecuted: false
      }),
      Prompt.toolResultPart({
        id: "call_2",
        name: "list_dir",
        isFailure: true,
        result: { error: "denied" },
        providerExecuted: false
      })
    ]
  }),
  // A call whose reasoning was never logged and whose raw text is not carried.
  Prompt.assistantMessage({
    content: [
      Prompt.toolCallPart({ id: "call_3", name: "read_file", params: { path: "b.txt" }, providerExecuted: false })
    ]
  }),
  Prompt.toolMessage({
    content: [
      Prompt.toolResultPart({
        id: "call_3",
        name: "read_file",
        isFailure: false,
        result: "beta",
        providerExecuted: false
      })
    ]
  })
])

const call = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } })

describe("requests", () => {
  it.scoped("thinking mode: reasoning_content goes back exactly on tool-call turns, raw arguments byte for byte", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { thinking: "enabled", temperature: 0.3, topP: 0.9 })
      yield* server.reply(ok)
      yield* stream(model, history)
      const request = yield* server.takeRequest
      assert.deepStrictEqual(request.body.messages, [
        { role: "system", content: "You are terse." },
        { role: "user", content: "hi" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "read a.txt, list the root" },
        {
          role: "assistant",
          content: "Looking.",
          reasoning_content: "I need both.",
          tool_calls: [
            call("call_1", "read_file", "{\"path\":  \"a.txt\" , \"x\":1.0}"),
            call("call_2", "list_dir", "{}")
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "alpha" },
        { role: "tool", tool_call_id: "call_2", content: "{\"error\":\"denied\"}" },
        {
          role: "assistant",
          content: null,
          reasoning_content: "",
          tool_calls: [call("call_3", "read_file", "{\"path\":\"b.txt\"}")]
        },
        { role: "tool", tool_call_id: "call_3", content: "beta" }
      ])
      // The raw text travels as a JSON string: its escaped form is in the bytes on the wire.
      assert.include(request.raw, JSON.stringify("{\"path\":  \"a.txt\" , \"x\":1.0}"))
      assert.deepStrictEqual(request.body.thinking, { type: "enabled" })
      assert.strictEqual(request.body.temperature, undefined)
      assert.strictEqual(request.body.top_p, undefined)
      assert.strictEqual(request.body.stream, true)
      assert.deepStrictEqual(request.body.stream_options, { include_usage: true })
    }))

  it.scoped("thinking disabled: no reasoning_content anywhere, sampling parameters sent", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { thinking: "disabled", temperature: 0.3, topP: 0.9 })
      yield* server.reply(ok)
      yield* stream(model, history)
      const request = yield* server.takeRequest
      assert.notInclude(request.raw, "reasoning_content")
      assert.deepStrictEqual(request.body.thinking, { type: "disabled" })
      assert.strictEqual(request.body.temperature, 0.3)
      assert.strictEqual(request.body.top_p, 0.9)
    }))

  it.scoped("outside DeepSeek with thinking unset: no thinking field, no reasoning_content", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.reply(ok)
      yield* stream(model, history)
      const request = yield* server.takeRequest
      assert.notInclude(request.raw, "reasoning_content")
      assert.strictEqual(request.body.thinking, undefined)
    }))

  it.scoped("tools are JSON Schema functions; a transport tool's jsonSchema annotation is what is advertised", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const real = {
        type: "object",
        properties: { path: { type: "string", description: "relative path" } },
        required: ["path"],
        additionalProperties: false
      }
      // What the agent advertises: parameters accept any object, annotated with the real JSON Schema.
      const Transport = Tool.make("read_file", { description: "Read a file" }).setParameters(
        Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
          jsonSchema: real
        })
      )
      const TransportKit = Toolkit.make(Transport)
      yield* server.reply(
        Replies.sse(Fixtures.deepSeekStream({
          toolCalls: [{ id: "c1", name: "read_file", fragments: ["{\"anything\":", " [1]}"] }]
        }))
      )
      const parts = yield* model.streamText({ prompt: "go", toolkit: TransportKit, disableToolCallResolution: true })
        .pipe(
          Stream.runCollect,
          Effect.provide(TransportKit.toLayer({ read_file: () => Effect.void }))
        )
      const request = yield* server.takeRequest
      assert.deepStrictEqual(request.body.tools, [
        { type: "function", function: { name: "read_file", description: "Read a file", parameters: real } }
      ])
      assert.strictEqual(request.body.tool_choice, "auto")
      const toolCall = Array.from(parts).find((part) => part.type === "tool-call")
      assert.deepStrictEqual(toolCall?.type === "tool-call" ? toolCall.params : undefined, { anything: [1] })
    }))

  it.scoped("no leaked refinement titles (\"title\": \"positive\") in advertised schemas; a property named title stays", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const Limited = Tool.make("head", {
        description: "First lines of a file",
        parameters: {
          title: Schema.String,
          lines: Schema.Int.pipe(Schema.positive()),
          ranges: Schema.optional(Schema.Array(Schema.Struct({ from: Schema.Number.pipe(Schema.positive()) })))
        }
      })
      const Kit = Toolkit.make(Limited)
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] })))
      yield* model.streamText({ prompt: "go", toolkit: Kit, disableToolCallResolution: true }).pipe(
        Stream.runDrain,
        Effect.provide(Kit.toLayer({ head: () => Effect.void }))
      )
      const request = yield* server.takeRequest
      const tools = request.body.tools as ReadonlyArray<{ function: { parameters: unknown } }>
      const sent = JSON.stringify(tools[0]?.function.parameters)
      assert.notInclude(sent, "\"title\":\"positive\"")
      assert.notMatch(sent, /"title":"/)
      assert.deepStrictEqual(tools[0]?.function.parameters, {
        type: "object",
        required: ["title", "lines"],
        properties: {
          title: { type: "string" },
          lines: { type: "integer", description: "a positive number", exclusiveMinimum: 0 },
          ranges: {
            type: "array",
            items: {
              type: "object",
              required: ["from"],
              properties: { from: { type: "number", description: "a positive number", exclusiveMinimum: 0 } },
              additionalProperties: false
            }
          }
        },
        additionalProperties: false
      })
    }))

  it.scoped("tool_choice: required, one named tool, oneOf; no toolkit means no tools", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      yield* server.reply(ok, ok, ok, ok)
      const run = (
        toolChoice: "required" | { tool: "read_file" } | { oneOf: ReadonlyArray<"list_dir">; mode: "required" }
      ) =>
        model.streamText({ prompt: "go", toolkit: Tools, toolChoice, disableToolCallResolution: true }).pipe(
          Stream.runDrain,
          Effect.provide(ToolsLayer)
        )
      yield* run("required")
      yield* run({ tool: "read_file" })
      yield* run({ oneOf: ["list_dir"], mode: "required" })
      yield* model.streamText({ prompt: "go" }).pipe(Stream.runDrain)
      const [required, named, oneOf, none] = yield* server.requests
      assert.strictEqual(required?.body.tool_choice, "required")
      assert.deepStrictEqual(named?.body.tool_choice, { type: "function", function: { name: "read_file" } })
      assert.deepStrictEqual(
        (oneOf?.body.tools as ReadonlyArray<{ function: { name: string } }>).map((tool) => tool.function.name),
        [ListDir.name]
      )
      assert.strictEqual(oneOf?.body.tool_choice, "required")
      assert.strictEqual(none?.body.tools, undefined)
      assert.strictEqual(none?.body.tool_choice, undefined)
      assert.strictEqual(ReadFile.name, "read_file")
    }))

  it.scoped("max tokens under the configured name, reasoning effort, extra headers and body fields", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        model: "gpt-5-mini",
        maxOutputTokens: 2048,
        maxTokensParameter: "max_completion_tokens",
        reasoningEffort: "low",
        headers: { "X-Title": "harness", "X-Org-Secret": Redacted.make("org-secret-123") },
        body: { seed: 7, messages: "must not override", user: "tester" }
      })
      yield* server.reply(ok, ok)
      yield* stream(model, "hi")
      const request = yield* server.takeRequest
      assert.strictEqual(request.body.model, "gpt-5-mini")
      assert.strictEqual(request.body.max_completion_tokens, 2048)
      assert.strictEqual(request.body.max_tokens, undefined)
      assert.strictEqual(request.body.reasoning_effort, "low")
      assert.strictEqual(request.body.seed, 7)
      assert.strictEqual(request.body.user, "tester")
      assert.deepStrictEqual(request.body.messages, [{ role: "user", content: "hi" }])
      assert.strictEqual(request.headers["x-title"], "harness")
      assert.strictEqual(request.headers["x-org-secret"], "org-secret-123")
      assert.strictEqual(request.headers.authorization, `Bearer ${apiKey}`)
      assert.strictEqual(request.headers["content-type"], "application/json")
      assert.strictEqual(request.headers.accept, "text/event-stream")
      assert.strictEqual(request.path, "/chat/completions")

      const defaults = yield* languageModel(server, { maxOutputTokens: 100 })
      yield* stream(defaults, "hi")
      const second = yield* server.takeRequest
      assert.strictEqual(second.body.max_tokens, 100)
    }))

  it.scoped("a keyless server gets no Authorization header; the base URL may carry a path", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const keyless = yield* languageModel({ ...server, baseUrl: `${server.baseUrl}/v1/` }, { apiKey: undefined })
      const full = yield* languageModel({ ...server, baseUrl: `${server.baseUrl}/v1/chat/completions` })
      yield* server.reply(ok, ok)
      yield* stream(keyless, "hi")
      yield* stream(full, "hi")
      const [first, second] = yield* server.requests
      assert.strictEqual(first?.headers.authorization, undefined)
      assert.strictEqual(first?.path, "/v1/chat/completions")
      assert.strictEqual(second?.path, "/v1/chat/completions")
    }))

  it.scoped("a prompt with a file part is refused before anything is sent", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const prompt = Prompt.fromMessages([
        Prompt.userMessage({ content: [Prompt.filePart({ mediaType: "image/png", data: new Uint8Array([1]) })] })
      ])
      const error = yield* Effect.flip(stream(model, prompt))
      assert.strictEqual(error._tag, "MalformedInput")
      assert.deepStrictEqual(yield* server.requests, [])
    }))
})
