/**
 * Runs the benchmark: every (runtime, workload, repetition) in a fresh `node --expose-gc` process (the worker bundle),
 * repetitions interleaving the runtimes (the order rotates each repetition), and collects the results. Harness is
 * built into one bundle first (`HarnessBuild.ts`).
 */
import { spawn } from "node:child_process"
import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { bundleReady, ensureWorkerBundle, harnessBuild, workerBundled } from "./HarnessBuild.js"
import { nowUs } from "./Measure.js"
import type { BootName } from "./Runtime.js"
import { harnessPaths, runtimeNames } from "./Runtime.js"
import { sseUrlEnv, startSseServer } from "./SseServer.js"
import { checkLine, type Run } from "./Summary.js"
import { resultPrefix } from "./Worker.js"
import type { Result, Size, Workload } from "./Workload.js"

/**
 * The flags of every full run (`bin.ts`, `ceilingBin.ts`), for `parseArgs`: `--quick` sizes, `--only` workloads,
 * `--reps` repetitions, `--write` the results into the report.
 */
export const runFlags = {
  quick: { type: "boolean", default: false },
  only: { type: "string" },
  reps: { type: "string", default: "3" },
  write: { type: "boolean", default: false }
} as const

/** The package directory (the worker's working directory). */
export const packageDir = fileURLToPath(new URL("..", import.meta.url))
const workerPath = fileURLToPath(new URL("./Worker.ts", import.meta.url))

/**
 * Runs one workload on one runtime in a fresh process and returns its result. Every runtime runs from the worker
 * bundle (`HarnessBuild.ts`; with `BENCH_BUILD=source`, every runtime from source under tsx). `sseUrl` is the loopback
 * server the provider path talks to; without it the worker starts its own.
 */
export const runInProcess = async (
  runtime: BootName,
  workload: string,
  size: Size,
  sseUrl?: string
): Promise<Result & { readonly n: number; readonly version: string }> => {
  if (harnessBuild === "source") {
    return spawnWorker(["--import", "tsx", workerPath], { [sseUrlEnv]: sseUrl }, runtime, workload, size)
  }
  const entry = await ensureWorkerBundle()
  return spawnWorker(
    [entry],
    { [sseUrlEnv]: sseUrl, [workerBundled]: "1", [bundleReady]: "1" },
    runtime,
    workload,
    size
  )
}

const spawnWorker = (
  entry: ReadonlyArray<string>,
  extraEnv: Readonly<Record<string, string | undefined>>,
  runtime: BootName,
  workload: string,
  size: Size
): Promise<Result & { readonly n: number; readonly version: string }> =>
  new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...process.env }
    for (const [key, value] of Object.entries(extraEnv)) {
      if (value === undefined) delete env[key]
      else env[key] = value
    }
    const child = spawn(process.execPath, ["--expose-gc", ...entry, runtime, workload, size], {
      cwd: packageDir,
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code) => {
      const line = stdout.split("\n").find((l) => l.startsWith(resultPrefix))
      if (code !== 0 || line === undefined) {
        reject(
          new Error(
            `${runtime} ${workload} exited with ${code}: ${(stderr || stdout).trim().split("\n").slice(-8).join("\n")}`
          )
        )
        return
      }
      resolve(JSON.parse(line.slice(resultPrefix.length)) as Result & { readonly n: number; readonly version: string }) // our own worker's output
    })
  })

/** The runtimes in the order repetition `rep` runs them (rotated, so no runtime always goes first). */
const orderFor = (rep: number, runtimes: ReadonlyArray<BootName>): ReadonlyArray<BootName> =>
  runtimes.map((_, i) => runtimes[(i + rep) % runtimes.length]!)

/**
 * Runs every selected workload `reps` times on every runtime (the three compared, unless `runtimes` says otherwise),
 * reporting progress on stderr.
 *
 * Contract: a process that fails is recorded as a failed run (its checks fail in the table); the other runs go on.
 */
export const runAll = async (options: {
  readonly workloads: ReadonlyArray<Workload>
  readonly reps: number
  readonly size: Size
  readonly log: (line: string) => void
  /** Called with the runs so far after each one, so an interrupted run keeps what it measured. */
  readonly onRun?: ((runs: ReadonlyArray<Run>) => void) | undefined
  readonly runtimes?: ReadonlyArray<BootName>
}): Promise<ReadonlyArray<Run>> => {
  const runtimes = options.runtimes ?? [...runtimeNames, ...harnessPaths]
  const runs: Array<Run> = []
  // One loopback model server for the whole run, in this process: the workers' CPU time is the runtime's alone.
  const server = await startSseServer()
  try {
    const on = (workload: Workload) => runtimes.filter((r) => workload.runsOn?.includes(r) ?? true)
    const total = options.reps * options.workloads.reduce((sum, workload) => sum + on(workload).length, 0)
    for (let rep = 0; rep < options.reps; rep++) {
      for (const workload of options.workloads) {
        for (const runtime of orderFor(rep, on(workload))) {
          const start = nowUs()
          const loadBefore = os.loadavg()[0] ?? 0
          const prefix = `[${runs.length + 1}/${total}] rep ${rep + 1} ${workload.id} ${runtime}`
          try {
            const { n, version, ...result } = await runInProcess(runtime, workload.id, options.size, server.url)
            const seconds = (nowUs() - start) / 1e6
            const load = [loadBefore, os.loadavg()[0] ?? 0] as const
            runs.push({ runtime, workload: workload.id, rep, n, version, seconds, load, result })
            options.log(`${prefix}: ${seconds.toFixed(1)} s, ${checkLine(result.checks)}`)
          } catch (error) {
            const seconds = (nowUs() - start) / 1e6
            const message = error instanceof Error ? error.message : String(error)
            runs.push({
              runtime,
              workload: workload.id,
              rep,
              n: workload.sizes[options.size],
              version: "?",
              seconds,
              load: [loadBefore, os.loadavg()[0] ?? 0],
              error: message
            })
            options.log(`${prefix}: FAILED after ${seconds.toFixed(1)} s: ${message}`)
          }
          options.onRun?.(runs)
        }
      }
    }
  } finally {
    await server.close()
  }
  return runs
}

/**
 * Runs a bench command's `main` and exits with its code: 1 when a check failed, 2 when the run itself threw (printed
 * on stderr).
 */
export const runMain = (main: () => Promise<number>): void => {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error)
      process.exit(2)
    }
  )
}
