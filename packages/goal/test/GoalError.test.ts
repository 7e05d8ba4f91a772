/**
 * The goal package's errors as one union (the error-family shape of ADR 0018): each member crosses the wire as
 * JSON and comes back as the class it was, with its code or rule; anything else is refused with a parse error.
 */
import { assert, describe, it } from "@effect/vitest"
import { GoalError, GoalReplay } from "@harness/goal"
import { Either, Schema } from "effect"

const roundTrip = (error: GoalError.AnyGoalError): GoalError.AnyGoalError =>
  Schema.decodeUnknownSync(GoalError.AnyGoalError)(
    JSON.parse(JSON.stringify(Schema.encodeSync(GoalError.AnyGoalError)(error)))
  )

describe("GoalError.AnyGoalError", () => {
  it("a refused operation comes back as a GoalError with its code", () => {
    const back = roundTrip(new GoalError.GoalError({ code: "GOAL_STALE_REVISION", message: "moved on" }))
    assert.instanceOf(back, GoalError.GoalError)
    assert.strictEqual(back._tag === "GoalError" && back.code, "GOAL_STALE_REVISION")
  })

  it("a replay failure comes back as a GoalReplayError with its seq and rule", () => {
    const error = new GoalReplay.GoalReplayError({ seq: 7, rule: "no-current-goal", message: "no goal g1" })
    const back = roundTrip(error)
    assert.instanceOf(back, GoalReplay.GoalReplayError)
    assert.deepStrictEqual(back._tag === "GoalReplayError" && [back.seq, back.rule], [7, "no-current-goal"])
  })

  it("an unknown tag is refused", () => {
    const decoded = Schema.decodeUnknownEither(GoalError.AnyGoalError)({ _tag: "Other", message: "x" })
    assert.isTrue(Either.isLeft(decoded))
  })

  it("every member carries the family's TypeId (ADR 0074); nothing else passes isGoalError", () => {
    const members: ReadonlyArray<GoalError.AnyGoalError> = [
      new GoalError.GoalError({ code: "GOAL_NOT_FOUND", message: "there is no goal" }),
      new GoalReplay.GoalReplayError({ seq: 7, rule: "no-current-goal", message: "no goal g1" })
    ]
    for (const error of members) {
      assert.isTrue(GoalError.isGoalError(error), error._tag)
      assert.isTrue(GoalError.isGoalError(roundTrip(error)), error._tag)
      assert.notInclude(JSON.stringify(error), GoalError.TypeId)
    }
    const others: ReadonlyArray<unknown> = [new Error("x"), { _tag: "GoalError", code: "GOAL_NOT_FOUND" }, null]
    for (const value of others) assert.isFalse(GoalError.isGoalError(value))
  })
})
