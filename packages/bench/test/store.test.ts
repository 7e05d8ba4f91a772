/**
 * The store workloads measure what they claim: W6 (the same turns through the agent's log, the store alone and raw
 * better-sqlite3, NORMAL and FULL) and W7 (a long SQLite session resumed from its snapshot, the agent's first
 * request) run at smoke size in a fresh worker process, exactly as `npm run bench` runs them, and every check
 * passes: each file holds every event and reads back clean, the resume starts from the snapshot, its first request
 * carries every earlier prompt and the new one last. Figures are not asserted: benchmarks never gate on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runInProcess } from "../src/Runner.js"
import { workloads } from "../src/Workloads.js"

const run = (workload: string) => Effect.promise(() => runInProcess("harness", workload, "smoke"))

describe("bench store workloads", () => {
  it.live("W6 and W7 pass their correctness checks on Harness", () =>
    Effect.gen(function*() {
      const [w6, w7] = yield* Effect.all([run("W6"), run("W7")], { concurrency: 2 })
      assert.strictEqual(w6.checks.length, 6)
      assert.deepStrictEqual(w6.checks.filter((c) => !c.ok), [])
      for (const figure of ["logUs", "storeUs", "rawNormalUs", "rawFullUs", "logPerRaw"]) {
        assert.isAbove(w6.figures[figure]!, 0, figure)
      }
      assert.strictEqual(w7.checks.length, 4)
      assert.deepStrictEqual(w7.checks.filter((c) => !c.ok), [])
      assert.isAbove(w7.figures["firstRequestMs"]!, 0)
    }), 60_000)

  it("W6 and W7 run only where there is a durable store", () => {
    for (const id of ["W6", "W7"]) {
      assert.deepStrictEqual(workloads.find((w) => w.id === id)?.runsOn, ["harness", "baseline"])
    }
  })
})
