import { assert, describe, it } from "@effect/vitest"
import { Effect, Random, Schema } from "effect"
import * as Ids from "../src/Ids.js"
import { decodeError, roundTrip } from "./fixtures.js"

const idSuite = <A extends string>(
  name: string,
  schema: Schema.Schema<A, string> & { readonly make: (raw: string) => A }
) =>
  describe(name, () => {
    it.effect("round trips any non-empty string", () =>
      Effect.gen(function*() {
        for (const raw of ["a", "0b6f1c2e-6c1d-4d8e-9a8f-3c2b1a0f9e8d", "call_01 with spaces", "ü"]) {
          yield* roundTrip(schema, yield* Schema.decodeUnknown(schema)(raw))
        }
      }))

    it.effect("refuses an empty string, naming the problem", () =>
      Effect.gen(function*() {
        assert.include(yield* decodeError(schema, ""), "an id must be a non-empty string")
      }))

    it.effect("refuses a number, null and undefined", () =>
      Effect.gen(function*() {
        assert.include(yield* decodeError(schema, 42), "Expected string, actual 42")
        assert.include(yield* decodeError(schema, null), "Expected string, actual null")
        assert.include(yield* decodeError(schema, undefined), "Expected string, actual undefined")
      }))

    it("make refuses an empty id", () => {
      assert.throws(() => schema.make(""), "an id must be a non-empty string")
    })
  })

describe("Ids", () => {
  idSuite("SessionId", Ids.SessionId)
  idSuite("AgentMessageId", Ids.AgentMessageId)
  idSuite("ToolCallId", Ids.ToolCallId)

  it("the brands keep one kind of id from standing for another (compile time)", () => {
    const takesMessageId = (id: Ids.AgentMessageId): string => id
    // @ts-expect-error a SessionId is not an AgentMessageId
    takesMessageId(Ids.SessionId.make("s-1"))
    // @ts-expect-error a ToolCallId is not an AgentMessageId
    takesMessageId(Ids.ToolCallId.make("c-1"))
    // @ts-expect-error a plain string is not an AgentMessageId
    takesMessageId("m-1")
    assert.strictEqual(takesMessageId(Ids.AgentMessageId.make("m-1")), "m-1")
  })

  it.effect("randomUuid: version-4 UUIDs from the context's Random, the same again under the same seed", () =>
    Effect.gen(function*() {
      const v4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
      const draw = (seed: number) =>
        Effect.withRandom(
          Effect.all(Array.from({ length: 200 }, () => Ids.randomUuid(Ids.SessionId))),
          Random.make(seed)
        )
      const first = yield* draw(1)
      for (const id of first) assert.match(id, v4)
      assert.strictEqual(new Set(first).size, first.length)
      assert.deepStrictEqual(yield* draw(1), first)
      assert.notDeepEqual(yield* draw(2), first)
      // The variant nibble takes its four values, and the random digits all sixteen.
      assert.sameMembers([...new Set(first.map((id) => id[19]))], ["8", "9", "a", "b"])
      assert.strictEqual(new Set(first.join("").replace(/-/g, "")).size, 16)
    }))
})
