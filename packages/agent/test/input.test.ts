/**
 * The input copy (`internal/input.ts`) every caller value goes through before a schema sees it, and the refusals a
 * decoder built on it (`internal/message.ts`) gives.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Input from "../src/internal/input.js"
import * as Message from "../src/internal/message.js"

const valid: Message.UserMessageData = { content: [{ type: "text", text: "hi" }], source: { kind: "user" } }

const nested = (depth: number): unknown => {
  let value: unknown = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { x: value }
  return value
}

const issueOf = (u: unknown, limits?: Input.Limits): Input.Issue => {
  const result = Input.copy(u, limits)
  assert.isTrue("issue" in result, "copied")
  return (result as { readonly issue: Input.Issue }).issue
}

class Point {
  constructor(readonly x: number) {}
}

/** [what, value, reason, message] — each refused with the reason and a message naming the path and the problem. */
const refused: ReadonlyArray<readonly [string, () => unknown, Input.IssueReason, string]> = [
  [
    "a getter",
    () => ({
      a: {
        get b() {
          throw new Error("boom")
        }
      }
    }),
    "accessor",
    "a.b is a getter or setter, not a data property"
  ],
  [
    "a throwing Proxy",
    () => ({
      c: [
        new Proxy({}, {
          ownKeys: () => {
            throw new Error("trap")
          }
        })
      ]
    }),
    "unreadable",
    "c[0] is unreadable: reading it threw"
  ],
  [
    "a revoked Proxy",
    () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      return { p: proxy }
    },
    "unreadable",
    "p is unreadable: reading it threw"
  ],
  ["Object.create(valid)", () => Object.create(valid), "not-plain", "the value is an object whose prototype"],
  ["a class instance", () => ({ at: new Point(1) }), "not-plain", "at is an instance of Point, not a plain object"],
  ["a Date", () => [new Date(0)], "not-plain", "[0] is an instance of Date"],
  ["a function", () => ({ f: () => 1 }), "not-plain", "f is a function"],
  ["a bigint", () => ({ n: 1n }), "not-plain", "n is a bigint"],
  ["a symbol value", () => ({ s: Symbol("s") }), "not-plain", "s is a symbol"],
  ["a symbol key", () => ({ [Symbol("k")]: 1 }), "not-plain", "the value is an object with a symbol key"],
  [
    "a cycle",
    () => {
      const self: Record<string, unknown> = {}
      self["self"] = self
      return self
    },
    "cycle",
    "self is a cycle"
  ],
  // eslint-disable-next-line no-sparse-arrays -- the hole is what this case tests
  ["a sparse array", () => ({ list: [1, , 3] }), "not-plain", "list[1] is a hole in a sparse array"],
  ["an array with a named property", () => Object.assign([1], { extra: 2 }), "not-plain", "property \"extra\""],
  [
    "an Array subclass",
    () => ({ list: new (class List extends Array {})() }),
    "not-plain",
    "list is an array of a subclass"
  ],
  ["nesting 5 000 deep", () => nested(5000), "too-deep", "nested deeper than the limit of 64 levels"],
  ["a string of 17 million characters", () => ({ text: "a".repeat(17_000_000) }), "too-large", "text is larger than"],
  [
    "3 million control characters (18 million encoded)",
    () => ({ text: "\u0001".repeat(3_000_000) }),
    "too-large",
    "text is larger than"
  ]
]

