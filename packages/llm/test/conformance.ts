/**
 * The conformance suite of model providers: what the README's "How to add a provider" promises, checked through a
 * real `Agent` and its log. Every provider registers it from its own test file with a layer of its `LanguageModel`
 * (and, when it opts into the fast path, its `ModelStream`) whose model answers by {@link answer}:
 *
 * ```ts
 * conformance("my provider", MyProvider.layer)
 * ```
 *
 * {@link answer} is a tiny rule table over the conversation — a stand-in for what a real model would say — so a
 * provider under test only has to carry it faithfully: `test/ToyProvider.test.ts` calls it in process, and
 * `test/ProviderConformance.test.ts` serves it in the chat-completions wire format from a loopback server for
 * `ChatCompletions`. Each test builds the layer afresh in its own scope and runs on the live clock (a provider may do
 * real I/O).
 */
import type { LanguageModel } from "@effect/ai"
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Ids, type LlmFailure, Message, type SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Effect, Layer, Option, Schema } from "effect"

/** One message of the conversation as the rule table reads it (system messages left out). */
export type Said =
  | { readonly role: "user"; readonly text: string }
  | {
    readonly role: "assistant"
    readonly text: string
    readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  }
  | { readonly role: "tool"; readonly id: string; readonly output: string }

/** Token counts of one answer: input 10 per message of the conversation, output 1 per delta (or 5 for a call). */
interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens: number
}

/** What the model says next. */
export type Answer =
  /** A text, streamed as these deltas (in order, one delta each). */
  | { readonly _tag: "text"; readonly deltas: ReadonlyArray<string>; readonly usage: Usage }
  /** One tool call, with its id and its raw argument text. */
  | {
    readonly _tag: "call"
    readonly id: string
    readonly name: string
    readonly arguments: string
    readonly usage: Usage
  }
  /** The request fails; a provider reports this failure so that `LlmFailure.failureOf` gives it back. */
  | { readonly _tag: "fail"; readonly failure: LlmFailure.LlmFailure }

/** The id of the one tool call the rules make. */
const callId = "call_read_1"

/** The same id as the log holds it. */
const loggedId = Ids.ToolCallId.make(callId)

/** The failure the rules answer `fail` with: a rate limit with the server's hint. */
const rateLimited = {
  code: "RATE_LIMIT",
  message: "slow down",
  status: 429,
  retryAfterMs: 7000
} as const satisfies LlmFailure.LlmFailure

const usage = (conversation: ReadonlyArray<Said>, outputTokens: number): Usage => ({
  inputTokens: 10 * conversation.length,
  outputTokens,
  totalTokens: 10 * conversation.length + outputTokens
})

/** The words of `text` as deltas, each but the first with its leading space. */
const deltasOf = (text: string): ReadonlyArray<string> => text.split(/(?= )/)

/**
 * The rule table, on the last message of the conversation:
 * - a tool result answers with the name of the call that has its id and the output (`read_file said: …`), or says
 *   that no call has that id;
 * - `read <path>` calls `read_file` with `{"path":"<path>"}` and the id {@link callId};
 * - `fail` fails with {@link rateLimited};
 * - any other text is echoed (`Echo: <text>`).
 */
export const answer = (conversation: ReadonlyArray<Said>): Answer => {
  const last = conversation.at(-1)
  if (last === undefined) return { _tag: "text", deltas: ["Nothing ", "said."], usage: usage(conversation, 2) }
  if (last.role === "tool") {
    const call = conversation.flatMap((said) => said.role === "assistant" ? said.calls : []).find((c) =>
      c.id === last.id
    )
    const deltas = deltasOf(
      call === undefined ? `No call has the id ${last.id}.` : `${call.name} said: ${last.output}`
    )
    return { _tag: "text", deltas, usage: usage(conversation, deltas.length) }
  }
  const text = last.text.trim()
  const read = /^read (\S+)$/.exec(text)
  if (read !== null) {
    return {
      _tag: "call",
      id: callId,
      name: "read_file",
      arguments: JSON.stringify({ path: read[1] }),
      usage: usage(conversation, 5)
    }
  }
  if (text === "fail") return { _tag: "fail", failure: rateLimited }
  const deltas = deltasOf(`Echo: ${text}`)
  return { _tag: "text", deltas, usage: usage(conversation, deltas.length) }
}

const readFile = AgentTool.make(
  Tool.make("read_file", {
    description: "Read a file of the workspace",
    parameters: { path: Schema.String },
    success: Schema.String
  }),
  { handler: ({ path }) => Effect.succeed(`contents of ${path}`), parallel: true }
)

