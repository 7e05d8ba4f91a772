import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Json from "../src/Json.js"
import { arbitraryJson, decodeError, isDeepFrozen, roundTrip } from "./fixtures.js"

const cyclic = (): unknown => {
  const node: { name: string; self?: unknown } = { name: "loop" }
  node.self = node
  return { outer: [node] }
}

// `[1, , 3]` has a real hole at index 1 (not an `undefined` element)
// eslint-disable-next-line no-sparse-arrays -- the hole is what this case tests
const sparse = (): unknown => ({ list: [1, , 3] })

class Point {
  constructor(readonly x: number, readonly y: number) {}
}

/** [what, value, the path and problem the error must name] */
const notJson: ReadonlyArray<readonly [string, () => unknown, string]> = [
  ["NaN", () => ({ a: NaN }), "a is NaN"],
  ["Infinity", () => ({ a: [Infinity] }), "a[0] is Infinity"],
  ["-Infinity", () => ({ a: { b: -Infinity } }), "a.b is -Infinity"],
  ["-0", () => ({ a: -0 }), "a is -0"],
  ["undefined", () => ({ a: undefined }), "a is undefined"],
  ["a function", () => ({ a: { f: () => 1 } }), "a.f is a function"],
  ["a bigint", () => ({ n: [0, 10n] }), "n[1] is the bigint 10n"],
  ["a symbol", () => ({ s: Symbol("x") }), "s is a symbol"],
  ["a Date", () => ({ at: new Date(0) }), "at is an instance of Date"],
  ["a Map", () => ({ m: new Map([["k", 1]]) }), "m is an instance of Map"],
  ["a Set", () => ({ s: new Set([1]) }), "s is an instance of Set"],
  ["a class instance", () => ({ p: new Point(1, 2) }), "p is an instance of Point"],
  ["a cycle", cyclic, "outer[0].self is a cycle"],
  ["a sparse array", sparse, "list[1] is a hole in a sparse array"],
  ["a symbol key", () => ({ [Symbol("k")]: 1 }), "the value is an object with a symbol key"],
  ["a bare NaN", () => NaN, "the value is NaN"]
]

describe("Json.JsonValue", () => {
  it.effect("round trips every kind of JSON value", () =>
    Effect.gen(function*() {
      const values: ReadonlyArray<Json.JsonValue> = [
        null,
        true,
        false,
        0,
        -1.5,
        Number.MAX_SAFE_INTEGER,
        1e300,
        "",
        "héllo \u0000 \"quoted\" \ud83d\ude00 \ud800",
        [],
        {},
        [1, "two", null, [false], { three: 3 }],
        { nested: { deeply: { list: [{ a: 1 }, { b: [2, 3] }] } }, empty: "" }
      ]
      for (const value of values) yield* roundTrip(Json.JsonValue, value)
    }))

  it.effect("decoding copies and deep-freezes; later mutation of the input changes nothing", () =>
    Effect.gen(function*() {
      const input = { a: [1, { b: "x" }], c: { d: null } }
      const decoded = yield* Schema.decodeUnknown(Json.JsonValue)(input)
      assert.isTrue(isDeepFrozen(decoded))
      assert.isFalse(Object.isFrozen(input), "the input itself is not touched")
      input.a.push(2)
      input.c.d = null
      Object.assign(input, { extra: true })
      assert.deepStrictEqual(decoded, { a: [1, { b: "x" }], c: { d: null } })
    }))

  it.effect("accepts shared (acyclic) references and null-prototype objects", () =>
    Effect.gen(function*() {
      const shared = { k: 1 }
      const bare: Record<string, unknown> = Object.create(null)
      bare["x"] = 1
      const decoded = yield* Schema.decodeUnknown(Json.JsonValue)({ a: shared, b: shared, bare })
      assert.deepStrictEqual(JSON.parse(JSON.stringify(decoded)), { a: { k: 1 }, b: { k: 1 }, bare: { x: 1 } })
    }))

  it.effect("keeps a `__proto__` key as data, as JSON.parse does (regression)", () =>
    Effect.gen(function*() {
      const parsed: unknown = JSON.parse("{\"__proto__\":{\"polluted\":true},\"b\":2}")
      const decoded = yield* Schema.decodeUnknown(Json.JsonValue)(parsed)
      assert.strictEqual(JSON.stringify(decoded), "{\"__proto__\":{\"polluted\":true},\"b\":2}")
      assert.strictEqual(Object.getPrototypeOf(decoded), Object.prototype)
      assert.deepStrictEqual(Object.keys(decoded ?? {}), ["__proto__", "b"])
    }))

  it.effect.prop(
    "JSON.stringify → JSON.parse → decode gives back the same JSON text",
    [arbitraryJson],
    ([value]) =>
      Effect.gen(function*() {
        // A turn of the event loop per run: runs that resolve in promises alone starve the test worker's timers and
        // I/O for as long as the property takes (half a minute on a loaded machine; vitest's RPC gives up at one).
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
        const text = JSON.stringify(value)
        const decoded = yield* Schema.decodeUnknown(Json.JsonValue)(JSON.parse(text))
        assert.strictEqual(JSON.stringify(decoded), text)
        assert.isTrue(isDeepFrozen(decoded))
        const encoded = yield* Schema.encode(Json.JsonValue)(decoded)
        assert.strictEqual(JSON.stringify(encoded), text)
      }),
    // CPU-bound and deterministic: a second on a quiet machine, over 30 s (vitest's default) on a loaded one.
    { timeout: 180_000 }
  )

  describe("refuses what JSON cannot carry, naming the path and the problem", () => {
    for (const [what, make, expected] of notJson) {
      it.effect(what, () =>
        Effect.gen(function*() {
          const message = yield* decodeError(Json.JsonValue, make())
          assert.include(message, expected)
          assert.include(message, "which JSON cannot represent losslessly")
        }))
    }
  })

  it.effect("refuses non-JSON values on encode too", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Schema.encodeUnknown(Json.JsonValue)({ a: NaN }))
      assert.include(error.message, "a is NaN")
    }))
})

