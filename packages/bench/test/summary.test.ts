/**
 * The report says when the machine was busy: every run records the 1-minute load around it, and a table whose runs
 * saw a load above 70 % of the cores carries a warning (ADR 0057).
 */
import { assert, describe, it } from "@effect/vitest"
import { type Results, resultsRegion } from "../src/Report.js"
import { loadWarning, type Run } from "../src/Summary.js"
import type { Workload } from "../src/Workload.js"

const workload: Workload = {
  id: "W1",
  title: "t",
  description: "a synthetic workload",
  sizes: { full: 1, quick: 1, smoke: 1 },
  metrics: [{ id: "cpuPerTurn", label: "CPU µs/turn", unit: "µs", better: "lower", headline: true }],
  run: () => Promise.reject(new Error("not run"))
}

const run = (runtime: Run["runtime"], load: readonly [number, number]): Run => ({
  runtime,
  workload: "W1",
  rep: 0,
  n: 1,
  version: "v",
  seconds: 1,
  load,
  result: { figures: { cpuPerTurn: 100 }, checks: [] }
})

const results = (runs: ReadonlyArray<Run>): Results => ({
  startedAt: "2026-12-07T00:00:00.000Z",
  finishedAt: "2026-12-07T00:01:00.000Z",
  size: "quick",
  reps: 1,
  machine: {
    os: "Linux",
    cpu: "cpu",
    cores: 2,
    memoryGiB: 4,
    node: "v20",
    load: [runs[0]?.load?.[0] ?? 0, 0],
    harnessCommit: "abc"
  },
  runs
})

describe("bench load warning", () => {
  it("warns when any run saw a load above 70 % of the cores, naming the highest and how many", () => {
    const quiet = [run("pi", [0.5, 1.2]), run("harness", [1.3, 1.4])]
    assert.isUndefined(loadWarning(quiet, 2))
    const busy = [run("pi", [0.5, 1.2]), run("harness", [1.3, 3.6]), run("reference", [1.5, 1.0])]
    const warning = loadWarning(busy, 2)
    assert.include(warning, "load up to 3.6 on 2 cores (above 1.4) during 2 of 3 runs")
    assert.isUndefined(loadWarning(busy, 8), "the same loads on 8 cores are not busy")
  })

  it("the report's table carries the warning only for a busy run", () => {
    const quiet = resultsRegion(results([run("harness", [0.2, 0.3])]), [workload], undefined, "/")
    assert.notInclude(quiet, "WARNING")
    const busy = resultsRegion(results([run("harness", [0.2, 5])]), [workload], undefined, "/")
    assert.include(busy, "> **WARNING: the machine was busy: 1-min load up to 5.0 on 2 cores")
    assert.isBelow(busy.indexOf("WARNING"), busy.indexOf("| workload |"), "above the table")
    assert.include(busy, "CPU µs/turn")
  })
})
