/**
 * `npm run bench [-- options]`: runs the workloads on the three runtimes and prints one table.
 *
 *   --quick          smaller sizes, for before/after checks while changing the core
 *   --only W1,W4     only these workloads (ids: W1 W2 W3 W4 W5 W6 W7 W8 Pace Fleet Mem)
 *   --reps N         repetitions per (runtime, workload), default 3
 *   --write          also write BENCHMARKS.md (results region) and the W1 chart
 *   --report FILE    re-render the table (and with --write the report) from a saved results file, without running
 *   --baseline REV   Harness at commit REV beside the working tree's, interleaved in one run (no peers): the ratio
 *                    of each figure with its spread over the repetitions (`Baseline.ts`)
 */
import * as os from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { baselineBundleEnv, prepareBaseline, prepareTree, treeBundleEnv } from "./Baseline.js"
import {
  machine,
  readOr,
  replaceRegion,
  repoRoot,
  type Results,
  resultsRegion,
  template,
  w1Chart,
  writeFile
} from "./Report.js"
import { packageDir, runAll, runFlags, runMain } from "./Runner.js"
import { baselineRows, checksOf, failuresText, loadWarning, renderText, tableRows, unlikePaths } from "./Summary.js"
import type { Size, Workload } from "./Workload.js"
import { workloads } from "./Workloads.js"

const main = async (): Promise<number> => {
  const { values } = parseArgs({
    options: { ...runFlags, report: { type: "string" }, baseline: { type: "string" } }
  })
  const only = values.only?.split(",").map((id) => id.trim().toLowerCase())
  // In the order `--only` names them, so the workloads that matter most can run first.
  const selected = only === undefined
    ? workloads
    : only.flatMap((id) => workloads.filter((w) => w.id.toLowerCase() === id))
  if (selected.length === 0) throw new Error(`--only matched no workload; ids: ${workloads.map((w) => w.id).join(" ")}`)
  const reps = Number(values.reps)
  if (!Number.isInteger(reps) || reps < 1) throw new Error("--reps must be a positive integer")

  if (values.baseline !== undefined) {
    if (values.report !== undefined || values.write) throw new Error("--baseline prints its table only")
    return compareWithBaseline(values.baseline, selected, reps, values.quick ? "quick" : "full")
  }

  let results: Results
  if (values.report !== undefined) {
    results = JSON.parse(readOr(values.report, "null")) as Results // the bench's own results file
    if (results === null) throw new Error(`cannot read ${values.report}`)
  } else {
    const size: Size = values.quick ? "quick" : "full"
    const startedAt = new Date().toISOString()
    const loadAtStart = os.loadavg()[0] ?? 0
    console.error(
      `bench: ${
        selected.map((w) => w.id).join(" ")
      } × reference, pi, Harness (provider, standard, pulled) × ${reps} (${size})`
    )
    const partial = join(packageDir, "results", "partial.json")
    const runs = await runAll({
      workloads: selected,
      reps,
      size,
      log: (line) => console.error(line),
      onRun: (sofar) =>
        writeFile(
          partial,
          `${
            JSON.stringify(
              {
                startedAt,
                finishedAt: new Date().toISOString(),
                size,
                reps,
                machine: machine(packageDir, loadAtStart),
                runs: sofar
              },
              null,
              1
            )
          }\n`
        )
    })
    results = {
      startedAt,
      finishedAt: new Date().toISOString(),
      size,
      reps,
      machine: machine(packageDir, loadAtStart),
      runs
    }
    const stamp = startedAt.replace(/[:.]/g, "-")
    const json = `${JSON.stringify(results, null, 1)}\n`
    writeFile(join(packageDir, "results", `${stamp}.json`), json)
    writeFile(join(packageDir, "results", "latest.json"), json)
    console.error(`results: packages/bench/results/${stamp}.json`)
  }

  const shown = selected.filter((w) => results.runs.some((r) => r.workload === w.id))
  console.log(renderText(tableRows(results.runs, shown, { headlineOnly: false })))
  console.log(
    "\nHarness ÷ peer: on `higher ↑` rows above 1 is better for Harness, on `lower ↓` rows below 1 is better."
  )
  console.log("pi is driven with prompt() when idle: its followUp() does not wake an idle agent.")
  const warning = loadWarning(results.runs, results.machine.cores)
  if (warning !== undefined) console.log(`\n${warning}`)
  const failures = shown.flatMap((w) => checksOf(results.runs, w.id).failures)
  if (failures.length > 0) console.log(failuresText(failures))

  if (values.write) {
    const root = repoRoot(packageDir)
    const chart = w1Chart(results, workloads)
    const chartPath = chart === undefined ? undefined : join(packageDir, "charts", "w1-per-turn.svg")
    if (chart !== undefined && chartPath !== undefined) writeFile(chartPath, chart)
    const docPath = join(root, "BENCHMARKS.md")
    writeFile(
      docPath,
      replaceRegion(readOr(docPath, template), "results", resultsRegion(results, workloads, chartPath, root))
    )
    console.error("wrote BENCHMARKS.md")
  }
  return failures.length > 0 ? 1 : 0
}

/** `--baseline REV`: the working tree's Harness against REV's, interleaved, every run a fresh process. */
const compareWithBaseline = async (
  rev: string,
  selected: ReadonlyArray<Workload>,
  reps: number,
  size: Size
): Promise<number> => {
  const baseline = await prepareBaseline(rev)
  process.env[baselineBundleEnv] = baseline.bundle
  process.env[treeBundleEnv] = await prepareTree()
  const loadAtStart = os.loadavg()[0] ?? 0
  console.error(`bench: ${selected.map((w) => w.id).join(" ")} × working tree, ${baseline.title} × ${reps} (${size})`)
  const runs = await runAll({
    workloads: selected,
    reps,
    size,
    runtimes: ["harness", "baseline"],
    log: (line) => console.error(line)
  })
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  writeFile(join(packageDir, "results", `baseline-${stamp}.json`), `${JSON.stringify({ baseline, runs }, null, 1)}\n`)
  console.log(renderText(baselineRows(runs, selected)))
  for (const workload of selected) {
    const unlike = unlikePaths(runs, workload.id)
    if (unlike === undefined) continue
    console.log(
      `\nWARNING: ${workload.id} compares unlike model paths: this tree ran "${unlike.tree}", the baseline ` +
        `"${unlike.baseline}" (a commit before ADR 0057 runs the pulled path whatever BENCH_HARNESS_MODEL says). ` +
        "Its ratios are not a before/after of one path: pick a baseline with the same model interface."
    )
  }
  const warning = loadWarning(runs, os.cpus().length)
  if (warning !== undefined) console.log(`\n${warning}`)
  console.log(
    `\nbaseline: ${baseline.title}; 1-min load ${loadAtStart.toFixed(1)} at start, ${
      (os.loadavg()[0] ?? 0).toFixed(1)
    } at end. Within the spread: the per-repetition ratios fall on both sides of 1.`
  )
  const failures = selected.flatMap((w) => checksOf(runs, w.id).failures)
  if (failures.length > 0) console.log(failuresText(failures))
  return failures.length > 0 ? 1 : 0
}

runMain(main)
