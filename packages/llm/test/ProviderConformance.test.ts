/**
 * Harness's own provider held to the provider conformance suite: `ChatCompletions` over a loopback server that
 * answers by the suite's rule table in the chat-completions wire format (SSE chunks, tool-call fragments, usage in
 * the last chunk, a 429 with `Retry-After`). The provider offers its `ModelStream`, so the agent takes the fast path.
 */
import type { LanguageModel } from "@effect/ai"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Redacted } from "effect"
import { ChatCompletions } from "../src/index.js"
import { answer, conformance, type Said } from "./conformance.js"
import * as FakeServer from "./support/FakeServer.js"
import { done, frame } from "./support/fixtures.js"
import { json, sse } from "./support/replies.js"

const text = (value: unknown): string => (typeof value === "string" ? value : "")

/** The conversation of a chat-completions request body, as the rules read it. */
const conversationOf = (body: { readonly [key: string]: unknown }): ReadonlyArray<Said> => {
  const messages = Array.isArray(body.messages) ? (body.messages as ReadonlyArray<Record<string, unknown>>) : []
  return messages.flatMap((message): ReadonlyArray<Said> => {
    switch (message.role) {
      case "user":
        return [{ role: "user", text: text(message.content) }]
      case "assistant": {
        const calls = Array.isArray(message.tool_calls)
          ? (message.tool_calls as ReadonlyArray<{ id: string; function: { name: string; arguments: string } }>)
          : []
        return [{
          role: "assistant",
          text: text(message.content),
          calls: calls.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }))
        }]
      }
      case "tool":
        return [{ role: "tool", id: text(message.tool_call_id), output: text(message.content) }]
      default:
        return []
    }
  })
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>) =>
  frame({
    id: "chatcmpl-conformance",
    object: "chat.completion.chunk",
    created: 1767411028,
    model: "conformance",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage === undefined ? {} : { usage })
  })

const wireUsage = (usage: { inputTokens: number; outputTokens: number; totalTokens: number }) => ({
  prompt_tokens: usage.inputTokens,
  completion_tokens: usage.outputTokens,
  total_tokens: usage.totalTokens
})

/** The rules' answer to a request, in the wire format. */
const rules: FakeServer.Reply = (request, response, body) => {
  const next = answer(conversationOf(body))
  switch (next._tag) {
    case "text":
      return sse([
        chunk({ role: "assistant", content: "" }),
        ...next.deltas.map((delta) => chunk({ content: delta })),
        chunk({}, "stop", wireUsage(next.usage)),
        done
      ])(request, response, body)
    case "call": {
      const half = Math.ceil(next.arguments.length / 2)
      return sse([
        chunk({
          role: "assistant",
          content: null,
          tool_calls: [{ index: 0, id: next.id, type: "function", function: { name: next.name, arguments: "" } }]
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: next.arguments.slice(0, half) } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: next.arguments.slice(half) } }] }),
        chunk({}, "tool_calls", wireUsage(next.usage)),
        done
      ])(request, response, body)
    }
    case "fail":
      return json(
        next.failure.status ?? 500,
        { error: { message: next.failure.message, type: "rate_limit_error" } },
        next.failure.retryAfterMs === undefined ? {} : { "retry-after": String(next.failure.retryAfterMs / 1000) }
      )(request, response, body)
  }
}

/** The provider over a loopback server serving the rules, for the current scope; no retries. */
const layer: Layer.Layer<LanguageModel.LanguageModel> = Layer.unwrapScoped(Effect.gen(function*() {
  const server = yield* FakeServer.make
  yield* server.otherwise(rules)
  return ChatCompletions.layer({
    baseUrl: server.baseUrl,
    apiKey: Redacted.make("sk-conformance"),
    model: "conformance",
    retry: { maxRetries: 0 }
  }).pipe(Layer.provide(NodeHttpClient.layer), Layer.orDie)
}))

conformance("chat-completions over a loopback server", layer)
