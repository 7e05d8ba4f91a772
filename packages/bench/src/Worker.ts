/**
 * One measurement in a fresh process: `node --expose-gc .bundle/worker/Worker.js <runtime> <workload> <size>` (the
 * worker bundle, `HarnessBuild.ts`), or `node --expose-gc --import tsx src/Worker.ts …` with `BENCH_BUILD=source`.
 * Boots only the named runtime, so the reference's polyfill and the peers' modules stay out of the others'
 * processes (Harness from the runner's bundle unless `BENCH_HARNESS_BUILD=source`: `HarnessBuild.ts`), runs the
 * workload once and prints its result as one `RESULT <json>` line on stdout.
 */
import { pathToFileURL } from "node:url"
import { baselineBundleEnv, treeBundleEnv } from "./Baseline.js"
import { bundlePath, bundleReady, ensureBundle, harnessBuild, workerBundled } from "./HarnessBuild.js"
import type { BenchRuntime, BootName } from "./Runtime.js"
import { baselineName, ceilingName, harnessModelOf, harnessPaths, runtimeNames } from "./Runtime.js"
import type * as HarnessSource from "./runtimes/harness.js"
import { sseUrlEnv, startSseServer } from "./SseServer.js"
import type { Result, Size } from "./Workload.js"
import { workloads } from "./Workloads.js"

/** The line prefix the runner looks for. */
export const resultPrefix = "RESULT "

/**
 * Boots a runtime by name, importing only its adapter. Harness is bundled or from source (`HarnessBuild.ts`); its
 * version string says which, as loaded here.
 */
export const boot = async (name: BootName, build: typeof harnessBuild = harnessBuild): Promise<BenchRuntime> => {
  switch (name) {
    case "harness-standard":
    case "harness-pull": {
      // The adapter reads its model path when its module loads: set it first (a worker boots one runtime).
      process.env["BENCH_HARNESS_MODEL"] = harnessModelOf[name]
      return { ...(await boot("harness", build)), name }
    }
    case "harness": {
      process.env["BENCH_HARNESS_MODEL"] ??= harnessModelOf.harness
      // In a comparison with a baseline, the tree runs from a standalone bundle built and loaded as the baseline's.
      const tree = process.env[treeBundleEnv]
      if (tree !== undefined) {
        const bundled = (await import(pathToFileURL(tree).href)) as typeof HarnessSource
        return withBuild(await bundled.make(), "bundled alone, as the baseline")
      }
      // Inside the worker bundle the adapter is one of its chunks, compiled like the peers'.
      if (process.env[workerBundled] === "1") {
        return withBuild(await (await import("./runtimes/harness.js")).make(), "bundled with the worker")
      }
      if (build === "source") return withBuild(await (await import("./runtimes/harness.js")).make(), "from source")
      // A worker the runner started finds the bundle built; any other caller (cpuProbe) builds it now.
      if (process.env[bundleReady] !== "1") await ensureBundle()
      const bundled = (await import(pathToFileURL(bundlePath).href)) as typeof HarnessSource // the same module, built
      return withBuild(await bundled.make(), "bundled")
    }
    case "pi":
      return (await import("./runtimes/pi.js")).make()
    case "reference":
      return (await import("./runtimes/reference.js")).make()
    case "ceiling":
      return (await import("./runtimes/ceiling.js")).make()
    case "baseline": {
      const baseline = process.env[baselineBundleEnv]
      if (baseline === undefined) throw new Error(`${baselineBundleEnv} is not set: the runner prepares the baseline`)
      const bundled = (await import(pathToFileURL(baseline).href)) as typeof HarnessSource // the adapter at that commit
      return withBuild(await bundled.make(), "baseline, bundled")
    }
  }
}

const withBuild = (runtime: BenchRuntime, build: string): BenchRuntime => ({
  ...runtime,
  version: `${runtime.version} (${build})`
})

/** Runs one workload on one runtime in this process. */
const measure = async (
  name: BootName,
  workloadId: string,
  size: Size
): Promise<Result & { readonly n: number; readonly version: string }> => {
  const workload = workloads.find((w) => w.id === workloadId)
  if (workload === undefined) throw new Error(`unknown workload ${workloadId}`)
  // Without the runner's server (smoke tests, probes) the worker serves itself, and its CPU figures include it.
  const own = process.env[sseUrlEnv] === undefined ? await startSseServer() : undefined
  if (own !== undefined) process.env[sseUrlEnv] = own.url
  const runtime = await boot(name)
  const n = workload.sizes[size]
  const result = await workload.run(runtime, n, size)
  await runtime.close()
  if (own !== undefined) {
    await own.close()
    delete process.env[sseUrlEnv]
  }
  return { ...result, n, version: runtime.version }
}

const isRuntime = (value: string | undefined): value is BootName =>
  value === ceilingName || value === baselineName || runtimeNames.some((name) => name === value) ||
  harnessPaths.some((name) => name === value)
const isSize = (value: string | undefined): value is Size => value === "full" || value === "quick" || value === "smoke"

const main = async () => {
  const [name, workloadId, size = "full"] = process.argv.slice(2)
  if (!isRuntime(name) || workloadId === undefined || !isSize(size)) {
    throw new Error(
      "usage: Worker.ts <reference|pi|harness|harness-standard|harness-pull|ceiling|baseline> <workload> [full|quick|smoke]"
    )
  }
  const result = await measure(name, workloadId, size)
  process.stdout.write(`${resultPrefix}${JSON.stringify(result)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error)
      process.exit(1)
    }
  )
}
