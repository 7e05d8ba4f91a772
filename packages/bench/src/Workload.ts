/**
 * What a workload is: a sized program over the {@link BenchRuntime} interface that returns figures (named numbers,
 * each described by a {@link Metric}) and the correctness checks it made. A workload that cannot verify what it
 * measured reports a failed check, so a broken setup never looks fast.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { BenchRuntime, BootName, StoreBench, Transcript } from "./Runtime.js"

/** How big a run is: `full` for the report, `quick` for before/after checks, `smoke` for the test suite. */
export type Size = "full" | "quick" | "smoke"

/** One correctness check, printed with the figures. */
export interface Check {
  readonly name: string
  readonly ok: boolean
  /** What was expected and what was found, for the report. */
  readonly detail: string
}

/** One measured quantity of a workload. */
export interface Metric {
  /** Key in {@link Result.figures}. */
  readonly id: string
  readonly label: string
  readonly unit: "µs" | "turns/s" | "KB" | "B" | "ms" | "%" | "×" | "count"
  /** Which way is better; ratios in the table are Harness ÷ peer, so `lower` wants ratios below 1. */
  readonly better: "lower" | "higher"
  /** Printed in the table's headline (the other metrics go to the detailed table). */
  readonly headline?: boolean | undefined
}

/** What one run of one workload on one runtime produced. */
export interface Result {
  readonly figures: Readonly<Record<string, number>>
  readonly checks: ReadonlyArray<Check>
  /** Per-bucket µs/turn over the session (W1's chart). */
  readonly series?: ReadonlyArray<number> | undefined
  /** Facts the report should carry (how the runtime was driven). */
  readonly notes?: ReadonlyArray<string> | undefined
}

/** A workload. */
export interface Workload {
  readonly id: string
  readonly title: string
  /** One sentence on what is measured, for the report. */
  readonly description: string
  readonly metrics: ReadonlyArray<Metric>
  /** The workload's main count at each size (turns, agents, repetitions or samples). */
  readonly sizes: Readonly<Record<Size, number>>
  /** The runtimes it runs on, when not every one (W6, W7 need a durable store: Harness's alone). */
  readonly runsOn?: ReadonlyArray<BootName> | undefined
  readonly run: (runtime: BenchRuntime, n: number, size: Size) => Promise<Result>
}

/** A check that `actual` equals `expected`. */
export const checkEqual = (name: string, actual: number, expected: number): Check => ({
  name,
  ok: actual === expected,
  detail: actual === expected ? `${actual}` : `expected ${expected}, got ${actual}`
})

/** A check that two lists of texts are equal, element by element (FIFO order). */
export const checkOrder = (name: string, actual: ReadonlyArray<string>, expected: ReadonlyArray<string>): Check => {
  const first = expected.findIndex((text, i) => actual[i] !== text)
  const ok = first === -1 && actual.length === expected.length
  return {
    name,
    ok,
    detail: ok
      ? `${actual.length} in order`
      : first === -1
      ? `expected ${expected.length} entries, got ${actual.length}`
      : `entry ${first}: expected ${JSON.stringify(expected[first])}, got ${JSON.stringify(actual[first])}`
  }
}

/** A check on a condition with a free-form detail. */
export const check = (name: string, ok: boolean, detail: string): Check => ({ name, ok, detail })

/** Turns per second, a headline figure of the workloads that run turns back to back. */
const turnsPerSecond: Metric = {
  id: "turnsPerSecond",
  label: "turns/s",
  unit: "turns/s",
  better: "higher",
  headline: true
}

/** The process's CPU µs per turn, beside {@link turnsPerSecond}. */
const cpuPerTurn: Metric = {
  id: "cpuPerTurn",
  label: "CPU µs/turn",
  unit: "µs",
  better: "lower",
  headline: true
}

/** {@link turnsPerSecond} and {@link cpuPerTurn}: the metrics {@link throughput} fills. */
export const throughputMetrics: ReadonlyArray<Metric> = [turnsPerSecond, cpuPerTurn]

/** {@link turnsPerSecond} and {@link cpuPerTurn} of `n` turns that took `elapsedUs` of wall and `cpuUs` of CPU. */
export const throughput = (n: number, elapsedUs: number, cpuUs: number) => ({
  turnsPerSecond: n / (elapsedUs / 1e6),
  cpuPerTurn: cpuUs / n
})

/**
 * The checks of a run of one turn per prompt, each answered with text: as many completed turns and text replies as
 * `texts`, and the prompts in the log in FIFO order.
 */
export const turnChecks = (transcript: Transcript, texts: ReadonlyArray<string>): Array<Check> => [
  checkEqual("completed turns", transcript.completedTurns, texts.length),
  checkEqual("text replies", transcript.textReplies, texts.length),
  checkOrder("prompts in FIFO order", transcript.prompts, texts)
]

/** The runtimes with a durable store, where {@link withDurableStore} runs: Harness, here and at the baseline. */
export const durableRuntimes: ReadonlyArray<BootName> = ["harness", "baseline"]

/**
 * Runs `f` with the runtime's durable store and a fresh temporary directory, removed afterwards whatever `f` did.
 * Contract: a runtime without a durable store fails at once — `workload` (W6, W7) runs on Harness only.
 */
export const withDurableStore = async <A>(
  runtime: BenchRuntime,
  workload: string,
  f: (store: StoreBench, dir: string) => Promise<A>
): Promise<A> => {
  const store = runtime.store
  if (store === undefined) throw new Error(`${runtime.name} has no durable store: ${workload} runs on Harness only`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `harness-bench-${workload.toLowerCase()}-`))
  try {
    return await f(store, dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
