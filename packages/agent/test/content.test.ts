/**
 * The response assembly (`internal/content.ts`) as a pure fold: interleaved text and reasoning blocks keep their
 * order of appearance, tool-call arguments are the model's text verbatim, a delta without its start is a block of
 * its own, and folding never changes a state it was given (so a state can be kept and folded on twice). And the
 * `assistant/chunk` record of a part is `@effect/ai`'s own encoding: the stream-part schema decodes it back.
 */
import { Response, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { DateTime, Option, Schema } from "effect"
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

describe("assistant/chunk: @effect/ai's own encoding of a stream part", () => {
  // A tool with any object parameters, as the agent advertises its tools (the loop decodes arguments itself).
  const ls = Tool.make("ls").setParameters(
    Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  )
  const schema = Response.StreamPart(Toolkit.make(ls))
  const decode = Schema.decodeUnknownSync(schema)
  const encode = Schema.encodeSync(schema)
  /** The schema's own encoding as JSON, without an empty `metadata` (its decoding default). */
  const schemaJson = (part: Part) => {
    const json = JSON.parse(JSON.stringify(encode(part as never)))
    if (Object.keys(json.metadata ?? {}).length === 0) delete json.metadata
    return json
  }
  const streamed: ReadonlyArray<Part> = [
    Response.makePart("text-start", { id: "t" }),
    Response.makePart("text-delta", { id: "t", delta: "Hi \u0000 \"there\"" }),
    Response.makePart("text-end", { id: "t", metadata: { provider: { cached: true } } }),
    Response.makePart("reasoning-start", { id: "r" }),
    Response.makePart("reasoning-delta", { id: "r", delta: "hmm" }),
    Response.makePart("reasoning-end", { id: "r" }),
    Response.makePart("tool-params-start", { id: "c", name: "ls", providerExecuted: false }),
    Response.makePart("tool-params-delta", { id: "c", delta: "{\"path\"" }),
    Response.makePart("tool-params-end", { id: "c" }),
    Response.makePart("tool-call", {
      id: "c",
      name: "ls",
      params: { path: ".", metadata: {} },
      providerName: "list",
      providerExecuted: false
    }),
    Response.makePart("finish", { reason: "stop", usage })
  ]

  it("the parts a model streams most are stored as the schema encodes them; each decodes back to its part", () => {
    for (const part of streamed) {
      const stored = Assembly.chunkJson(part)
      assert.deepStrictEqual(stored, schemaJson(part), part.type)
      const decoded = decode(stored)
      assert.deepStrictEqual(Assembly.chunkJson(decoded as Part), stored, part.type)
      // A usage count that was `undefined` comes back absent; everything else comes back as it was.
      if (part.type !== "finish") assert.deepStrictEqual<unknown>(decoded, part, part.type)
    }
  })

  it("every other part goes through the schema: Options, dates and bytes are encoded, not copied as objects", () => {
    const others: ReadonlyArray<Part> = [
      Response.makePart("response-metadata", {
        id: Option.some("resp-1"),
        modelId: Option.some("served"),
        timestamp: Option.some(DateTime.unsafeMake(0))
      }),
      Response.makePart("response-metadata", { id: Option.none(), modelId: Option.none(), timestamp: Option.none() }),
      Response.makePart("file", { mediaType: "text/plain", data: new Uint8Array([104, 105]) }),
      Response.makePart("error", { error: { code: "SERVER", detail: [1, 2] } })
    ]
    assert.deepStrictEqual(Assembly.chunkJson(others[0]!), {
      type: "response-metadata",
      id: "resp-1",
      modelId: "served",
      timestamp: "1970-01-01T00:00:00.000Z"
    })
    assert.deepStrictEqual(Assembly.chunkJson(others[2]!), { type: "file", mediaType: "text/plain", data: "aGk=" })
    for (const part of others) {
      const stored = Assembly.chunkJson(part)
      assert.deepStrictEqual(stored, schemaJson(part), part.type)
      // Decoding gives the part back: its encoding again is what was stored.
      assert.deepStrictEqual(Assembly.chunkJson(decode(stored) as Part), stored, part.type)
    }
  })
})
