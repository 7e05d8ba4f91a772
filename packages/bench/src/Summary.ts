/**
 * From raw runs to what the report shows: medians per (workload, runtime, metric) across repetitions, the
 * Harness ÷ peer ratios, the checks of every run, and the table rendered as aligned text or Markdown.
 */
import { median } from "./Measure.js"
import type { BootName, HarnessPath, RuntimeName } from "./Runtime.js"
import { servedShare } from "./SseServer.js"
import type { Check, Metric, Result, Workload } from "./Workload.js"

/** One process's result, as the runner stored it. */
export interface Run {
  readonly runtime: BootName
  readonly workload: string
  readonly rep: number
  readonly n: number
  readonly version: string
  readonly seconds: number
  /** The machine's 1-minute load average when the process started and when it ended (absent in older results). */
  readonly load?: readonly [number, number] | undefined
  /** Absent when the process failed; `error` then says why. */
  readonly result?: Result | undefined
  readonly error?: string | undefined
}

/**
 * The runtimes as table columns, in order: the peers, Harness on its provider's streaming path (the headline), then
 * Harness through a standard `LanguageModel` and on the pulled path (secondary, ADR 0057).
 */
export const columns: ReadonlyArray<RuntimeName | HarnessPath> = [
  "reference",
  "pi",
  "harness",
  "harness-standard",
  "harness-pull"
]

const columnTitle: Record<RuntimeName | HarnessPath, string> = {
  reference: "reference",
  pi: "pi",
  harness: "Harness",
  "harness-standard": "Harness std",
  "harness-pull": "Harness pulled"
}

/** The median of a metric over a runtime's runs of a workload (NaN when no run produced it). */
export const medianOf = (runs: ReadonlyArray<Run>, workload: string, runtime: BootName, metric: string): number =>
  median(
    runs.flatMap((run) =>
      run.workload === workload && run.runtime === runtime && run.result !== undefined &&
        typeof run.result.figures[metric] === "number" && Number.isFinite(run.result.figures[metric])
        ? [run.result.figures[metric]]
        : []
    )
  )

/** Per-bucket medians of W1's per-turn series, per runtime. */
export const seriesOf = (runs: ReadonlyArray<Run>, workload: string, runtime: BootName): ReadonlyArray<number> => {
  const all = runs.flatMap((run) =>
    run.workload === workload && run.runtime === runtime && run.result?.series !== undefined ? [run.result.series] : []
  )
  const length = Math.min(...all.map((series) => series.length))
  return all.length === 0 ? [] : Array.from({ length }, (_, i) => median(all.map((series) => series[i]!)))
}

/** What the checks of a workload's runs came to: how many passed, and the first failures. */
export const checksOf = (
  runs: ReadonlyArray<Run>,
  workload: string
): { readonly passed: number; readonly total: number; readonly failures: ReadonlyArray<string> } => {
  let passed = 0
  let total = 0
  const failures: Array<string> = []
  for (const run of runs) {
    if (run.workload !== workload) continue
    if (run.result === undefined) {
      total++
      failures.push(`${run.runtime} rep ${run.rep + 1}: process failed: ${run.error ?? "?"}`)
      continue
    }
    for (const check of run.result.checks) {
      total++
      if (check.ok) passed++
      else failures.push(`${run.runtime} rep ${run.rep + 1}: ${check.name}: ${check.detail}`)
    }
  }
  return { passed, total, failures }
}

/** The load above which a run counts as taken on a busy machine: 70 % of the cores. */
const busyLoad = (cores: number): number => cores * 0.7

/**
 * The warning a table carries when the machine was busy during any of its runs (a 1-minute load average above
 * {@link busyLoad}), naming the highest load seen and how many runs saw such a load; `undefined` when it was not.
 */
export const loadWarning = (runs: ReadonlyArray<Run>, cores: number): string | undefined => {
  const loads = runs.flatMap((run) => (run.load === undefined ? [] : [Math.max(...run.load)]))
  const busy = loads.filter((load) => load > busyLoad(cores))
  if (busy.length === 0) return undefined
  return `WARNING: the machine was busy: 1-min load up to ${Math.max(...busy).toFixed(1)} on ${cores} cores ` +
    `(above ${busyLoad(cores).toFixed(1)}) during ${busy.length} of ${loads.length} runs. Absolute times are ` +
    `inflated; ratios within this run (repetitions interleaved) still compare, CPU time per turn least affected.`
}

