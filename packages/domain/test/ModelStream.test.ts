import { Response, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Either, Equal, FastCheck as fc, Schema } from "effect"
import * as ModelStream from "../src/ModelStream.js"

// The standard path: what `LanguageModel.streamText` decodes each part to (with a toolkit whose parameters accept
// any object, as the agent advertises its tools).
const toolkit = Toolkit.make(
  Tool.make("lookup").setParameters(Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown })))
)
const decode = Schema.decodeUnknownEither(Response.StreamPart(toolkit))

const samples: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Hello" },
  { type: "text-end", id: "t", metadata: { provider: { x: 1 } } },
  { type: "reasoning-start", id: "r" },
  { type: "reasoning-delta", id: "r", delta: "hm" },
  { type: "reasoning-end", id: "r" },
  { type: "tool-params-start", id: "c", name: "lookup" },
  { type: "tool-params-start", id: "c", name: "lookup", providerName: "p", providerExecuted: true },
  { type: "tool-params-delta", id: "c", delta: "{\"q\":" },
  { type: "tool-params-end", id: "c" },
  { type: "tool-call", id: "c", name: "lookup", params: { q: 1 } },
  { type: "tool-call", id: "c", name: "lookup", params: {}, providerName: "p", providerExecuted: false },
  { type: "finish", reason: "stop", usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 } },
  {
    type: "finish",
    reason: "tool-calls",
    usage: { inputTokens: undefined, outputTokens: 1, totalTokens: 1, reasoningTokens: 2, cachedInputTokens: 0 },
    metadata: { chat: { finishReason: "tool_calls" } }
  },
  { type: "response-metadata" },
  { type: "response-metadata", id: "resp-1", modelId: "m", timestamp: "2026-12-03T12:00:00.000Z" },
  { type: "error", error: { message: "boom" } },
  { type: "source", sourceType: "url", id: "s", url: "https://example.test/", title: "Example" }
]

const same = (a: unknown, b: unknown): boolean =>
  JSON.stringify(a) === JSON.stringify(b) &&
  JSON.stringify(Reflect.ownKeys(a as object)) === JSON.stringify(Reflect.ownKeys(b as object))

describe("ModelStream.typed", () => {
  it("builds what the standard path decodes: same keys in the same order, same values, same classes", () => {
    for (const part of samples) {
      const expected = decode(part)
      const actual = ModelStream.typed(part)
      assert.isTrue(Either.isRight(expected) && Either.isRight(actual), part.type)
      if (Either.isRight(expected) && Either.isRight(actual)) {
        assert.isTrue(same(actual.right, expected.right), `${part.type}: ${JSON.stringify(actual.right)}`)
        if (part.type === "finish" && actual.right.type === "finish" && expected.right.type === "finish") {
          assert.instanceOf(actual.right.usage, Response.Usage)
          assert.isTrue(Equal.equals(actual.right.usage, expected.right.usage))
        }
      }
    }
  })

  it("agrees with the schema on random text, reasoning and tool parts", () => {
    const id = fc.string({ maxLength: 8 })
    const part: fc.Arbitrary<Response.StreamPartEncoded> = fc.oneof(
      fc.record({
        type: fc.constantFrom("text-delta" as const, "reasoning-delta" as const, "tool-params-delta" as const),
        id,
        delta: fc.string()
      }),
      fc.record({
        type: fc.constantFrom(
          "text-start" as const,
          "text-end" as const,
          "reasoning-start" as const,
          "tool-params-end" as const
        ),
        id
      }),
      fc.record({ type: fc.constant("tool-params-start" as const), id, name: fc.string() }),
      fc.record({
        type: fc.constant("tool-call" as const),
        id,
        name: fc.constant("lookup"),
        // Without a "__proto__" key: the one place the two paths differ on purpose (the next test).
        params: fc.dictionary(fc.string().filter((key) => key !== "__proto__"), fc.jsonValue())
      })
    )
    fc.assert(fc.property(part, (p) => {
      const expected = decode(p)
      const actual = ModelStream.typed(p)
      return Either.isRight(expected) && Either.isRight(actual) && same(actual.right, expected.right)
    }))
  })

  it("keeps a tool call's \"__proto__\" parameter as the own key JSON gave it, where the schema sets a prototype", () => {
    const params = JSON.parse("{\"__proto__\": [1], \"q\": 2}") as Record<string, unknown>
    const actual = ModelStream.typed({ type: "tool-call", id: "c", name: "lookup", params })
    assert.isTrue(Either.isRight(actual) && actual.right.type === "tool-call")
    if (Either.isRight(actual) && actual.right.type === "tool-call") {
      const kept = actual.right.params as Record<string, unknown>
      assert.deepStrictEqual(Object.keys(kept), ["__proto__", "q"])
      assert.strictEqual(Object.getPrototypeOf(kept), Object.prototype)
    }
    // The standard path: the key is gone and the params object's prototype is the array.
    const expected = decode({ type: "tool-call", id: "c", name: "lookup", params })
    assert.isTrue(Either.isRight(expected) && expected.right.type === "tool-call")
    if (Either.isRight(expected) && expected.right.type === "tool-call") {
      assert.deepStrictEqual(Object.keys(expected.right.params as object), ["q"])
    }
  })

  it("fails where the schema fails: a response-metadata timestamp that is not a date", () => {
    const result = ModelStream.typed({ type: "response-metadata", timestamp: "not a date" })
    assert.isTrue(Either.isLeft(result))
    assert.include(Either.isLeft(result) ? result.left.message : "", "DateTime")
  })
})
