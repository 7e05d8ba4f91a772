/**
 * Runs the benchmark: every (runtime, workload, repetition) in a fresh `node --expose-gc --import tsx` process,
 * repetitions interleaving the runtimes (the order rotates each repetition), and collects the results. Harness is
 * built into one bundle first (`HarnessBuild.ts`).
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { bundleReady, ensureBundle, harnessBuild } from "./HarnessBuild.js"
import { nowUs } from "./Measure.js"
import type { BootName } from "./Runtime.js"
import { runtimeNames } from "./Runtime.js"
import { checkLine, type Run } from "./Summary.js"
import { resultPrefix } from "./Worker.js"
import type { Result, Size, Workload } from "./Workload.js"

/** The package directory (the worker's working directory). */
export const packageDir = fileURLToPath(new URL("..", import.meta.url))
const workerPath = fileURLToPath(new URL("./Worker.ts", import.meta.url))

/** Runs one workload on one runtime in a fresh process and returns its result. */
export const runInProcess = (
  runtime: BootName,
  workload: string,
  size: Size
): Promise<Result & { readonly n: number; readonly version: string }> =>
  (runtime === "harness" && harnessBuild === "bundle" ? ensureBundle() : Promise.resolve()).then(() =>
    spawnWorker(runtime, workload, size)
  )

const spawnWorker = (
  runtime: BootName,
  workload: string,
  size: Size
): Promise<Result & { readonly n: number; readonly version: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", workerPath, runtime, workload, size], {
      cwd: packageDir,
      env: { ...process.env, [bundleReady]: "1" },
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
  readonly runtimes?: ReadonlyArray<BootName>
}): Promise<ReadonlyArray<Run>> => {
  const runtimes = options.runtimes ?? runtimeNames
  const runs: Array<Run> = []
  const total = options.reps * options.workloads.length * runtimes.length
  for (let rep = 0; rep < options.reps; rep++) {
    for (const workload of options.workloads) {
      for (const runtime of orderFor(rep, runtimes)) {
        const start = nowUs()
        const prefix = `[${runs.length + 1}/${total}] rep ${rep + 1} ${workload.id} ${runtime}`
        try {
          const { n, version, ...result } = await runInProcess(runtime, workload.id, options.size)
          const seconds = (nowUs() - start) / 1e6
          runs.push({ runtime, workload: workload.id, rep, n, version, seconds, result })
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
            error: message
          })
          options.log(`${prefix}: FAILED after ${seconds.toFixed(1)} s: ${message}`)
        }
      }
    }
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