/** The checks of one run, for progress lines. */
export const checkLine = (checks: ReadonlyArray<Check>): string => {
  const failed = checks.filter((check) => !check.ok)
  return failed.length === 0
    ? `${checks.length} checks ok`
    : `FAILED ${failed.map((c) => `${c.name}: ${c.detail}`).join("; ")}`
}

/** Formats a figure for its unit. */
export const formatFigure = (value: number, metric: Metric): string => {
  if (!Number.isFinite(value)) return "—"
  switch (metric.unit) {
    case "×":
      return `${value.toFixed(2)}×`
    case "%":
      return `${value.toFixed(1)} %`
    case "count":
      return value.toFixed(1)
    case "KB":
    case "ms":
      return Math.abs(value) >= 100 ? thousands(Math.round(value)) : value.toFixed(1)
    default:
      return Math.abs(value) >= 100 ? thousands(Math.round(value)) : value.toFixed(1)
  }
}

const thousands = (value: number): string => value.toLocaleString("en-US").replace(/,/g, " ")

/** Formats Harness ÷ peer. */
export const formatRatio = (value: number): string =>
  !Number.isFinite(value)
    ? "—"
    : value >= 10
    ? `${value.toFixed(0)}×`
    : value >= 0.1
    ? `${value.toFixed(2)}×`
    : `${value.toFixed(3)}×`

/** The rows of the results table: header first. */
export const tableRows = (
  runs: ReadonlyArray<Run>,
  selected: ReadonlyArray<Workload>,
  options: { readonly headlineOnly: boolean }
): ReadonlyArray<ReadonlyArray<string>> => {
  const header = [
    "workload",
    "metric",
    ...columns.map((name) => columnTitle[name]),
    "Harness ÷ pi",
    "Harness ÷ ref",
    "std ÷ Harness",
    "better",
    "checks"
  ]
  const rows: Array<ReadonlyArray<string>> = [header]
  for (const workload of selected) {
    if (!runs.some((run) => run.workload === workload.id)) continue
    const checks = checksOf(runs, workload.id)
    const metrics = workload.metrics.filter((metric) => !options.headlineOnly || metric.headline === true)
    metrics.forEach((metric, i) => {
      const value = (runtime: RuntimeName | HarnessPath) => medianOf(runs, workload.id, runtime, metric.id)
      const harness = value("harness")
      rows.push([
        i === 0 ? `${workload.id} ${workload.title}` : "",
        `${metric.label}${
          metric.unit === "×" || metric.unit === "%" || metric.unit === "count" || metric.label.includes(metric.unit)
            ? ""
            : ` (${metric.unit})`
        }`,
        ...columns.map((runtime) => formatFigure(value(runtime), metric)),
        formatRatio(harness / value("pi")),
        formatRatio(harness / value("reference")),
        formatRatio(value("harness-standard") / harness),
        metric.better === "lower" ? "lower ↓" : "higher ↑",
        i === 0
          ? (checks.failures.length === 0 ? `✓ ${checks.passed}/${checks.total}` : `✗ ${checks.passed}/${checks.total}`)
          : ""
      ])
    })
  }
  return rows
}

/** Renders rows as space-aligned text. */
export const renderText = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => [...(row[c] ?? "")].length)))
  const numeric = (c: number) => c >= 2 && c < rows[0]!.length - 2
  return rows.map((row, r) =>
    row.map((cell, c) => {
      const pad = " ".repeat(widths[c]! - [...cell].length)
      return numeric(c) && r > 0 ? pad + cell : cell + pad
    }).join("  ").trimEnd()
  ).join("\n")
}

/** Renders rows as a Markdown table. */
export const renderMarkdown = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const line = (row: ReadonlyArray<string>) => `| ${row.map((cell) => cell.replace(/\|/g, "\\|")).join(" | ")} |`
  const align = rows[0]!.map((_, c) => (c >= 2 && c < rows[0]!.length - 2 ? "---:" : "---"))
  return [line(rows[0]!), line(align), ...rows.slice(1).map(line)].join("\n")
}

/** The failed checks for the terminal: nothing when every check passed. */
export const failuresText = (failures: ReadonlyArray<string>): string =>
  failures.length === 0 ? "" : `\nFAILED CHECKS:\n${failures.map((f) => `  ${f}`).join("\n")}`

/** The checks' outcome for a report in Markdown. */
export const failuresMarkdown = (failures: ReadonlyArray<string>): string =>
  failures.length === 0
    ? "Every correctness check passed."
    : `Failed checks:\n\n${failures.map((f) => `- ${f}`).join("\n")}`

/**
 * The model interface a Harness run went through, as its adapter names it in its version string (`model interface:
 * provider`); `undefined` for an adapter older than the name (which ran its own default, the pulled path).
 */
