/**
 * A regression the property test found (R45, ADR 0017): the input staged before an admission is logged before its
 * prompt, the input accepted during it after. The driver remembered the first as a count of staged items, so a
 * withdrawal during the admission made a steer accepted during it count as staged before it: the steer was logged
 * ahead of its prompt. The shrunk scenario, replayed through the property test's runner.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Scenario } from "./properties-arbitraries.js"
import { problems, run } from "./properties-runner.js"

const scenario = {
  ops: [
    {
      _tag: "batch",
      items: [{ _tag: "send", kind: "followup" }, { _tag: "send", kind: "followup" }, {
        _tag: "send",
        kind: "followup"
      }]
    },
    { _tag: "on", event: "turn/start", item: { _tag: "send", kind: "followup" } },
    {
      _tag: "batch",
      items: [
        { _tag: "send", kind: "steer" },
        { _tag: "cancel", keepInbox: true },
        { _tag: "send", kind: "followup" },
        { _tag: "send", kind: "followup" }
      ]
    },
    { _tag: "withdraw", pick: 0 },
    { _tag: "withdraw", pick: 18 },
    { _tag: "on", event: "turn/start", item: { _tag: "send", kind: "steer" } }
  ],
  replies: [],
  admission: ["slow"],
  retries: undefined,
  faults: undefined,
  steps: undefined,
  stopping: undefined,
  end: "drain",
  yieldingStore: false,
  maxOps: 2048,
  seed: 0
} as unknown as Scenario

describe("admission order (R45)", () => {
  it.scoped("a withdrawal during a slow admission never puts a steer accepted during it ahead of its prompt", () =>
    Effect.gen(function*() {
      const outcome = yield* run(scenario)
      assert.deepStrictEqual(problems(outcome, {}), [])
    }))
})
