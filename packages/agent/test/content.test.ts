/**
 * The response assembly (`internal/content.ts`) as a pure fold: interleaved text and reasoning blocks keep their
 * order of appearance, tool-call arguments are the model's text verbatim, a delta without its start is a block of
 * its own, and folding never changes a state it was given (so a state can be kept and folded on twice). And the
 * `assistant/chunk` record of a part is `@effect/ai`'s own encoding: the stream-part schema decodes it back. And the
 * hand check that lets an `assistant/message` skip the schema pass (ADR 0023) accepts nothing the schema refuses.
 */
import { Response, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Ids, SessionEvent } from "@harness/domain"
import { DateTime, Either, FastCheck as fc, Option, Schema } from "effect"
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

describe("assistant/message: the hand check that trusts a message (ADR 0023)", () => {
  type Data = Parameters<typeof Assembly.isValidMessage>[0]
  type Loose = Record<string, unknown>
  const strict = Schema.validateEither(SessionEvent.AssistantMessage, { onExcessProperty: "error" })
  const text = fc.oneof(fc.string(), fc.constant("a lone \ud800 surrogate"))
  const count = fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER))
  const valid = fc.record({
    turn: fc.integer({ min: 1, max: 1_000_000 }),
    step: fc.integer({ min: 1, max: 100 }),
    content: fc.array(
      fc.oneof(
        fc.record({ type: fc.constantFrom("text" as const, "reasoning" as const), text }),
        fc.record({
          type: fc.constant("tool-call" as const),
          id: fc.string({ minLength: 1 }),
          name: text,
          arguments: text
        })
      ),
      { maxLength: 4 }
    ),
    provenance: fc.record({ model: text, provider: text, reportedModel: text }, { requiredKeys: ["model"] }),
    finishReason: text,
    usage: fc.record({ inputTokens: count, outputTokens: count, totalTokens: count }, { requiredKeys: [] })
  }, { requiredKeys: ["turn", "step", "content", "provenance"] })
  const wrong = fc.constantFrom<unknown>(-0, 0, 1.5, Number.NaN, -1, 2 ** 53, "", "x", 5, undefined, null, {}, [])
  /** A message of the schema's shape, with at most one field replaced by a value of a wrong (or right) kind. */
  const message = fc.tuple(valid, fc.option(fc.tuple(fc.nat(7), wrong, fc.nat(3)), { nil: undefined })).map(
    ([data, change]): Data => {
      if (change === undefined) return data as Data
      const [field, value, index] = change
      const content: Array<Loose> = data.content.map((block) => ({ ...block }))
      const block = content[index % Math.max(1, content.length)]
      const out: Loose = { ...data, content, provenance: { ...data.provenance } }
      if (field === 0) out.turn = value
      if (field === 1) out.step = value
      if (field === 2 && block !== undefined) block[block.type === "tool-call" ? "id" : "text"] = value
      if (field === 3 && block !== undefined) block[block.type === "tool-call" ? "arguments" : "type"] = value
      if (field === 4) out.usage = { ...data.usage, outputTokens: value }
      if (field === 5) out.finishReason = value
      if (field === 6) (out.provenance as Loose).model = value
      if (field === 7) (out.provenance as Loose).reportedModel = value
      return out as unknown as Data
    }
  )

  it.prop("trusted only when the schema accepts it and JSON keeps it; refused only when the schema refuses it", [
    message
  ], ([data]) => {
    const accepted = Either.isRight(strict(data))
    if (Assembly.isValidMessage(data)) {
      assert.isTrue(accepted)
      assert.deepStrictEqual(JSON.parse(JSON.stringify(data)), data)
    } else {
      // Stricter than the schema only on `replayState`, which the turn never sets (and this generator never makes).
      assert.isFalse(accepted)
    }
  }, { fastCheck: { numRuns: 1000 } })

  it("a token count the schema refuses (-0) is left out of the message's usage", () => {
    const finish = Response.makePart("finish", {
      reason: "stop",
      usage: new Response.Usage({ ...usage, outputTokens: -0 })
    })
    assert.deepStrictEqual(Assembly.result(Assembly.step(Assembly.initial, finish)).usage, {
      inputTokens: 3,
      totalTokens: 8
    })
  })
})
