import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Content from "../src/Content.js"
import { callId, decodeError, roundTrip } from "./fixtures.js"

const blocks: ReadonlyArray<readonly [string, Content.ContentBlock]> = [
  ["text", { type: "text", text: "hello\nworld" }],
  ["empty text", { type: "text", text: "" }],
  ["reasoning", { type: "reasoning", text: "let me think" }],
  ["tool-call with valid JSON arguments", {
    type: "tool-call",
    id: callId,
    name: "read",
    arguments: "{\"path\":\"a.ts\"}"
  }],
  ["tool-call with truncated arguments", { type: "tool-call", id: callId, name: "read", arguments: "{\"path\": \"a." }],
  ["tool-result", { type: "tool-result", toolCallId: callId, content: [{ type: "text", text: "ok" }] }],
  ["tool-result with isError", { type: "tool-result", toolCallId: callId, content: [], isError: true }]
]

describe("Content", () => {
  for (const [name, block] of blocks) {
    it.effect(`round trips ${name}`, () => roundTrip(Content.ContentBlock, block))
  }

  it.effect("keeps tool-call arguments verbatim: whitespace, key order, invalid JSON", () =>
    Effect.gen(function*() {
      for (const raw of ["{ \"b\": 1,\n  \"a\": 2 }", "not json at all", "", "{\"a\":1}{\"a\":1}"]) {
        const block = yield* Schema.decodeUnknown(Content.ContentBlock)({
          type: "tool-call",
          id: "call_1",
          name: "x",
          arguments: raw
        })
        assert.strictEqual(block.type === "tool-call" ? block.arguments : undefined, raw)
      }
    }))

  it.effect("an assistant block is never a tool result", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(Content.AssistantBlock, {
        type: "tool-result",
        toolCallId: "call_1",
        content: []
      })
      assert.include(message, "[\"type\"]")
      assert.include(message, "Expected \"text\" | \"reasoning\" | \"tool-call\", actual \"tool-result\"")
    }))

  it.effect("a tool call needs an id, naming the missing key", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(Content.ToolCallBlock, { type: "tool-call", name: "x", arguments: "{}" })
      assert.include(message, "[\"id\"]")
      assert.include(message, "is missing")
    }))

  it("text and joinText", () => {
    assert.deepStrictEqual(Content.text("hi"), { type: "text", text: "hi" })
    assert.strictEqual(
      Content.joinText([Content.text("a"), { type: "reasoning", text: "skip" }, Content.text("b")]),
      "ab"
    )
    assert.strictEqual(Content.joinText([]), "")
  })
})
