/**
 * The bench still measures what it claims: for each runtime, W8 (follow-ups, live observation, a follow-up queued
 * behind a running turn, cancels, read-back of the log), Fleet (agents streaming paced replies at once) and Pace,
 * and on the provider path W1 and W4, run at smoke size in a fresh worker process, exactly as `npm run bench` runs
 * them, and every correctness check passes.
 * Timed figures are not asserted (benchmarks never gate on time); which path a paced reply took is.
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
      checks: result.checks.length,
      figures: result.figures
    }))
  )

describe("bench smoke", () => {
  it.live("W8 passes its correctness checks on every runtime", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(runtimeNames.map((runtime) => smoke(runtime, "W8")), { concurrency: 3 })
      for (const result of results) {
        assert.isAbove(result.checks, 3, `${result.runtime} ${result.workload} made its checks`)
        assert.deepStrictEqual(result.failed, [], `${result.runtime} ${result.workload}`)
      }
    }), 120_000)

  // ADR 0077: paced replies come over HTTP from the loopback server's paced route to every runtime with an
  // OpenAI-compatible client (Harness's provider on both its paths, pi-ai), from the in-process script to the others.
  it.live(
    "Fleet and Pace pass their checks on every runtime, over HTTP where the runtime has a client",
    () =>
      Effect.gen(function*() {
        const overHttp: ReadonlyArray<BootName> = ["harness", "harness-standard", "pi"]
        const scripted: ReadonlyArray<BootName> = ["reference", "harness-pull"]
        const results = yield* Effect.all(
          [...overHttp, ...scripted].flatMap((runtime) => [smoke(runtime, "Fleet"), smoke(runtime, "Pace")]),
          { concurrency: 3 }
        )
        for (const result of results) {
          const which = `${result.runtime} ${result.workload}`
          assert.isAbove(result.checks, 3, `${which} made its checks`)
          assert.deepStrictEqual(result.failed, [], which)
          assert.strictEqual(result.figures["servedPercent"], overHttp.includes(result.runtime) ? 100 : 0, which)
        }
      }),
    180_000
  )

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