/** Runs one followup through an agent over the provider and returns its log, checked clean. */
const turn = (layer: Layer.Layer<LanguageModel.LanguageModel>, text: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(layer)
    const agent = yield* Agent.make({ model: "conformance", tools: [readFile] }).pipe(Effect.provide(context))
    yield* agent.followup(Message.make(text))
    yield* agent.whenIdle
    const log = yield* agent.log
    assert.deepStrictEqual(LogCheck.checkLog(log), [])
    return log
  })

const messages = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.flatMap((event) => (event.type === "assistant/message" ? [event.data] : []))

const endOf = (log: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const end = log.findLast((event) => event.type === "turn/end")
  return end?.type === "turn/end" ? end.data.reason : undefined
}

const TextDelta = Schema.decodeUnknownOption(
  Schema.Struct({ type: Schema.Literal("text-delta"), delta: Schema.String })
)

/** The text deltas the log recorded as `assistant/chunk`s, in order. */
const textDeltas = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  log.flatMap((event) =>
    event.type === "assistant/chunk"
      ? Option.match(TextDelta(event.data.chunk), { onNone: () => [], onSome: ({ delta }) => [delta] })
      : []
  )

/** Registers the suite for the provider `layer` provides. */
export const conformance = (name: string, layer: Layer.Layer<LanguageModel.LanguageModel>) =>
  describe(`provider conformance: ${name}`, { timeout: 60_000 }, () => {
    it.live("a text turn: each delta streamed into the log in order, the message, its usage, completed", () =>
      Effect.gen(function*() {
        const log = yield* turn(layer, "hello there")
        assert.deepStrictEqual(textDeltas(log), ["Echo:", " hello", " there"])
        const [message, ...rest] = messages(log)
        assert.deepStrictEqual(rest, [])
        assert.deepStrictEqual(message?.content, [{ type: "text", text: "Echo: hello there" }])
        assert.deepStrictEqual(message?.finishReason, "stop")
        assert.deepStrictEqual(
          { ...message?.usage },
          { inputTokens: 10, outputTokens: 3, totalTokens: 13 }
        )
        assert.deepStrictEqual(endOf(log), { kind: "completed" })
      }).pipe(Effect.scoped))

    it.live("a tool call under the model's id, its result, then text that saw the result under that id", () =>
      Effect.gen(function*() {
        const log = yield* turn(layer, "read a.txt")
        const call = log.find((event) => event.type === "tool/call")
        assert.deepStrictEqual(call?.type === "tool/call" ? { ...call.data } : undefined, {
          turn: 1,
          step: 1,
          callId: loggedId,
          name: "read_file",
          arguments: "{\"path\":\"a.txt\"}"
        })
        const result = log.find((event) => event.type === "tool/result")
        assert.deepStrictEqual(
          result?.type === "tool/result" ? [result.data.callId, result.data.isError, result.data.content] : undefined,
          [loggedId, false, [{ type: "text", text: "contents of a.txt" }]]
        )
        const [first, second, ...rest] = messages(log)
        assert.deepStrictEqual(rest, [])
        assert.deepStrictEqual(first?.content, [
          { type: "tool-call", id: loggedId, name: "read_file", arguments: "{\"path\":\"a.txt\"}" }
        ])
        assert.deepStrictEqual(first?.finishReason, "tool-calls")
        assert.deepStrictEqual({ ...first?.usage }, { inputTokens: 10, outputTokens: 5, totalTokens: 15 })
        // The second request carried the call and its result under the same id: the rules found the call.
        assert.deepStrictEqual(second?.content, [{ type: "text", text: "read_file said: contents of a.txt" }])
        assert.deepStrictEqual({ ...second?.usage }, { inputTokens: 30, outputTokens: 5, totalTokens: 35 })
        assert.deepStrictEqual(endOf(log), { kind: "completed" })
      }).pipe(Effect.scoped))

    it.live("a provider failure ends the turn with the LlmFailure failureOf gives (code, status, retry hint)", () =>
      Effect.gen(function*() {
        const log = yield* turn(layer, "fail")
        assert.deepStrictEqual(messages(log), [])
        const reason = endOf(log)
        assert.strictEqual(reason?.kind, "request-error")
        const failure = reason !== undefined && "failure" in reason ? reason.failure : undefined
        assert.deepStrictEqual(
          [failure?.code, failure?.status, failure?.retryAfterMs],
          [rateLimited.code, rateLimited.status, rateLimited.retryAfterMs]
        )
        assert.include(failure?.message ?? "", rateLimited.message)
      }).pipe(Effect.scoped))
  })
