import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as MessageSource from "../src/MessageSource.js"
import { decodeError, roundTrip, sources } from "./fixtures.js"

const goal = { kind: "goal", goalId: "goal-1", revision: 1 } as const

describe("MessageSource", () => {
  for (const [name, source] of sources) {
    it.effect(`round trips ${name}`, () => roundTrip(MessageSource.MessageSource, source))
  }

  it("the helpers build valid sources", () => {
    assert.isTrue(Schema.is(MessageSource.MessageSource)(MessageSource.user))
    assert.deepStrictEqual(MessageSource.plugin("p"), { kind: "plugin", plugin: "p" })
  })

  it("the union is exactly `kinds`, and each sample belongs to one kind", () => {
    assert.strictEqual(MessageSource.MessageSource.members.length, MessageSource.kinds.length)
    MessageSource.kinds.forEach((kind, i) => assert.strictEqual(MessageSource.MessageSource.members[i], kind))
    for (const [name, source] of sources) {
      const accepting = MessageSource.kinds.filter((kind: Schema.Schema.AnyNoContext) => Schema.is(kind)(source))
      assert.strictEqual(accepting.length, 1, name)
    }
  })

  it.effect("an unknown kind is refused, listing the known kinds", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(MessageSource.MessageSource, { kind: "tool" })
      assert.include(message, "[\"kind\"]")
      assert.include(message, "Expected \"user\" | \"plugin\" | \"goal\" | \"subagent\", actual \"tool\"")
    }))

  it.effect("goal round 0 must carry a change", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(MessageSource.MessageSource, { ...goal, round: 0 })
      assert.include(message, "[\"change\"]")
      assert.include(message, "round 0 is a goal state change and must carry its `change`")
    }))

  it.effect("goal round ≥ 1 must not carry a change", () =>
    Effect.gen(function*() {
      for (const round of [1, 7]) {
        const message = yield* decodeError(MessageSource.MessageSource, { ...goal, round, change: { status: "done" } })
        assert.include(message, "[\"change\"]")
        assert.include(message, `round ${round} is a continuation prompt and must not carry a \`change\``)
      }
    }))

  it.effect("goal fields are checked: goalId non-empty, revision ≥ 1, round a non-negative integer", () =>
    Effect.gen(function*() {
      assert.include(
        yield* decodeError(MessageSource.GoalSource, { ...goal, goalId: "", round: 1 }),
        "goalId must be a non-empty string"
      )
      assert.include(
        yield* decodeError(MessageSource.GoalSource, { ...goal, revision: 0, round: 1 }),
        "expected a positive integer, got 0"
      )
      assert.include(
        yield* decodeError(MessageSource.GoalSource, { ...goal, round: -1 }),
        "expected a non-negative integer, got -1"
      )
      assert.include(
        yield* decodeError(MessageSource.GoalSource, { ...goal, round: 0.5 }),
        "expected a non-negative integer, got 0.5"
      )
    }))

  it.effect("a goal change must be JSON-lossless", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(MessageSource.MessageSource, {
        ...goal,
        round: 0,
        change: { at: new Date(0) }
      })
      assert.include(message, "[\"change\"]")
      assert.include(message, "at is an instance of Date, which JSON cannot represent losslessly")
    }))

  it.effect("a new kind is one more struct in `kinds` (how to extend)", () =>
    Effect.gen(function*() {
      const Workspace = Schema.Struct({ kind: Schema.Literal("workspace-instructions"), baseline: Schema.Boolean })
      const Extended = Schema.Union(...MessageSource.kinds, Workspace)
      yield* roundTrip(Extended, { kind: "workspace-instructions", baseline: true })
      for (const [, source] of sources) yield* roundTrip(Extended, source)
    }))
})
