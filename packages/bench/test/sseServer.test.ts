/**
 * The provider path's loopback server (ADR 0057) serves the bench's fixed script as OpenAI chat-completions SSE, and
 * the clients the bench measures read from it the reply each workload's checks expect: Harness's `@harness/llm`
 * provider and pi-ai's `openai-completions` client, each over real HTTP on loopback.
 */
import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { ChatCompletions } from "@harness/llm"
import { type Context as PiContext, type Model, streamSimple, Type } from "@mariozechner/pi-ai"
import { Effect, Layer, Schema, Stream } from "effect"
import { fiveTokens, noopToolName } from "../src/Runtime.js"
import { sseBody, startSseServer } from "../src/SseServer.js"

const tokens = fiveTokens._tag === "text" ? fiveTokens.tokens : []

const server = Effect.acquireRelease(Effect.promise(startSseServer), (s) => Effect.promise(s.close))

const post = (url: string, body: unknown, path = "/chat/completions") =>
  Effect.promise(() =>
    fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (response) => ({
      status: response.status,
      type: response.headers.get("content-type"),
      text: await response.text()
    }))
  )

const Noop = Tool.make(noopToolName, { description: "Does nothing.", success: Schema.String })

describe("bench loopback SSE server", () => {
  it.scoped("answers text without tools, a tool call when tools are offered, text after a tool's result", () =>
    Effect.gen(function*() {
      const { requests, url } = yield* server
      const text = yield* post(url, { messages: [{ role: "user", content: "hi" }] })
      assert.strictEqual(text.status, 200)
      assert.strictEqual(text.type, "text/event-stream")
      assert.strictEqual(text.text, sseBody({ _tag: "text", tokens }))
      const deltas = text.text.split("\n\n").filter((frame) => frame.startsWith("data: {")).map((frame) =>
        JSON.parse(frame.slice(6)) as { choices: Array<{ delta: { content?: string } }> }
      ).flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.content ? [choice.delta.content] : []))
      assert.deepStrictEqual(deltas, tokens)
      assert.isTrue(text.text.endsWith("data: [DONE]\n\n"))

      const tools = [{ type: "function", function: { name: noopToolName, parameters: {} } }]
      const call = yield* post(url, { messages: [{ role: "user", content: "hi" }], tools })
      assert.strictEqual(call.text, sseBody({ _tag: "tool-call", name: noopToolName, arguments: "{}" }))
      assert.include(call.text, `"finish_reason":"tool_calls"`)
      const after = yield* post(url, {
        messages: [{ role: "user", content: "hi" }, { role: "assistant" }, { role: "tool", content: "ok" }],
        tools
      })
      assert.strictEqual(after.text, text.text)
      assert.strictEqual(requests(), 3)

      const missing = yield* post(url, {}, "/models")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(requests(), 3, "a request it does not serve is not counted")
    }))

  it.scoped("Harness's chat-completions provider streams the five tokens, and the tool call when offered", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      const provider = ChatCompletions.layer({ baseUrl: url, model: "bench" }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const parts = yield* LanguageModel.streamText({ prompt: "hi" }).pipe(Stream.runCollect, Effect.provide(provider))
      const deltas = [...parts].flatMap((part) => part.type === "text-delta" ? [part.delta] : [])
      assert.deepStrictEqual(deltas, tokens)
      assert.strictEqual([...parts].find((part) => part.type === "finish")?.reason, "stop")

      const toolkit = Toolkit.make(Noop)
      const called = yield* LanguageModel.streamText({ prompt: "hi", toolkit, disableToolCallResolution: true }).pipe(
        Stream.runCollect,
        Effect.provide(provider),
        Effect.provide(toolkit.toLayer({ [noopToolName]: () => Effect.succeed("ok") }))
      )
      assert.deepStrictEqual(
        [...called].flatMap((part) => part.type === "tool-call" ? [[part.name, part.params]] : []),
        [[noopToolName, {}]]
      )
    }))

  it.scoped("pi-ai's openai-completions client reads the same reply", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      const model: Model<"openai-completions"> = {
        id: "bench",
        name: "bench",
        api: "openai-completions",
        provider: "bench",
        baseUrl: url,
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 1000,
        maxTokens: 100
      }
      const ask = (context: PiContext) =>
        Effect.promise(() => streamSimple(model, context, { apiKey: "bench" }).result())
      const user = { role: "user" as const, content: "hi", timestamp: 0 }
      const text = yield* ask({ messages: [user] })
      assert.strictEqual(text.stopReason, "stop")
      assert.deepStrictEqual(text.content, [{ type: "text", text: tokens.join("") }])
      const call = yield* ask({
        messages: [user],
        tools: [{ name: noopToolName, description: "Does nothing.", parameters: Type.Object({}) }]
      })
      assert.strictEqual(call.stopReason, "toolUse")
      assert.deepStrictEqual(
        call.content.flatMap((block) => block.type === "toolCall" ? [[block.name, block.arguments]] : []),
        [[noopToolName, {}]]
      )
    }))
})
