/**
 * A budget stop in words (R163): the timeline `harness sessions show` and `run` print says which budget ended the
 * turn and what was used of it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionEvent } from "@harness/domain"
import * as Timeline from "../src/internal/timeline.js"

const end = (reason: SessionEvent.SessionEventOf<"turn/end">["data"]["reason"]) => {
  const event: SessionEvent.SessionEventOf<"turn/end"> = {
    type: "turn/end",
    seq: 9,
    time: 0,
    data: { turn: 2, reason }
  }
  return Timeline.describe(event)
}

describe("budget stops in words", () => {
  it("R163: each budget is named with what was used of it", () => {
    const cases: ReadonlyArray<readonly [Parameters<typeof end>[0], string]> = [
      [
        { kind: "budget", budget: "steps", scope: "turn", step: 50, limit: 50, used: 50 },
        "turn 2 ends: budget: stopped at its step limit (50 steps)"
      ],
      [
        { kind: "budget", budget: "tokens", scope: "session", step: 0, limit: 1000, used: 1200 },
        "turn 2 ends: budget: stopped before its first step: the session used 1200 tokens of its 1000-token budget"
      ],
      [
        { kind: "budget", budget: "cost", scope: "session", step: 4, limit: 1, used: 1.2000000000000002 },
        "turn 2 ends: budget: stopped after step 4: the session cost 1.2 of its budget of 1"
      ],
      [
        { kind: "budget", budget: "deadline", scope: "turn", step: 3, limit: 25_000, used: 25_000 },
        "turn 2 ends: budget: stopped in step 3: the turn reached its deadline (25 s)"
      ]
    ]
    for (const [reason, words] of cases) assert.strictEqual(end(reason), words)
  })
})
