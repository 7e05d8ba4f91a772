/**
 * The value schemas of options and limits: what they accept, what they refuse, and the one-line problem a refused
 * set is reported with.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Either, Schema } from "effect"
import { Setting } from "../src/index.js"

const problem = <A, I>(schema: Schema.Schema<A, I>, input: unknown, prefix?: string) =>
  Either.match(Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(input), {
    onLeft: (error) => Setting.problemOf(error, prefix),
    onRight: () => undefined
  })

describe("Setting", () => {
  it("counts: positive and non-negative safe integers, refused with the value shown", () => {
    assert.strictEqual(Schema.decodeUnknownSync(Setting.PositiveInt)(3), 3)
    assert.strictEqual(Schema.decodeUnknownSync(Setting.NonNegativeInt)(0), 0)
    assert.deepStrictEqual(problem(Setting.PositiveInt, 0), { path: "", message: "must be a positive integer, got 0" })
    assert.deepStrictEqual(problem(Setting.PositiveInt, "7"), {
      path: "",
      message: "must be a positive integer, got \"7\""
    })
    assert.deepStrictEqual(problem(Setting.NonNegativeInt, -1)?.message, "must be a non-negative integer, got -1")
    assert.deepStrictEqual(
      problem(Setting.NonNegativeInt, 2 ** 53)?.message,
      `must be a non-negative integer, got ${2 ** 53}`
    )
  })

  it("durations: any DurationInput, decoded; negative, infinite and (unless allowed) zero refused", () => {
    const positive = Setting.DurationInput({ allowZero: false })
    const nonNegative = Setting.DurationInput({ allowZero: true })
    assert.strictEqual(Duration.toMillis(Schema.decodeUnknownSync(positive)("30 seconds")), 30_000)
    assert.strictEqual(Duration.toMillis(Schema.decodeUnknownSync(positive)(250)), 250)
    assert.strictEqual(Duration.toMillis(Schema.decodeUnknownSync(nonNegative)(0)), 0)
    for (const bad of [0, -5, "soon", Duration.infinity, Number.POSITIVE_INFINITY, null]) {
      assert.include(problem(positive, bad)?.message, "must be a positive finite duration", String(bad))
    }
    assert.include(problem(nonNegative, -1)?.message, "must be a non-negative finite duration")
  })

  it("problemOf names the path of the first problem, and an unexpected key as not a known setting", () => {
    const Limits = Schema.Struct({ inner: Schema.Struct({ max: Setting.PositiveInt }) })
    assert.deepStrictEqual(problem(Limits, { inner: { max: 0 } }, "limits"), {
      path: "limits.inner.max",
      message: "must be a positive integer, got 0"
    })
    assert.deepStrictEqual(problem(Limits, { inner: { max: 1 }, extra: 1 }, "limits"), {
      path: "limits.extra",
      message: "is not a known setting"
    })
  })
})
