import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Turn from "../src/Turn.js"
import { bareFailure, decodeError, fullFailure, roundTrip, sources, userData } from "./fixtures.js"

/** One sample per kind; the `Record` makes the compiler insist on every kind. */
const endReasons: Record<Turn.TurnEndReason["kind"], ReadonlyArray<Turn.TurnEndReason>> = {
  completed: [{ kind: "completed" }],
  aborted: [{ kind: "aborted" }],
  disposed: [{ kind: "disposed" }],
  "max-tokens": [{ kind: "max-tokens" }],
  interrupted: [{ kind: "interrupted" }],
  "request-error": [
    { kind: "request-error", step: 2, failure: fullFailure },
    { kind: "request-error", step: 0, failure: bareFailure }
  ],
  error: [
    { kind: "error", step: 1, message: "hook `before-step` failed", code: "HOOK_FAILED" },
    { kind: "error", step: 1, message: "no model configured" }
  ],
  budget: [
    { kind: "budget", budget: "steps", scope: "turn", step: 50, limit: 50, used: 50 },
    { kind: "budget", budget: "cost", scope: "session", step: 0, limit: 0.5, used: 0.5012 }
  ]
}

const settleReasons: ReadonlyArray<Turn.SettleReason> = [
  { kind: "completed" },
  { kind: "aborted" },
  { kind: "error", message: "boom" },
  { kind: "error", message: "boom", code: "APPEND_FAILED" },
  { kind: "error", message: fullFailure.message, failure: fullFailure }
]

describe("Turn schemas round trip", () => {
  for (const [name, source] of sources) {
    it.effect(`TurnTrigger message with a ${name} source`, () =>
      roundTrip(Turn.TurnTrigger, { kind: "message", source }))
  }
  it.effect("TurnTrigger retry", () => roundTrip(Turn.TurnTrigger, { kind: "retry" }))

  for (const [kind, reasons] of Object.entries(endReasons)) {
    it.effect(`TurnEndReason ${kind}`, () =>
      Effect.gen(function*() {
        for (const reason of reasons) yield* roundTrip(Turn.TurnEndReason, reason)
      }))
  }

  it.effect("SettleReason, every shape", () =>
    Effect.gen(function*() {
      for (const reason of settleReasons) yield* roundTrip(Turn.SettleReason, reason)
    }))

  it.effect("PromptDecision allow (bare, rewritten, with contexts) and block", () =>
    Effect.gen(function*() {
      const decisions: ReadonlyArray<Turn.PromptDecision> = [
        { kind: "allow" },
        { kind: "allow", content: [{ type: "text", text: "rewritten" }] },
        {
          kind: "allow",
          content: [{ type: "text", text: "rewritten" }],
          additionalContexts: [userData, { content: [{ type: "text", text: "ctx" }], source: sources[1]![1] }]
        },
        { kind: "allow", additionalContexts: [] },
        { kind: "block", reason: "the prompt names a forbidden path" }
      ]
      for (const decision of decisions) yield* roundTrip(Turn.PromptDecision, decision)
    }))
})

describe("Turn schemas tell the two error shapes apart", () => {
  it.effect("a request failure keeps its LlmFailure, anything else its message and code", () =>
    Effect.gen(function*() {
      const request = yield* Schema.decodeUnknown(Turn.TurnEndReason)({
        kind: "request-error",
        step: 1,
        failure: bareFailure
      })
      assert.isTrue(Schema.is(Turn.RequestErrorReason)(request))
      const other = yield* Schema.decodeUnknown(Turn.TurnEndReason)({ kind: "error", step: 1, message: "x" })
      assert.isTrue(Schema.is(Turn.TurnErrorReason)(other))
      assert.isFalse(Schema.is(Turn.RequestErrorReason)(other))
    }))

  it.effect("the two error shapes have their own discriminants; a missing field is named", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(Turn.TurnEndReason, { kind: "error", step: 1 })
      assert.include(message, "[\"message\"]")
      assert.include(message, "is missing")
      const failure = yield* decodeError(Turn.TurnEndReason, { kind: "request-error", step: 1 })
      assert.include(failure, "[\"failure\"]")
      // A request failure written with the other shape's kind is refused (no more telling them apart by a field).
      assert.include(
        yield* decodeError(Turn.TurnEndReason, { kind: "error", step: 1, failure: bareFailure }),
        "message"
      )
    }))

  it.effect("an unknown end kind, trigger kind, or a bad failure code is refused", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError(Turn.TurnEndReason, { kind: "crashed" }), "actual \"crashed\"")
      assert.include(yield* decodeError(Turn.TurnTrigger, { kind: "timer" }), "actual \"timer\"")
      assert.include(yield* decodeError(Turn.TurnTrigger, { kind: "message" }), "[\"source\"]")
      const badCode = yield* decodeError(Turn.TurnEndReason, {
        kind: "request-error",
        step: 1,
        failure: { code: "OOPS", message: "x" }
      })
      assert.include(badCode, "[\"failure\"]")
      assert.include(badCode, "[\"code\"]")
      assert.include(badCode, "actual \"OOPS\"")
    }))

  it.effect("PromptDecision refuses empty rewritten content and invalid contexts", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError(Turn.PromptDecision, { kind: "allow", content: [] }), "[\"content\"]")
      const ctx = yield* decodeError(Turn.PromptDecision, {
        kind: "allow",
        additionalContexts: [{ content: [{ type: "text", text: "x" }], source: { kind: "robot" } }]
      })
      assert.include(ctx, "[\"additionalContexts\"]")
      assert.include(ctx, "actual \"robot\"")
    }))
})

describe("Turn.settleReasonOf (R58)", () => {
  it("completed and max-tokens settle as completed", () => {
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "completed" }), { kind: "completed" })
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "max-tokens" }), { kind: "completed" })
  })

  it("aborted, disposed and interrupted settle as aborted", () => {
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "aborted" }), { kind: "aborted" })
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "disposed" }), { kind: "aborted" })
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "interrupted" }), { kind: "aborted" })
  })

  it("a request failure settles as an error carrying the failure and its message", () => {
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "request-error", step: 2, failure: fullFailure }), {
      kind: "error",
      message: fullFailure.message,
      failure: fullFailure
    })
  })

  it("any other error settles with its message, and its code only when it has one", () => {
    assert.deepStrictEqual(Turn.settleReasonOf({ kind: "error", step: 1, message: "boom", code: "HOOK_FAILED" }), {
      kind: "error",
      message: "boom",
      code: "HOOK_FAILED"
    })
    const bare = Turn.settleReasonOf({ kind: "error", step: 1, message: "boom" })
    assert.deepStrictEqual(bare, { kind: "error", message: "boom" })
    assert.isFalse("code" in bare, "no `code: undefined` key (exact optional)")
  })

  it.effect("every settle reason it returns is a valid SettleReason", () =>
    Effect.gen(function*() {
      for (const reasons of Object.values(endReasons)) {
        for (const reason of reasons) yield* roundTrip(Turn.SettleReason, Turn.settleReasonOf(reason))
      }
    }))
})
