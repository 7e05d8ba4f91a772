/**
 * The saved results file and `BENCHMARKS.md`. The report keeps hand-written prose: the bench rewrites only the
 * regions between `<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->` markers (`results` for the table,
 * machine and chart; `profile-LABEL` for a profile), and appends a region that does not exist yet.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { dirname, join, relative } from "node:path"
import * as Chart from "./Chart.js"
import type { HarnessPath, RuntimeName } from "./Runtime.js"
import {
  checksOf,
  columns,
  failuresMarkdown,
  loadWarning,
  renderMarkdown,
  type Run,
  seriesOf,
  tableRows
} from "./Summary.js"
import type { Size, Workload } from "./Workload.js"

/** Where and on what the bench ran. */
export interface Machine {
  readonly os: string
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly node: string
  /** 1-minute load average when the run started and ended: other processes on the machine skew absolute times. */
  readonly load: readonly [number, number]
  readonly harnessCommit: string
}

/** A saved run of the bench. */
export interface Results {
  readonly startedAt: string
  readonly finishedAt: string
  readonly size: Size
  readonly reps: number
  readonly machine: Machine
  readonly runs: ReadonlyArray<Run>
}

const git = (cwd: string, ...args: ReadonlyArray<string>): string => {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
  } catch {
    return ""
  }
}

/** Describes this machine and the checkout. */
export const machine = (cwd: string, loadAtStart: number): Machine => {
  const commit = git(cwd, "rev-parse", "--short", "HEAD")
  const dirty = git(cwd, "status", "--porcelain", "--", "../../packages") !== ""
  return {
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    cpu: os.cpus()[0]?.model ?? "unknown",
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    load: [loadAtStart, os.loadavg()[0] ?? 0],
    harnessCommit: commit === "" ? "unknown" : `${commit}${dirty ? " (with uncommitted changes)" : ""}`
  }
}

/** The repository root (where `BENCHMARKS.md` lives). */
export const repoRoot = (packageDir: string): string => join(packageDir, "..", "..")

/** Replaces region `name` of `doc`, or appends it. */
export const replaceRegion = (doc: string, name: string, content: string): string => {
  const start = `<!-- bench:${name}:start -->`
  const end = `<!-- bench:${name}:end -->`
  const block = `${start}\n${content.trim()}\n${end}`
  const from = doc.indexOf(start)
  const to = doc.indexOf(end)
  if (from !== -1 && to > from) return doc.slice(0, from) + block + doc.slice(to + end.length)
  return `${doc.trimEnd()}\n\n${block}\n`
}

/** Reads a file, or returns `fallback` when it does not exist. */
export const readOr = (path: string, fallback: string): string => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return fallback
  }
}

/** Writes `content` to `path`, creating its directory. */
export const writeFile = (path: string, content: string): void => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, content)
}

const colors: Record<RuntimeName | HarnessPath, string> = {
  reference: "#7f7f7f",
  pi: "#2b83ba",
  harness: "#d7191c",
  "harness-standard": "#fdae61",
  "harness-pull": "#abdda4"
}
const labels: Record<RuntimeName | HarnessPath, string> = {
  reference: "reference loop",
  pi: "pi-agent-core (provider path)",
  harness: "Harness (provider path)",
  "harness-standard": "Harness (standard LanguageModel)",
  "harness-pull": "Harness (pulled, secondary)"
}

/** Renders W1's chart from the runs, or nothing when W1 did not run. */
export const w1Chart = (results: Results, workloads: ReadonlyArray<Workload>): string | undefined => {
  const w1 = workloads.find((w) => w.id === "W1")
  const run = results.runs.find((r) => r.workload === "W1" && r.result?.series !== undefined)
  if (w1 === undefined || run?.result?.series === undefined) return undefined
  const bucketTurns = Math.max(1, Math.floor(run.n / run.result.series.length))
  return Chart.render({
    title: `W1: cost of one turn as the session grows (median of ${results.reps}, mean per ${bucketTurns} turns)`,
    bucketTurns,
    lines: columns.map((runtime) => ({
      label: labels[runtime],
      color: colors[runtime],
      values: seriesOf(results.runs, "W1", runtime)
    }))
  })
}

const versions = (runs: ReadonlyArray<Run>): ReadonlyArray<string> =>
  [...new Set(runs.map((run) => run.version).filter((v) => v !== "?"))].sort()

/** The `results` region: date, machine, versions, the table, the checks, the chart. */
export const resultsRegion = (
  results: Results,
  workloads: ReadonlyArray<Workload>,
  chartPath: string | undefined,
  docDir: string
): string => {
  const m = results.machine
  const selected = workloads.filter((w) => results.runs.some((r) => r.workload === w.id))
  const failures = selected.flatMap((w) => checksOf(results.runs, w.id).failures)
  const warning = loadWarning(results.runs, m.cores)
  const lines = [
    `Run ${results.startedAt} → ${results.finishedAt} (${results.size} size, ${results.reps} repetitions, medians; each run a fresh process).`,
    "",
    `- Machine: ${m.os}, ${m.cpu} × ${m.cores}, ${m.memoryGiB} GiB, Node ${m.node}; 1-min load ${
      m.load[0].toFixed(1)
    } at start, ${m.load[1].toFixed(1)} at end.`,
    `- Harness: commit ${m.harnessCommit}. Peers: ${
      versions(results.runs).filter((v) => !v.startsWith("@harness")).join(", ")
    }.`,
    `- Sizes: ${
      selected.map((w) => `${w.id} N = ${results.runs.find((r) => r.workload === w.id)?.n ?? "?"}`).join(", ")
    }.`,
    "",
    "Ratios are Harness ÷ peer for the figure in that row: for a `higher ↑` row a ratio above 1 means Harness is better,",
    "for a `lower ↓` row a ratio below 1 means Harness is better. `checks` counts the correctness checks of every run.",
    "`Harness` is the provider's streaming path (`@harness/llm` over loopback SSE on W1–W4 and Mem; the same typed",
    "parts streamed in process elsewhere), `Harness std` the same provider through the standard `LanguageModel`",
    "(`std ÷ Harness`), `Harness pulled` the scripted `pullText` path only a replayed model offers (ADR 0057).",
    "",
    ...(warning === undefined ? [] : [`> **${warning}**`, ""]),
    renderMarkdown(tableRows(results.runs, selected, { headlineOnly: false })),
    "",
    failuresMarkdown(failures)
  ]
  if (chartPath !== undefined) {
    lines.push("", `![W1: per-turn cost against session length](${relative(docDir, chartPath)})`)
  }
  return lines.join("\n")
}

/** The skeleton of a new `BENCHMARKS.md`. */
export const template = `# Benchmarks

Harness against the reference loop (\`@deepseek-ai/dsh-agent-loop\`) and pi (\`@mariozechner/pi-agent-core\`):
the same workloads, scripted instant models, one interleaved run. Produced by \`packages/bench\` (see its README);
re-run with \`npm run bench -- --write\`.
`
