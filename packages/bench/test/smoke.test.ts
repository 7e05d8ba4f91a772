/**
 * The bench still measures what it claims: for each runtime, W8 (follow-ups, live observation, a follow-up queued
 * behind a running turn, cancels, read-back of the log) and Fleet (agents streaming paced replies at once), and on
 * the provider path W1 and W4, run at smoke size in a fresh worker process, exactly as `npm run bench` runs them,
 * and every correctness check passes.
 * Figures are not asserted: benchmarks never gate on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runInProcess } from "../src/Runner.js"
import type { BootName } from "../src/Runtime.js"
import { ceilingName, runtimeNames } from "../src/Runtime.js"

const smoke = (runtime: BootName, workload: string) =>
  Effect.promise(() => runInProcess(runtime, workload, "smoke")).pipe(
    Effect.map((result) => ({
      runtime,
      workload,
      failed: result.checks.filter((check) => !check.ok),
      checks: result.checks.length
    }))
  )

describe("bench smoke", () => {
  it.live("W8 and Fleet pass their correctness checks on every runtime", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(
        runtimeNames.flatMap((runtime) => [smoke(runtime, "W8"), smoke(runtime, "Fleet")]),
        { concurrency: 3 }
      )
      for (const result of results) {
        assert.isAbove(result.checks, 3, `${result.runtime} ${result.workload} made its checks`)
        assert.deepStrictEqual(result.failed, [], `${result.runtime} ${result.workload}`)
      }
    }), 120_000)

  // The provider path (ADR 0057): served agents read their replies from the loopback server the worker starts.
  it.live(
    "W1 and W4 pass their checks on the provider path: Harness (provider, standard) and pi",
    () =>
      Effect.gen(function*() {
        const runtimes = ["harness", "harness-standard", "pi"] as const
        const results = yield* Effect.all(
          runtimes.flatMap((runtime) => [smoke(runtime, "W1"), smoke(runtime, "W4")]),
          { concurrency: 3 }
        )
        for (const result of results) {
          assert.isAbove(result.checks, 2, `${result.runtime} ${result.workload} made its checks`)
          assert.deepStrictEqual(result.failed, [], `${result.runtime} ${result.workload}`)
        }
        const versions = yield* Effect.promise(() =>
          Promise.all(runtimes.map((runtime) => runInProcess(runtime, "W1", "smoke").then((r) => r.version)))
        )
        assert.include(versions[0], "model interface: provider")
        assert.include(versions[1], "model interface: standard")
        assert.include(versions[2], "openai-completions over loopback SSE")
      }),
    120_000
  )

  // The ceiling (ADR 0057) is only a measuring stick if it does the work: W1–W4's checks hold on it as on the runtimes.
  it.live("the shape's ceiling passes W1–W4's correctness checks", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(
        ["W1", "W2", "W3", "W4"].map((workload) => smoke(ceilingName, workload)),
        { concurrency: 4 }
      )
      for (const result of results) {
        assert.isAbove(result.checks, 0, `ceiling ${result.workload} made its checks`)
        assert.deepStrictEqual(result.failed, [], `ceiling ${result.workload}`)
      }
    }), 120_000)
})
