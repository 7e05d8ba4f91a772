/**
 * `npm run ceiling [-- options]`: the shape's ceiling (ADR 0057) beside pi and Harness (its provider path and its
 * pulled path) on W1–W4 — every (runtime, workload, repetition) a fresh process, repetitions rotating the order,
 * medians — and one table: ceiling ÷ pi says what the fixed shape alone allows, Harness ÷ ceiling how much of a turn
 * is Harness's own work (with the provider's HTTP and SSE on the provider path, without on the pulled one).
 *
 *   --quick        smaller sizes
 *   --only W1,W3   a subset of W1 W2 W3 W4
 *   --reps N       repetitions, default 3
 *   --write        also rewrite the `ceiling` region of BENCHMARKS.md
 */
import * as os from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { machine, readOr, replaceRegion, repoRoot, writeFile } from "./Report.js"
import { packageDir, runAll, runFlags, runMain } from "./Runner.js"
import type { BootName } from "./Runtime.js"
import {
  checksOf,
  failuresMarkdown,
  failuresText,
  formatFigure,
  formatRatio,
  loadWarning,
  medianOf,
  renderMarkdown,
  renderText,
  type Run
} from "./Summary.js"
import type { Size, Workload } from "./Workload.js"
import { workloads } from "./Workloads.js"

/** The workloads the ceiling implements. */
const ceilingWorkloads = ["W1", "W2", "W3", "W4"]
const runtimes: ReadonlyArray<BootName> = ["ceiling", "pi", "harness", "harness-pull"]

const rowsOf = (runs: ReadonlyArray<Run>, selected: ReadonlyArray<Workload>): Array<ReadonlyArray<string>> => {
  const rows: Array<ReadonlyArray<string>> = [[
    "workload",
    "metric",
    "ceiling",
    "pi",
    "Harness",
    "Harness pulled",
    "ceiling ÷ pi",
    "Harness ÷ ceiling",
    "pulled ÷ ceiling",
    "better",
    "checks"
  ]]
  for (const workload of selected) {
    const checks = checksOf(runs, workload.id)
    workload.metrics.forEach((metric, i) => {
      const value = (runtime: BootName) => medianOf(runs, workload.id, runtime, metric.id)
      rows.push([
        i === 0 ? `${workload.id} ${workload.title}` : "",
        metric.label.includes(metric.unit) || metric.unit === "×" ? metric.label : `${metric.label} (${metric.unit})`,
        ...runtimes.map((runtime) => formatFigure(value(runtime), metric)),
        formatRatio(value("ceiling") / value("pi")),
        formatRatio(value("harness") / value("ceiling")),
        formatRatio(value("harness-pull") / value("ceiling")),
        metric.better === "lower" ? "lower ↓" : "higher ↑",
        i === 0 ? `${checks.failures.length === 0 ? "✓" : "✗"} ${checks.passed}/${checks.total}` : ""
      ])
    })
  }
  return rows
}

const main = async (): Promise<number> => {
  const { values } = parseArgs({ options: runFlags })
  const only = values.only?.split(",").map((id) => id.trim().toUpperCase()) ?? ceilingWorkloads
  const selected = workloads.filter((w) => ceilingWorkloads.includes(w.id) && only.includes(w.id))
  if (selected.length === 0) {
    throw new Error(`--only matched no workload; the ceiling runs ${ceilingWorkloads.join(" ")}`)
  }
  const reps = Number(values.reps)
  if (!Number.isInteger(reps) || reps < 1) throw new Error("--reps must be a positive integer")
  const size: Size = values.quick ? "quick" : "full"
  const startedAt = new Date().toISOString()
  const loadAtStart = os.loadavg()[0] ?? 0

  const runs = await runAll({ workloads: selected, reps, size, runtimes, log: (line) => console.error(line) })

  const rows = rowsOf(runs, selected)
  console.log(renderText(rows))
  const failures = selected.flatMap((w) => checksOf(runs, w.id).failures)
  if (failures.length > 0) console.log(failuresText(failures))
  const warning = loadWarning(runs, os.cpus().length)
  if (warning !== undefined) console.log(`\n${warning}`)

  if (values.write) {
    const m = machine(packageDir, loadAtStart)
    const region = [
      `Run ${startedAt} → ${new Date().toISOString()} (${size} size, ${reps} repetitions, medians; each run a fresh ` +
      `process): \`npm run ceiling -w @harness/bench -- --write\`.`,
      "",
      `- Machine: ${m.os}, ${m.cpu} × ${m.cores}, Node ${m.node}; 1-min load ${m.load[0].toFixed(1)} at start, ${
        m.load[1].toFixed(1)
      } at end. Harness: commit ${m.harnessCommit}.`,
      "",
      ...(warning === undefined ? [] : [`> **${warning}**`, ""]),
      renderMarkdown(rows),
      "",
      failuresMarkdown(failures)
    ].join("\n")
    const docPath = join(repoRoot(packageDir), "BENCHMARKS.md")
    writeFile(docPath, replaceRegion(readOr(docPath, ""), "ceiling", region))
    console.error("wrote the ceiling region of BENCHMARKS.md")
  }
  return failures.length > 0 ? 1 : 0
}

runMain(main)
