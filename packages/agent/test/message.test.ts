/**
 * The agent's acceptance decoder for messages (`internal/message.ts`): what `send`, its presets, `batch`, `edit` and
 * a tool's attached contexts accept, the frozen copy they keep, each refusal's message, and the shortcut for a
 * message in its common form checked against the schema (ADR 0043).
 */
import { assert, describe, it } from "@effect/vitest"
import type { MessageSource } from "@harness/domain"
import { Effect, Exit, FastCheck as fc } from "effect"
import * as Message from "../src/internal/message.js"

const text = [{ type: "text", text: "hi" }]
const goal0 = { kind: "goal", goalId: "g-1", revision: 1, round: 0 } as const

/** One sample of every source kind, goal rounds 0 and ≥ 1 included. */
const sources: ReadonlyArray<readonly [string, MessageSource.MessageSource]> = [
  ["user", { kind: "user" }],
  ["plugin", { kind: "plugin", plugin: "todo-reminder" }],
  ["plugin with an empty name", { kind: "plugin", plugin: "" }],
  ["goal state change (round 0)", { ...goal0, change: { status: "active", budget: { turns: 5 }, tags: ["a"] } }],
  ["goal continuation (round 2)", { kind: "goal", goalId: "g-1", revision: 3, round: 2 }]
]

/** True when `u` and everything reachable from it is frozen. */
const isDeepFrozen = (u: unknown): boolean =>
  typeof u !== "object" || u === null || (Object.isFrozen(u) && Object.values(u).every(isDeepFrozen))

/** Runs `decodeUserMessageData`, expects `InvalidMessageError`, returns its message. */
const refusal = (input: unknown) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(Message.decodeUserMessageData(input))
    assert.instanceOf(error, Message.InvalidMessageError)
    assert.strictEqual(error._tag, "InvalidMessageError")
    assert.match(error.message, /^invalid message: /)
    return error.message
  })

/** [what, bad value placed in a goal's `change`, the path and problem the message must name] */
const notJson: ReadonlyArray<readonly [string, () => unknown, string]> = [
  ["NaN", () => ({ score: NaN }), "score is NaN"],
  ["Infinity", () => ({ limit: Infinity }), "limit is Infinity"],
  ["-0", () => ({ n: [1, -0] }), "n[1] is -0"],
  ["undefined", () => ({ note: undefined }), "note is undefined"],
  ["a function", () => ({ run: () => 1 }), "run is a function"],
  ["a bigint", () => ({ big: 1n }), "big is a bigint"],
  ["a Date", () => ({ at: new Date(0) }), "at is an instance of Date"],
  ["a Map", () => ({ m: new Map() }), "m is an instance of Map"],
  ["a cycle", () => {
    const self: Record<string, unknown> = {}
    self["self"] = self
    return { self }
  }, "self.self is a cycle"],
  // `[1, , 3]` has a real hole at index 1
  // eslint-disable-next-line no-sparse-arrays -- the hole is what this case tests
  ["a sparse array", () => ({ list: [1, , 3] }), "list[1] is a hole in a sparse array"]
]

