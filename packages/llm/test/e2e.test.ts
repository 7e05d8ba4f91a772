/**
 * End to end over real HTTP: the `Agent`, this provider and the fake chat-completions server. One turn in thinking
 * mode with a tool-call round trip (the second request carries the tool result and the reasoning), and one turn
 * cut mid-stream whose `LlmFailure` ends up in the log. Then what outside testing found at the agent's edge (ADR 0011): a server that
 * echoes the key in its headers and body (the log, the live events and `turn/end` never see it), a refusal (its
 * text in `turn/end`, no retry), an oversized SSE event and a reply past `maxReplyBytes` (classified failures, no
 * stack trace or path).
 */
import { LanguageModel, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Ids, Message } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { EventRecorder } from "@harness/testkit"
import { Effect, Inspectable, Schema } from "effect"
import * as FakeServer from "./support/FakeServer.js"
import { deepSeekStream, done, frame } from "./support/fixtures.js"
import { apiKey, languageModel } from "./support/provider.js"
import { sse } from "./support/replies.js"

/** Runs one followup to the end and returns the log, the live events and the turn's end reason. */
const oneTurn = (server: FakeServer.FakeServer, options: Parameters<typeof languageModel>[1] = {}) =>
  Effect.gen(function*() {
    const model = yield* languageModel(server, options)
    const agent = yield* Agent.make({ model: "m" }).pipe(Effect.provideService(LanguageModel.LanguageModel, model))
    const recorder = yield* EventRecorder.make(agent)
    yield* agent.followup(Message.make("hi"))
    yield* agent.whenIdle
    const log = yield* agent.log
    assert.deepStrictEqual(LogCheck.checkLog(log), [])
    const end = log.findLast((e) => e.type === "turn/end")
    const reason = end?.type === "turn/end" ? end.data.reason : undefined
    return { log, events: yield* recorder.events, reason }
  })

const readFile = AgentTool.make(
  Tool.make("read_file", {
    description: "Read a file of the workspace",
    parameters: { path: Schema.String },
    success: Schema.String
  }),
  { handler: ({ path }) => Effect.succeed(`contents of ${path}: hi`), parallel: true }
)

