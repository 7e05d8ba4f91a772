/**
 * Shared test helpers and sample values for the domain schemas: a round-trip check (decode ∘ encode, and through
 * JSON text), a helper that returns the formatted decode error, a deep-frozen predicate, a JSON arbitrary, and
 * samples of every message source, failure, message shape and durable event.
 */
import { assert } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema } from "effect"
import { AgentMessageId, ToolCallId } from "../src/Ids.js"
import type { JsonValue } from "../src/Json.js"
import type { LlmFailure } from "../src/LlmFailure.js"
import type { AgentMessage, UserMessageData } from "../src/Message.js"
import type { MessageSource } from "../src/MessageSource.js"
import type { SessionEvent } from "../src/SessionEvent.js"

/**
 * Checks that `value` survives `encode` → `decode`, and `encode` → `JSON.stringify` → `JSON.parse` → `decode`
 * (strictly: the JSON text may carry no key the schema does not know), each time giving an equal value; also
 * that the encoded form itself is JSON-lossless.
 */
export const roundTrip = <A, I>(schema: Schema.Schema<A, I>, value: A) =>
  Effect.gen(function*() {
    const encoded = yield* Schema.encode(schema)(value)
    assert.deepStrictEqual(yield* Schema.decodeUnknown(schema)(encoded), value)
    const wire: unknown = JSON.parse(JSON.stringify(encoded))
    assert.deepStrictEqual(wire, encoded, "the encoded form must survive JSON unchanged")
    assert.deepStrictEqual(yield* Schema.decodeUnknown(schema, { onExcessProperty: "error" })(wire), value)
  })

/**
 * The formatted decode error for `input`, failing the test if `input` decodes.
 */
export const decodeError = <A, I>(schema: Schema.Schema<A, I>, input: unknown) =>
  Schema.decodeUnknown(schema, { errors: "all", onExcessProperty: "error" })(input).pipe(
    Effect.flip,
    Effect.map((error) => error.message)
  )

/**
 * True when `u` and everything reachable from it is frozen.
 */
export const isDeepFrozen = (u: unknown): boolean =>
  typeof u !== "object" || u === null || (Object.isFrozen(u) && Object.values(u).every(isDeepFrozen))

export const messageId = AgentMessageId.make("msg-1")
export const otherMessageId = AgentMessageId.make("msg-2")
export const callId = ToolCallId.make("call_1")

const goalStateChange: MessageSource = {
  kind: "goal",
  goalId: "goal-1",
  revision: 1,
  round: 0,
  change: { status: "active", objective: "ship it", budget: { turns: 5, tokens: null }, tags: ["a", "b"] }
}

export const goalContinuation: MessageSource = { kind: "goal", goalId: "goal-1", revision: 3, round: 2 }

/** One sample of every source kind, goal rounds 0 and ≥ 1 included. */
export const sources: ReadonlyArray<readonly [string, MessageSource]> = [
  ["user", { kind: "user" }],
  ["plugin", { kind: "plugin", plugin: "todo-reminder" }],
  ["plugin with an empty name", { kind: "plugin", plugin: "" }],
  ["goal state change (round 0)", goalStateChange],
  ["goal continuation (round 2)", goalContinuation]
]

export const userData: UserMessageData = {
  content: [{ type: "text", text: "hello" }, { type: "text", text: "" }],
  source: { kind: "user" }
}

export const agentMessage: AgentMessage = {
  content: [{ type: "text", text: "hello" }],
  id: messageId,
  source: { kind: "user" }
}

/** A failure with every optional field. */
export const fullFailure: LlmFailure = {
  code: "RATE_LIMIT",
  message: "HTTP 429: slow down",
  status: 429,
  retryAfterMs: 2000,
  requestId: "req_123"
}

/** A failure with only the required fields. */
export const bareFailure: LlmFailure = { code: "TIMEOUT", message: "the request timed out after 60 s" }

/**
 * JSON values, including keys that are special to JavaScript objects (`__proto__`, `constructor`) and strings
 * with characters JSON must escape.
 */
export const arbitraryJson: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
    fc.string({ unit: "binary" }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty")),
      tie("value"),
      { maxKeys: 4 }
    )
  )
})).value

