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
import { fiveTokens, noopToolName, tokens as tokensOf } from "../src/Runtime.js"
import { pacedClocks, servedUrl, sseBody, startSseServer } from "../src/SseServer.js"

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

  it.scoped("its paced route streams the reply whole and keeps the stream's clock under the prompt, once", () =>
    Effect.gen(function*() {
      const { requests, url } = yield* server
      assert.strictEqual(servedUrl(url, true), url)
      assert.strictEqual(servedUrl(url, false), undefined)
      const paced = servedUrl(url, { tokens: 6, tokensPerSecond: 200 })
      assert.strictEqual(paced, `${url}/paced/6/200`)
      const none = { start: 0, end: 0 }
      // Whatever the request offers (tools here), the paced route answers its text; the key is the last user text.
      const reply = yield* post(paced!, {
        messages: [
          { role: "user", content: "earlier" },
          { role: "assistant", content: "ok" },
          { role: "user", content: [{ type: "text", text: "pace-" }, { type: "text", text: "a" }] }
        ],
        tools: [{ type: "function", function: { name: noopToolName, parameters: {} } }]
      })
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.type, "text/event-stream")
      assert.strictEqual(reply.text, sseBody({ _tag: "text", tokens: tokensOf(6) }))
      assert.strictEqual(requests(), 1)

      const taken = yield* Effect.promise(() => pacedClocks(["pace-a", "pace-b"], [none, none], url))
      assert.strictEqual(taken.served, 1)
      assert.isAbove(taken.clocks[0]!.end, taken.clocks[0]!.start)
      assert.deepStrictEqual(taken.clocks[1], none, "a prompt the server never streamed keeps the script's clock")
      const again = yield* Effect.promise(() => pacedClocks(["pace-a"], [none], url))
      assert.deepStrictEqual(again, { clocks: [none], served: 0 }, "the server forgets what was taken")
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
