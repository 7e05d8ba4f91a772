/**
 * A tool call's raw argument text, parsed in one place for the history, the provider and the agent: blank text is
 * `{}`, JSON is parsed and frozen, anything else is refused with the parser's message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { Json, ToolArguments } from "../src/index.js"

describe("ToolArguments", () => {
  it("blank text is an empty object; JSON is parsed", () => {
    assert.deepStrictEqual(ToolArguments.parse(""), Either.right({}))
    assert.deepStrictEqual(ToolArguments.parse("  \n"), Either.right({}))
    assert.deepStrictEqual(
      ToolArguments.parse("{\"path\":\"a.md\",\"n\":[1,2]}"),
      Either.right({ path: "a.md", n: [1, 2] })
    )
    assert.deepStrictEqual(ToolArguments.parse("[1]"), Either.right([1]))
  })

  it("the parsed value is frozen all the way down", () => {
    const parsed = Either.getOrThrow(ToolArguments.parse("{\"a\":{\"b\":[1]}}")) as { a: { b: Array<number> } }
    assert.isTrue(Object.isFrozen(parsed) && Object.isFrozen(parsed.a) && Object.isFrozen(parsed.a.b))
  })

  it("text that is not JSON is a Left with the parser's message", () => {
    const parsed = ToolArguments.parse("{\"path\": ")
    assert.isTrue(Either.isLeft(parsed))
    assert.isTrue(Either.isLeft(parsed) && parsed.left.length > 0)
  })

  it("parseObject keeps objects only", () => {
    assert.deepStrictEqual(ToolArguments.parseObject("{\"x\":1}"), { x: 1 })
    assert.deepStrictEqual(ToolArguments.parseObject(""), {})
    assert.strictEqual(ToolArguments.parseObject("[1]"), undefined)
    assert.strictEqual(ToolArguments.parseObject("null"), undefined)
    assert.strictEqual(ToolArguments.parseObject("nope"), undefined)
  })

  it("Json.deepFreeze freezes in place and returns the value", () => {
    const value = { list: [{ x: 1 }] }
    assert.strictEqual(Json.deepFreeze(value), value)
    assert.isTrue(Object.isFrozen(value.list[0]))
  })
})