describe("Agent + chat-completions provider + fake server", () => {
  it.live("a thinking-mode turn with a tool call round trip", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { thinking: "enabled", model: "deepseek-v4-flash" })
      yield* server.reply(
        sse(deepSeekStream({
          reasoning: ["The user wants ", "the file."],
          toolCalls: [{ id: "call_0", name: "read_file", fragments: ["{\"pa", "th\": \"a", ".txt\"}"] }]
        })),
        sse(deepSeekStream({ reasoning: ["Got it."], content: ["The file ", "says hi."] }))
      )
      const agent = yield* Agent.make({ model: "deepseek-v4-flash", provider: "deepseek", tools: [readFile] }).pipe(
        Effect.provideService(LanguageModel.LanguageModel, model)
      )
      yield* agent.followup(Message.make("What is in a.txt?"))
      yield* agent.whenIdle

      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      // The raw argument text, assembled from fragments split mid-JSON, is logged verbatim.
      const call = log.find((e) => e.type === "tool/call")
      assert.strictEqual(call?.type === "tool/call" ? call.data.arguments : undefined, "{\"path\": \"a.txt\"}")
      const messages = log.flatMap((e) => (e.type === "assistant/message" ? [e.data] : []))
      assert.deepStrictEqual(messages[0]!.content, [
        { type: "reasoning", text: "The user wants the file." },
        { type: "tool-call", id: Ids.ToolCallId.make("call_0"), name: "read_file", arguments: "{\"path\": \"a.txt\"}" }
      ])
      assert.deepStrictEqual(messages[1]!.content, [
        { type: "reasoning", text: "Got it." },
        { type: "text", text: "The file says hi." }
      ])
      assert.strictEqual(messages[1]!.usage?.inputTokens, 120)
      const end = log.findLast((e) => e.type === "turn/end")
      assert.deepStrictEqual(end?.type === "turn/end" ? end.data.reason : undefined, { kind: "completed" })

      // The second request carries the tool result and, for the assistant message that made the call, its reasoning.
      const requests = yield* server.requests
      assert.strictEqual(requests.length, 2)
      const second = requests[1]!.body.messages as ReadonlyArray<Record<string, unknown>>
      assert.deepStrictEqual(second.map((m) => m.role), ["user", "assistant", "tool"])
      assert.strictEqual(second[1]!.reasoning_content, "The user wants the file.")
      assert.deepStrictEqual(second[1]!.tool_calls, [
        { id: "call_0", type: "function", function: { name: "read_file", arguments: "{\"path\": \"a.txt\"}" } }
      ])
      assert.deepStrictEqual(second[2], { role: "tool", tool_call_id: "call_0", content: "contents of a.txt: hi" })
      // Advertised with the tool's real JSON Schema.
      const tools = requests[0]!.body.tools as ReadonlyArray<{ function: { name: string; parameters: unknown } }>
      assert.deepStrictEqual(tools.map((t) => [t.function.name, t.function.parameters]), [[
        "read_file",
        { type: "object", required: ["path"], properties: { path: { type: "string" } }, additionalProperties: false }
      ]])
    }).pipe(Effect.scoped))

  it.live("a turn cut mid-stream ends with an error whose LlmFailure is in the log", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, { thinking: "enabled" })
      const frames = deepSeekStream({ reasoning: ["Thinking"], content: ["The answer is", " forty"] })
      // Everything up to the second content delta, then the connection is reset.
      yield* server.reply(sse(frames.slice(0, 5), { end: "cut" }))
      const agent = yield* Agent.make({ model: "deepseek-v4-flash" }).pipe(
        Effect.provideService(LanguageModel.LanguageModel, model)
      )
      const recorder = yield* EventRecorder.make(agent)
      yield* agent.followup(Message.make("What is the answer?"))
      yield* agent.whenIdle

      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      // Output had begun, so the provider did not retry: one request.
      assert.strictEqual((yield* server.requests).length, 1)
      // The chunks that arrived stay in the log; no assistant message was made of them.
      assert.isTrue(log.some((e) => e.type === "assistant/chunk"))
      assert.isFalse(log.some((e) => e.type === "assistant/message"))
      const end = log.findLast((e) => e.type === "turn/end")
      assert.strictEqual(end?.type, "turn/end")
      const reason = end?.type === "turn/end" ? end.data.reason : undefined
      assert.strictEqual(reason?.kind, "request-error")
      assert.strictEqual(reason && "failure" in reason ? reason.failure.code : undefined, "NETWORK")
      const trace = yield* recorder.trace
      assert.deepStrictEqual(trace.slice(-5), [
        "step/end",
        "error",
        "turn/end:request-error",
        "settled:error",
        "status:idle"
      ])
    }).pipe(Effect.scoped))

  it.live("a server echoing the key in every header and its body: the key is in no log event, live event or turn/end", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      yield* server.otherwise((request, response) => {
        const echoed = String(request.headers.authorization).replace("Bearer ", "")
        response.writeHead(500, {
          "content-type": "application/json",
          "x-request-id": echoed,
          "x-echo": `Bearer ${echoed}`
        })
        response.end(JSON.stringify({ error: { message: `${"·".repeat(1_995)}${echoed}`, type: echoed } }))
      })
      const { events, log, reason } = yield* oneTurn(server, { retry: { maxRetries: 1 } })
      assert.strictEqual(reason?.kind, "request-error")
      assert.strictEqual(reason && "failure" in reason ? reason.failure.code : undefined, "SERVER")
      for (const text of [JSON.stringify(log), Inspectable.format(log), JSON.stringify(events)]) {
        assert.notInclude(text, apiKey)
        assert.notInclude(text, apiKey.slice(0, 10))
      }
      assert.include(JSON.stringify(log), "<redacted>")
    }).pipe(Effect.scoped))

  it.live("a refusal ends the turn with CONTENT_FILTER and the refusal text, after one request", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        frame({
          id: "c",
          object: "chat.completion.chunk",
          created: 1,
          model: "m",
          choices: [{ index: 0, delta, finish_reason: finish }]
        })
      yield* server.otherwise(
        sse([chunk({ role: "assistant", refusal: "I can't help with that." }), chunk({}, "stop"), done])
      )
      const { reason } = yield* oneTurn(server, { retry: { maxRetries: 2 } })
      const failure = reason && "failure" in reason ? reason.failure : undefined
      assert.strictEqual(failure?.code, "CONTENT_FILTER")
      assert.include(failure?.message ?? "", "I can't help with that.")
      assert.lengthOf(yield* server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("an oversized SSE event ends the turn with a MALFORMED failure: no stack trace, no path", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      yield* server.otherwise(sse([`data: ${"x".repeat(1024 * 1024 + 1)}`], { end: "stall" }))
      const { log, reason } = yield* oneTurn(server, { retry: { maxRetries: 0 } })
      const failure = reason && "failure" in reason ? reason.failure : undefined
      assert.strictEqual(failure?.code, "MALFORMED")
      const text = JSON.stringify(log)
      assert.notInclude(text, "    at ")
      assert.notInclude(text, "node_modules")
      assert.notMatch(text, /\/(home|work|tmp|usr)\//)
    }).pipe(Effect.scoped))

  it.live("a reply past maxReplyBytes ends the turn with REPLY_TOO_LARGE naming the bound: no stack trace, no path", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const content = Array.from({ length: 10 }, () => "a".repeat(1000))
      yield* server.otherwise(sse(deepSeekStream({ content })))
      const { log, reason } = yield* oneTurn(server, { maxReplyBytes: 5000, retry: { maxRetries: 2 } })
      const failure = reason && "failure" in reason ? reason.failure : undefined
      assert.strictEqual(failure?.code, "REPLY_TOO_LARGE")
      assert.include(failure?.message ?? "", "5000 bytes")
      const text = JSON.stringify(log)
      assert.notInclude(text, "    at ")
      assert.notInclude(text, "RangeError")
      assert.notMatch(text, /\/(home|work|tmp|usr)\//)
      assert.lengthOf(yield* server.requests, 1)
    }).pipe(Effect.scoped))
})