describe("Input.copy", () => {
  for (const [what, make, reason, message] of refused) {
    it(`refuses ${what} (${reason}) without throwing, naming where`, () => {
      const issue = issueOf(make())
      assert.strictEqual(issue.reason, reason)
      assert.include(issue.message, message)
    })
  }

  it("copies plain data into a frozen copy that shares nothing", () => {
    const source = { content: [{ type: "text", text: "hi" }], n: null, u: undefined, o: Object.create(null) }
    const result = Input.copy(source)
    assert.isTrue("value" in result)
    const value = (result as { readonly value: { readonly content: ReadonlyArray<{ readonly text: string }> } }).value
    assert.deepStrictEqual(value, source)
    assert.notStrictEqual(value.content, source.content)
    assert.isTrue(Object.isFrozen(value) && Object.isFrozen(value.content[0]!))
    source.content[0]!.text = "changed"
    assert.strictEqual(value.content[0]!.text, "hi")
  })

  it("skips non-enumerable properties, as JSON does", () => {
    const source = Object.defineProperty({ a: 1 }, "hidden", { value: 2, enumerable: false })
    assert.deepStrictEqual(Input.copy(source), { value: { a: 1 } })
  })

  it("keeps a `__proto__` key as data instead of setting the prototype", () => {
    const result = Input.copy(JSON.parse("{\"__proto__\": {\"polluted\": true}}"))
    const value = (result as { readonly value: object }).value
    assert.strictEqual(Object.getPrototypeOf(value), Object.prototype)
    assert.deepStrictEqual(Object.keys(value), ["__proto__"])
    assert.isUndefined(({} as Record<string, unknown>)["polluted"])
  })

  it("copies a Proxy that behaves as plain data as the data it showed, reading each key once", () => {
    let reads = 0
    const proxy = new Proxy({ a: 1, b: 2 }, {
      getOwnPropertyDescriptor: (target, key) => {
        reads++
        return Reflect.getOwnPropertyDescriptor(target, key)
      }
    })
    assert.deepStrictEqual(Input.copy(proxy), { value: { a: 1, b: 2 } })
    assert.strictEqual(reads, 2)
  })

  it("accepts exactly the depth limit and refuses one more", () => {
    const limits: Input.Limits = { maxDepth: 3, maxChars: 1000, maxValues: 100 }
    assert.isTrue("value" in Input.copy(nested(3), limits))
    assert.strictEqual(issueOf(nested(4), limits).reason, "too-deep")
  })

  it("counts the size as JSON.stringify would write it (escapes and surrogates included)", () => {
    for (const text of ["plain", "quote\" and \\ back", "\n\t\u0001\u001f", "pair 😀", "lone \ud800 and \udc00"]) {
      const exact = JSON.stringify({ text }).length
      assert.isTrue("value" in Input.copy({ text }, { maxDepth: 4, maxChars: exact, maxValues: 10 }), text)
      assert.strictEqual(
        issueOf({ text }, { maxDepth: 4, maxChars: exact - 1, maxValues: 10 }).reason,
        "too-large",
        text
      )
    }
  })

  it("a shared subtree is counted each time it appears (JSON writes it each time)", () => {
    let value: unknown = "x"
    for (let i = 0; i < 40; i++) value = [value, value] // 2^40 leaves if expanded
    const issue = issueOf(value)
    assert.strictEqual(issue.reason, "too-large")
    assert.include(issue.message, "is more values than the limit of 100000")
  })
})

describe("Message.decodeInput", () => {
  it.effect("refuses what the copy refuses with its reason, and a schema mismatch with `schema`", () =>
    Effect.gen(function*() {
      const deep = yield* Effect.flip(Message.decodeUserMessageData({ ...valid, source: nested(100) }))
      assert.strictEqual(deep.reason, "too-deep")
      assert.match(deep.message, /^invalid message: source.*nested deeper than the limit of 64 levels$/)
      const inherited = yield* Effect.flip(Message.decodeUserMessageData(Object.create(valid)))
      assert.strictEqual(inherited.reason, "not-plain")
      const wrong = yield* Effect.flip(Message.decodeUserMessageData({ ...valid, extra: 1 }))
      assert.strictEqual(wrong.reason, "schema")
      assert.match(wrong.message, /^invalid message: .*extra/s)
    }))

  it.effect("a refusal's message stays short however large the input", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Message.decodeUserMessageData({ content: [{ type: "image", text: "x".repeat(1_000_000) }], source: {} })
      )
      assert.isAtMost(error.message.length, 2001)
    }))

  it.effect("accepts a valid message as a frozen copy", () =>
    Effect.gen(function*() {
      const data = yield* Message.decodeUserMessageData(valid)
      assert.deepStrictEqual(data, valid)
      assert.isTrue(Object.isFrozen(data.content[0]))
    }))
})
