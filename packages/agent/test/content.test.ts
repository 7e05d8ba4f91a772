/**
 * The response assembly (`internal/content.ts`) as a pure fold: interleaved text and reasoning blocks keep their
 * order of appearance, tool-call arguments are the model's text verbatim, a delta without its start is a block of
 * its own, and folding never changes a state it was given (so a state can be kept and folded on twice).
 */
import { Response } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { Option } from "effect"
import * as Assembly from "../src/internal/content.js"

type Part = Parameters<typeof Assembly.step>[1]

const fold = (parts: ReadonlyArray<Part>, from: Assembly.State = Assembly.initial) => parts.reduce(Assembly.step, from)

const usage = new Response.Usage({
  inputTokens: 3,
  outputTokens: 5,
  totalTokens: 8,
  reasoningTokens: undefined,
  cachedInputTokens: undefined
})

describe("response assembly (a pure fold)", () => {
  it("interleaved blocks keep their order; deltas join their own block; tool arguments stay verbatim", () => {
    const state = fold([
      Response.makePart("reasoning-start", { id: "r" }),
      Response.makePart("text-start", { id: "t" }),
      Response.makePart("reasoning-delta", { id: "r", delta: "think " }),
      Response.makePart("text-delta", { id: "t", delta: "Hel" }),
      Response.makePart("reasoning-delta", { id: "r", delta: "hard" }),
      Response.makePart("text-delta", { id: "t", delta: "lo" }),
      Response.makePart("tool-params-start", { id: "c1", name: "ls", providerExecuted: false }),
      Response.makePart("tool-params-delta", { id: "c1", delta: "{ \"path\":" }),
      Response.makePart("tool-params-delta", { id: "c1", delta: " \".\" }" }),
      // The final call part does not replace the streamed text (its params would serialise differently).
      Response.makePart("tool-call", { id: "c1", name: "ls", params: { path: "." }, providerExecuted: false }),
      Response.makePart("tool-call", { id: "c2", name: "pwd", params: {}, providerExecuted: false }),
      Response.makePart("response-metadata", {
        id: Option.none(),
        modelId: Option.some("served-model"),
        timestamp: Option.none()
      }),
      Response.makePart("finish", { reason: "tool-calls", usage })
    ])
    const assembled = Assembly.result(state)
    assert.deepStrictEqual(assembled.content, [
      { type: "reasoning", text: "think hard" },
      { type: "text", text: "Hello" },
      { type: "tool-call", id: Ids.ToolCallId.make("c1"), name: "ls", arguments: "{ \"path\": \".\" }" },
      { type: "tool-call", id: Ids.ToolCallId.make("c2"), name: "pwd", arguments: "{}" }
    ])
    assert.strictEqual(assembled.finishReason, "tool-calls")
    assert.deepStrictEqual(assembled.usage, { inputTokens: 3, outputTokens: 5, totalTokens: 8 })
    assert.strictEqual(assembled.reportedModel, "served-model")
    assert.isFalse(assembled.hasError)
  })

  it("a delta without its start is a block of its own; empty text blocks are dropped; an error part is kept", () => {
    const assembled = Assembly.result(fold([
      Response.makePart("text-delta", { id: "x", delta: "a" }),
      Response.makePart("text-delta", { id: "x", delta: "b" }),
      Response.makePart("text-start", { id: "empty" }),
      Response.makePart("error", { error: { code: "SERVER" } })
    ]))
    assert.deepStrictEqual(assembled.content, [{ type: "text", text: "a" }, { type: "text", text: "b" }])
    assert.isTrue(assembled.hasError)
    assert.deepStrictEqual(assembled.error, { code: "SERVER" })
    assert.strictEqual(assembled.finishReason, undefined)
  })

  it("folding never changes the state it was given: a kept state folds on independently", () => {
    const start = fold([
      Response.makePart("text-start", { id: "t" }),
      Response.makePart("text-delta", { id: "t", delta: "x" })
    ])
    const snapshot = JSON.stringify(start)
    const one = fold([Response.makePart("text-delta", { id: "t", delta: "1" })], start)
    const two = fold([Response.makePart("text-delta", { id: "t", delta: "2" })], start)
    assert.strictEqual(JSON.stringify(start), snapshot)
    assert.deepStrictEqual(Assembly.result(one).content, [{ type: "text", text: "x1" }])
    assert.deepStrictEqual(Assembly.result(two).content, [{ type: "text", text: "x2" }])
    assert.deepStrictEqual(Assembly.result(Assembly.initial).content, [])
  })
})