describe("Message.decodeUserMessageData", () => {
  it.effect("accepts valid input and returns an equal value", () =>
    Effect.gen(function*() {
      for (const [, source] of sources) {
        const input: Message.UserMessageData = { content: [{ type: "text", text: "go" }], source }
        assert.deepStrictEqual(yield* Message.decodeUserMessageData(input), input)
      }
    }))

  it.effect("frozen at acceptance: the result is deep-frozen and later mutation of the input changes nothing", () =>
    Effect.gen(function*() {
      const change = { status: "active", budget: { turns: 3 }, tags: ["a"] }
      const content = [{ type: "text", text: "original" }]
      const source: { kind: "goal"; goalId: string; revision: number; round: number; change: typeof change } = {
        ...goal0,
        change
      }
      const input = { content, source }
      const accepted = yield* Message.decodeUserMessageData(input)
      assert.isTrue(isDeepFrozen(accepted))

      content[0] = { type: "text", text: "mutated" }
      content.push({ type: "text", text: "more" })
      change.status = "mutated"
      change.budget.turns = 99
      change.tags.push("b")
      source.goalId = "other"

      assert.deepStrictEqual(accepted, {
        content: [{ type: "text", text: "original" }],
        source: { ...goal0, change: { status: "active", budget: { turns: 3 }, tags: ["a"] } }
      })
    }))

  it.effect("the accepted value cannot be mutated", () =>
    Effect.gen(function*() {
      const accepted = yield* Message.decodeUserMessageData({ content: text, source: { kind: "user" } })
      assert.isFalse(Reflect.set(accepted, "source", { kind: "plugin", plugin: "x" }))
      assert.isFalse(Reflect.set(accepted.content, 0, { type: "text", text: "changed" }))
      assert.isFalse(Reflect.set(accepted.content[0], "text", "changed"))
      assert.deepStrictEqual(accepted, { content: [{ type: "text", text: "hi" }], source: { kind: "user" } })
    }))

  it.effect("refuses empty content", () =>
    Effect.gen(function*() {
      const message = yield* refusal({ content: [], source: { kind: "user" } })
      assert.include(message, "[\"content\"]")
      assert.include(message, "content must be a non-empty list of text blocks")
    }))

  it.effect("refuses content that is not a list", () =>
    Effect.gen(function*() {
      for (const content of ["hi", null, { type: "text", text: "hi" }]) {
        const message = yield* refusal({ content, source: { kind: "user" } })
        assert.include(message, "[\"content\"]")
        assert.include(message, "content must be a non-empty list of text blocks")
      }
    }))

  it.effect("refuses a non-text block, naming its index and its type", () =>
    Effect.gen(function*() {
      const reasoning = yield* refusal({
        content: [{ type: "text", text: "ok" }, { type: "reasoning", text: "hmm" }],
        source: { kind: "user" }
      })
      assert.include(reasoning, "[\"content\"]")
      assert.include(reasoning, "[1]")
      assert.include(reasoning, "[\"type\"]")
      assert.include(reasoning, "Expected \"text\", actual \"reasoning\"")

      const toolCall = yield* refusal({
        content: [{ type: "tool-call", id: "c", name: "x", arguments: "{}" }],
        source: { kind: "user" }
      })
      assert.include(toolCall, "[0]")
      assert.include(toolCall, "Expected \"text\", actual \"tool-call\"")
    }))

  it.effect("refuses a text block whose text is not a string", () =>
    Effect.gen(function*() {
      const message = yield* refusal({ content: [{ type: "text", text: NaN }], source: { kind: "user" } })
      assert.include(message, "[0]")
      assert.include(message, "[\"text\"]")
      assert.include(message, "Expected string, actual NaN")
    }))

  it.effect("refuses a missing or unknown source kind", () =>
    Effect.gen(function*() {
      const missing = yield* refusal({ content: text })
      assert.include(missing, "[\"source\"]")
      assert.include(missing, "is missing")
      const unknown = yield* refusal({ content: text, source: { kind: "tool" } })
      assert.include(unknown, "[\"source\"]")
      assert.include(unknown, "[\"kind\"]")
      assert.include(unknown, "Expected \"user\" | \"plugin\" | \"goal\" | \"subagent\", actual \"tool\"")
    }))

  it.effect("refuses goal round 0 without change", () =>
    Effect.gen(function*() {
      const message = yield* refusal({ content: text, source: goal0 })
      assert.include(message, "[\"source\"]")
      assert.include(message, "[\"change\"]")
      assert.include(message, "round 0 is a goal state change and must carry its `change`")
    }))

  it.effect("refuses goal round ≥ 1 with change", () =>
    Effect.gen(function*() {
      const message = yield* refusal({ content: text, source: { ...goal0, round: 3, change: {} } })
      assert.include(message, "[\"change\"]")
      assert.include(message, "round 3 is a continuation prompt and must not carry a `change`")
    }))

  describe("refuses values JSON cannot carry losslessly, naming the path", () => {
    for (const [what, make, expected] of notJson) {
      it.effect(what, () =>
        Effect.gen(function*() {
          const message = yield* refusal({ content: text, source: { ...goal0, change: make() } })
          // What is not plain data at all is refused by the input copy (`Input.copy`), before the schema runs and
          // with a path of its own; numbers JSON cannot carry are refused by the schema.
          if (message.startsWith("invalid message: source.change.")) {
            assert.include(message, `invalid message: source.change.${expected}`)
          } else {
            assert.include(message, "[\"source\"]")
            assert.include(message, "[\"change\"]")
            assert.include(message, `${expected}, which JSON cannot represent losslessly`)
          }
        }))
    }

    it.effect("a change that is undefined, or not an object", () =>
      Effect.gen(function*() {
        const undef = yield* refusal({ content: text, source: { ...goal0, change: undefined } })
        assert.include(undef, "the value is undefined, which JSON cannot represent losslessly")
        const list = yield* refusal({ content: text, source: { ...goal0, change: [1] } })
        assert.include(list, "expected a JSON object, got an array")
      }))
  })

  it.effect("refuses unknown extra keys, at the top, in a block and in the source", () =>
    Effect.gen(function*() {
      const top = yield* refusal({ content: text, source: { kind: "user" }, priority: 1 })
      assert.include(top, "[\"priority\"]")
      assert.include(top, "is unexpected, expected: \"content\" | \"source\"")

      const block = yield* refusal({ content: [{ type: "text", text: "x", cache: true }], source: { kind: "user" } })
      assert.include(block, "[\"cache\"]")
      assert.include(block, "is unexpected")

      const source = yield* refusal({ content: text, source: { kind: "user", name: "ann" } })
      assert.include(source, "[\"name\"]")
      assert.include(source, "is unexpected")

      const undefinedKey = yield* refusal({ content: text, source: { kind: "user" }, extra: undefined })
      assert.include(undefinedKey, "[\"extra\"]")
    }))

  it.effect("refuses input that is not an object", () =>
    Effect.gen(function*() {
      for (const input of [null, undefined, "hi", 42, [text]]) {
        assert.include(yield* refusal(input), "Expected UserMessageData")
      }
    }))
})

