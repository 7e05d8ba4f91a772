/**
 * The baseline mode (`npm run bench -- --baseline <rev>`) measures another commit's Harness, built from that
 * commit's own sources, and says whether a figure moved beyond the repetitions' spread.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { baselineBundleEnv, prepareBaseline } from "../src/Baseline.js"
import { runInProcess } from "../src/Runner.js"
import { baselineRows, type Run, unlikePaths } from "../src/Summary.js"
import type { Workload } from "../src/Workload.js"

/** A workload that is never run, with these metrics: the table's rows are made from given runs. */
const synthetic = (metrics: Workload["metrics"]): Workload => ({
  id: "W1",
  title: "t",
  description: "a synthetic workload",
  sizes: { full: 1, quick: 1, smoke: 1 },
  metrics,
  run: () => Promise.reject(new Error("not run"))
})

/** One repetition's run of a side with these figures. */
const runOf = (
  runtime: "harness" | "baseline",
  rep: number,
  figures: Record<string, number>,
  version = "v"
): Run => ({ runtime, workload: "W1", rep, n: 1, version, seconds: 1, result: { figures, checks: [] } })

describe("bench baseline", () => {
  it.live("bundles the commit's own sources and runs them in a worker", () =>
    Effect.gen(function*() {
      const baseline = yield* Effect.promise(() => prepareBaseline("HEAD~1"))
      const text = readFileSync(baseline.bundle, "utf8")
      assert.include(text, `.baseline/${baseline.sha}/packages/agent/src/`, "the agent from the commit's tree")
      assert.notInclude(text, "\n// packages/agent/src/", "not the working tree's agent")
      process.env[baselineBundleEnv] = baseline.bundle
      const result = yield* Effect.promise(() => runInProcess("baseline", "W1", "smoke"))
      assert.include(result.version, "baseline")
      assert.deepStrictEqual(result.checks.filter((check) => !check.ok), [])
    }), 120_000)

  it("a ratio is a verdict only when every repetition agrees on its side of 1", () => {
    const workload = synthetic([
      { id: "rate", label: "turns/s", unit: "turns/s", better: "higher" },
      { id: "cost", label: "µs/turn", unit: "µs", better: "lower" }
    ])
    const run = (runtime: "harness" | "baseline", rep: number, rate: number, cost: number) =>
      runOf(runtime, rep, { rate, cost })
    const rows = baselineRows([
      run("harness", 0, 110, 90),
      run("baseline", 0, 100, 100),
      run("harness", 1, 120, 105),
      run("baseline", 1, 100, 100)
    ], [workload])
    assert.deepStrictEqual(rows[1]!.slice(4, 8), ["1.15×", "1.10×–1.20×", "higher ↑", "better"])
    assert.deepStrictEqual(rows[2]!.slice(4, 8), ["0.98×", "0.90×–1.05×", "lower ↓", "within the spread"])
  })

  it("a baseline that ran another model interface (before ADR 0057: the pulled path) gets no verdict", () => {
    const workload = synthetic([{ id: "cost", label: "µs/turn", unit: "µs", better: "lower" }])
    const run = (runtime: "harness" | "baseline", rep: number, cost: number, version: string) =>
      runOf(runtime, rep, { cost }, version)
    const tree = "@harness/agent (this checkout; model interface: provider) (bundled)"
    // Two repetitions, the tree better in both, the baseline's adapter named by `version`.
    const rowsAgainst = (version: string) =>
      baselineRows([
        run("harness", 0, 90, tree),
        run("baseline", 0, 100, version),
        run("harness", 1, 95, tree),
        run("baseline", 1, 100, version)
      ], [workload])
    assert.strictEqual(rowsAgainst(tree)[1]![7], "better")
    for (const old of ["@harness/agent (this checkout; model interface: pull) (baseline, bundled)", "v (baseline)"]) {
      const rows = rowsAgainst(old)
      assert.match(rows[1]![7]!, /^UNLIKE PATHS \(tree provider, baseline (pull|unnamed)/, old)
      assert.isDefined(unlikePaths([run("harness", 0, 1, tree), run("baseline", 0, 1, old)], "W1"))
    }
  })

  it("a paced workload whose baseline took its replies in process (before ADR 0077) gets no verdict", () => {
    const workload = synthetic([{ id: "cost", label: "µs/chunk", unit: "µs", better: "lower" }])
    const version = "@harness/agent (this checkout; model interface: provider) (bundled)"
    const run = (runtime: "harness" | "baseline", rep: number, cost: number, servedPercent: number) =>
      runOf(runtime, rep, { cost, servedPercent }, version)
    const rowsAgainst = (baselineServed: number) =>
      baselineRows([
        run("harness", 0, 150, 100),
        run("baseline", 0, 100, baselineServed),
        run("harness", 1, 160, 100),
        run("baseline", 1, 100, baselineServed)
      ], [workload])
    assert.strictEqual(rowsAgainst(100)[1]![7], "worse")
    assert.strictEqual(
      rowsAgainst(0)[1]![7],
      "UNLIKE PATHS (tree provider, replies over loopback HTTP, baseline provider, replies in process)"
    )
  })
})