describe("Json.JsonObject", () => {
  it.effect("round trips a plain object", () => roundTrip(Json.JsonObject, { a: 1, b: [true, null], c: { d: "e" } }))

  it.effect("refuses values that are JSON but not objects", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError(Json.JsonObject, [1, 2]), "expected a JSON object, got an array")
      assert.include(yield* decodeError(Json.JsonObject, null), "expected a JSON object, got null")
      assert.include(yield* decodeError(Json.JsonObject, "x"), "expected a JSON object, got \"x\"")
    }))

  it.effect("refuses non-JSON members with their path", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError(Json.JsonObject, { a: { b: [Infinity] } }), "a.b[0] is Infinity")
    }))
})

describe("Json numbers", () => {
  it.effect("JsonNumber refuses NaN, ±Infinity and -0", () =>
    Effect.gen(function*() {
      yield* roundTrip(Json.JsonNumber, 1.25)
      for (const [n, shown] of [[NaN, "NaN"], [Infinity, "Infinity"], [-Infinity, "-Infinity"], [-0, "-0"]] as const) {
        assert.include(yield* decodeError(Json.JsonNumber, n), `${shown} cannot be represented losslessly in JSON`)
      }
    }))

  it.effect("NonNegativeInt accepts 0 and safe integers, refuses the rest", () =>
    Effect.gen(function*() {
      yield* roundTrip(Json.NonNegativeInt, 0)
      yield* roundTrip(Json.NonNegativeInt, Number.MAX_SAFE_INTEGER)
      for (
        const [n, shown] of [[-1, "-1"], [1.5, "1.5"], [-0, "-0"], [NaN, "NaN"], [2 ** 53, String(2 ** 53)]] as const
      ) {
        assert.include(yield* decodeError(Json.NonNegativeInt, n), `expected a non-negative integer, got ${shown}`)
      }
      assert.include(yield* decodeError(Json.NonNegativeInt, "1"), "Expected number, actual \"1\"")
    }))

  it.effect("PositiveInt refuses 0", () =>
    Effect.gen(function*() {
      yield* roundTrip(Json.PositiveInt, 1)
      assert.include(yield* decodeError(Json.PositiveInt, 0), "expected a positive integer, got 0")
      assert.include(yield* decodeError(Json.PositiveInt, -0), "expected a positive integer, got -0")
    }))
})

describe("Json.copyJson", () => {
  it("returns the issue sentence instead of throwing", () => {
    assert.deepStrictEqual(Json.copyJson({ a: [undefined] }), {
      issue: "a[0] is undefined, which JSON cannot represent losslessly"
    })
    assert.deepStrictEqual(Json.copyJson([1, "x"]), { value: [1, "x"] })
  })
})