describe("Message.decodeUserMessageData's shortcut (ADR 0043)", () => {
  /** Keys in the order given, or the reverse. */
  const ordered = (entries: ReadonlyArray<readonly [string, unknown]>, reversed: boolean) =>
    Object.fromEntries(reversed ? [...entries].reverse() : entries)
  // Mostly the common form, each part of it sometimes off in one way: a shortcut that lets one wrong thing through
  // meets it in some of the runs.
  const mostly = <A>(usual: fc.Arbitrary<A>, ...others: ReadonlyArray<fc.Arbitrary<unknown>>) =>
    fc.oneof({ weight: 2 * others.length, arbitrary: usual }, ...others.map((arbitrary) => ({ weight: 1, arbitrary })))
  const rarely = fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) })
  const block = mostly(
    fc.string({ maxLength: 4 }).map((text) => ({ type: "text", text })),
    fc.string({ maxLength: 4 }).map((text) => ({ text, type: "text" })),
    fc.constant({ type: "text" }),
    fc.constant({ type: "image", text: "x" }),
    fc.constant({ type: "text", text: 1 }),
    fc.constant({ type: "text", text: "x", extra: true }),
    fc.constant(undefined)
  )
  const source = mostly(
    fc.oneof(fc.constant({ kind: "user" }), fc.string({ maxLength: 4 }).map((plugin) => ({ kind: "plugin", plugin }))),
    fc.constant({ kind: "user", plugin: "p" }),
    fc.constant({ plugin: "p", kind: "plugin" }),
    fc.constant({ kind: "plugin" }),
    fc.constant({ kind: "plugin", plugin: 7 }),
    fc.constant(goal0),
    fc.constant({ ...goal0, change: { goal: "ship" } }),
    fc.constant({ kind: "goal", goalId: "g-1", revision: 1, round: 1 }),
    fc.constant({ kind: "robot" }),
    fc.constant("user")
  )
  const message = fc.record({
    content: mostly(fc.array(block, { minLength: 1, maxLength: 3 }), fc.constant([]), fc.constant("hi")),
    source,
    reversed: rarely,
    extra: rarely
  }).map(({ content, extra, reversed, source }) =>
    ordered([["content", content], ["source", source], ...(extra ? [["note", "x"] as const] : [])], reversed)
  )
  const bySchema = Message.decodeInput(Message.UserMessageData, "message")

  // Asynchronous, one turn of the event loop per run: 2000 runs are half a minute of CPU on a loaded machine, and a
  // test worker that holds its event loop for a minute misses vitest's RPC deadline ("Timeout calling
  // onTaskUpdate"), failing the run. The time bound is the CPU's, not a race.
  it(
    "gives what the schema gives: the same value (keys in the same order, deep-frozen) or the same refusal",
    () =>
      fc.assert(
        fc.asyncProperty(message, async (input) => {
          await new Promise((resolve) => setImmediate(resolve))
          const fast = Effect.runSyncExit(Message.decodeUserMessageData(input))
          const slow = Effect.runSyncExit(bySchema(input))
          if (Exit.isSuccess(slow)) {
            assert.isTrue(Exit.isSuccess(fast), JSON.stringify(input))
            if (Exit.isSuccess(fast)) {
              assert.strictEqual(JSON.stringify(fast.value), JSON.stringify(slow.value))
              assert.isTrue(isDeepFrozen(fast.value))
            }
          } else {
            assert.deepStrictEqual(fast, slow)
          }
        }),
        { numRuns: 2000 }
      ),
    180_000
  )
})