const modelPathOf = (version: string): string | undefined => /model interface: (\w+)/.exec(version)?.[1]

/**
 * The path a run's replies took: its model interface and, for a paced workload ({@link servedShare}), whether they
 * came over loopback HTTP or from an in-process script (an adapter before ADR 0077 kept Fleet and Pace in process).
 */
const runPathOf = (run: Run): string => {
  const path = modelPathOf(run.version) ?? "unnamed (before ADR 0057: pull)"
  const served = run.result?.figures[servedShare.id]
  return served === undefined ? path : `${path}, replies ${served > 0 ? "over loopback HTTP" : "in process"}`
}

/**
 * Where the working tree's and the baseline's runs of a workload went through different model interfaces (a baseline
 * before ADR 0057 runs the pulled path whatever the tree runs), or took a paced workload's replies from different
 * places (before ADR 0077): the two paths, by side; `undefined` when they agree.
 */
export const unlikePaths = (
  runs: ReadonlyArray<Run>,
  workload: string
): { readonly tree: string; readonly baseline: string } | undefined => {
  const paths = (runtime: BootName) =>
    [
      ...new Set(
        runs.flatMap((run) =>
          run.workload === workload && run.runtime === runtime && run.result !== undefined
            ? [runPathOf(run)]
            : []
        )
      )
    ].join(", ")
  const [tree, baseline] = [paths("harness"), paths("baseline")]
  return tree === "" || baseline === "" || tree === baseline ? undefined : { tree, baseline }
}

/**
 * The rows of a same-run comparison with a baseline (`--baseline <rev>`): per metric the medians of the working tree
 * and of the baseline, the median of the per-repetition ratios (working tree ÷ baseline, repetition by repetition,
 * so a drift of the machine's speed during the run cancels), their spread (min–max), and the verdict: within the
 * spread when the ratios fall on both sides of 1. A workload whose two sides ran different model interface paths
 * ({@link unlikePaths}) gets no verdict: "UNLIKE PATHS", with the two paths named on its first row.
 */
export const baselineRows = (
  runs: ReadonlyArray<Run>,
  selected: ReadonlyArray<Workload>
): ReadonlyArray<ReadonlyArray<string>> => {
  const rows: Array<ReadonlyArray<string>> = [[
    "workload",
    "metric",
    "this tree",
    "baseline",
    "tree ÷ base",
    "spread",
    "better",
    "verdict",
    "checks"
  ]]
  for (const workload of selected) {
    if (!runs.some((run) => run.workload === workload.id)) continue
    const checks = checksOf(runs, workload.id)
    const unlike = unlikePaths(runs, workload.id)
    workload.metrics.forEach((metric, i) => {
      const figure = (runtime: BootName, rep: number) =>
        runs.find((run) => run.workload === workload.id && run.runtime === runtime && run.rep === rep)?.result
          ?.figures[metric.id]
      const reps = [...new Set(runs.filter((run) => run.workload === workload.id).map((run) => run.rep))]
      const ratios = reps.flatMap((rep) => {
        const [tree, base] = [figure("harness", rep), figure("baseline", rep)]
        return tree !== undefined && base !== undefined && Number.isFinite(tree / base) ? [tree / base] : []
      })
      const [low, high] = [Math.min(...ratios), Math.max(...ratios)]
      const better = (ratio: number) => metric.better === "lower" ? ratio < 1 : ratio > 1
      rows.push([
        i === 0 ? `${workload.id} ${workload.title}` : "",
        metric.label.includes(metric.unit) || metric.unit === "×" ? metric.label : `${metric.label} (${metric.unit})`,
        formatFigure(medianOf(runs, workload.id, "harness", metric.id), metric),
        formatFigure(medianOf(runs, workload.id, "baseline", metric.id), metric),
        formatRatio(median(ratios)),
        ratios.length === 0 ? "—" : `${formatRatio(low)}–${formatRatio(high)}`,
        metric.better === "lower" ? "lower ↓" : "higher ↑",
        unlike !== undefined
          ? i === 0 ? `UNLIKE PATHS (tree ${unlike.tree}, baseline ${unlike.baseline})` : "UNLIKE PATHS"
          : ratios.length < 2
          ? "one repetition"
          : low <= 1 && high >= 1
          ? "within the spread"
          : better(low) && better(high)
          ? "better"
          : "worse",
        i === 0 ? `${checks.failures.length === 0 ? "✓" : "✗"} ${checks.passed}/${checks.total}` : ""
      ])
    })
  }
  return rows
}