/** Every durable event type, each variant the contract names. */
export const sessionEvents: ReadonlyArray<readonly [string, SessionEvent]> = [
  ["turn/start with a message trigger", {
    seq: 0,
    time: 1_700_000_000_000,
    type: "turn/start",
    data: { turn: 1, trigger: { kind: "message", source: { kind: "user" } } }
  }],
  ["turn/start with a goal message trigger", {
    seq: 0,
    time: 0,
    type: "turn/start",
    data: { turn: 3, trigger: { kind: "message", source: goalContinuation } }
  }],
  ["turn/start with a retry trigger", {
    seq: 9,
    time: 5,
    type: "turn/start",
    data: { turn: 2, trigger: { kind: "retry" } }
  }],
  ["turn/end completed", { seq: 1, time: 1, type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } }],
  ["turn/end aborted", { seq: 1, time: 1, type: "turn/end", data: { turn: 1, reason: { kind: "aborted" } } }],
  ["turn/end disposed", { seq: 1, time: 1, type: "turn/end", data: { turn: 1, reason: { kind: "disposed" } } }],
  ["turn/end max-tokens", { seq: 1, time: 1, type: "turn/end", data: { turn: 1, reason: { kind: "max-tokens" } } }],
  ["turn/end interrupted", { seq: 1, time: 1, type: "turn/end", data: { turn: 1, reason: { kind: "interrupted" } } }],
  ["turn/end error with a failure", {
    seq: 1,
    time: 1,
    type: "turn/end",
    data: { turn: 1, reason: { kind: "request-error", step: 1, failure: fullFailure } }
  }],
  ["turn/end error with a bare failure", {
    seq: 1,
    time: 1,
    type: "turn/end",
    data: { turn: 1, reason: { kind: "request-error", step: 0, failure: bareFailure } }
  }],
  ["turn/end error with message and code", {
    seq: 1,
    time: 1,
    type: "turn/end",
    data: { turn: 1, reason: { kind: "error", step: 2, message: "append refused", code: "APPEND_REFUSED" } }
  }],
  ["turn/end error with message only", {
    seq: 1,
    time: 1,
    type: "turn/end",
    data: { turn: 1, reason: { kind: "error", step: 2, message: "listener threw" } }
  }],
  ["step/start", { seq: 2, time: 2, type: "step/start", data: { turn: 1, step: 1 } }],
  ["step/end", { seq: 3, time: 3, type: "step/end", data: { turn: 1, step: 1 } }],
  ["user/message with messageId", {
    seq: 4,
    time: 4,
    type: "user/message",
    data: { messageId, content: [{ type: "text", text: "fix the bug" }], source: { kind: "user" } }
  }],
  ["user/message without messageId (a hook's context)", {
    seq: 4,
    time: 4,
    type: "user/message",
    data: {
      content: [{ type: "text", text: "ctx" }, { type: "text", text: "more" }],
      source: { kind: "plugin", plugin: "p" }
    }
  }],
  ["user/message carrying a goal change", {
    seq: 4,
    time: 4,
    type: "user/message",
    data: { content: [{ type: "text", text: "goal set" }], source: goalStateChange }
  }],
  ["steering/message", {
    seq: 5,
    time: 5,
    type: "steering/message",
    data: {
      turn: 1,
      messageId: otherMessageId,
      content: [{ type: "text", text: "also run tests" }],
      source: { kind: "user" }
    }
  }],
  ["assistant/chunk", {
    seq: 6,
    time: 6,
    type: "assistant/chunk",
    data: { turn: 1, step: 1, chunk: { type: "text-delta", id: "0", delta: "Hel", metadata: { n: [1, null, true] } } }
  }],
  ["assistant/chunk with a scalar chunk", {
    seq: 6,
    time: 6,
    type: "assistant/chunk",
    data: { turn: 1, step: 1, chunk: "raw" }
  }],
  ["assistant/message with usage and provenance", {
    seq: 8,
    time: 8,
    type: "assistant/message",
    data: {
      turn: 1,
      step: 1,
      content: [
        { type: "reasoning", text: "look at the file first" },
        { type: "text", text: "Reading it." },
        { type: "tool-call", id: callId, name: "read", arguments: "{\"path\": \"a.ts\" }" }
      ],
      provenance: { model: "deepseek-chat", provider: "deepseek", replayState: { reasoning_content: "…", n: 2 } },
      finishReason: "tool-calls",
      usage: { inputTokens: 1200, outputTokens: 80, totalTokens: 1280, reasoningTokens: 40, cachedInputTokens: 1024 }
    },
    sourceEventSeqs: [6, 7]
  }],
  ["assistant/message minimal", {
    seq: 8,
    time: 8,
    type: "assistant/message",
    data: { turn: 1, step: 2, content: [], provenance: { model: "m" } }
  }],
  ["tool/call with raw (invalid JSON) arguments", {
    seq: 9,
    time: 9,
    type: "tool/call",
    data: { turn: 1, step: 1, callId, name: "read", arguments: "{\"path\": \"a." }
  }],
  ["tool/result", {
    seq: 10,
    time: 10,
    type: "tool/result",
    data: { turn: 1, step: 1, callId, name: "read", content: [{ type: "text", text: "file body" }], isError: false },
    sourceEventSeqs: [9]
  }],
  ["tool/result with error and meta", {
    seq: 10,
    time: 10,
    type: "tool/result",
    data: {
      turn: 1,
      step: 1,
      callId,
      name: "bash",
      content: [{ type: "text", text: "aborted" }],
      isError: true,
      error: { name: "ToolAborted", code: "ABORTED" },
      meta: { exitCode: null, durationMs: 12, files: ["a.ts"] }
    },
    sourceEventSeqs: [9]
  }],
  ["request/header initial, full", {
    seq: 1,
    time: 1,
    type: "request/header",
    data: {
      header: {
        config: { model: "deepseek-chat", provider: "deepseek", options: { temperature: 0.2, max_tokens: 4096 } },
        system: "You are Harness.",
        tools: [
          {
            name: "read",
            description: "Read a file",
            parameters: { type: "object", properties: { path: { type: "string" } } }
          },
          { name: "noop", parameters: {} }
        ]
      },
      reason: "initial"
    }
  }],
  ["request/header resume, minimal", {
    seq: 1,
    time: 1,
    type: "request/header",
    data: { header: { config: { model: "m" } }, reason: "resume" }
  }],
  ["request/header change", {
    seq: 1,
    time: 1,
    type: "request/header",
    data: { header: { config: { model: "m2" }, tools: [] }, reason: "change" }
  }],
  ["compaction", {
    seq: 9,
    time: 1,
    type: "compaction",
    data: {
      turn: 2,
      step: 3,
      summary: "The user asked for a plan; the plan is written.",
      through: 7,
      messages: 4,
      reason: "automatic",
      estimate: 812,
      model: "m",
      usage: { inputTokens: 800, outputTokens: 12 }
    }
  }],
  ["turn/rollback", {
    seq: 10,
    time: 1,
    type: "turn/rollback",
    data: { turn: 3, by: otherMessageId, from: 5, through: 8 }
  }]
]
