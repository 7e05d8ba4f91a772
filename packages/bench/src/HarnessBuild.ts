/**
 * How the bench loads Harness: compiled by esbuild into one ES module, as the `harness` CLI ships (the default), or
 * from its TypeScript sources through tsx (`BENCH_HARNESS_BUILD=source`). The same build makes the baseline's bundle
 * from another commit's sources (`Baseline.ts`).
 *
 * The peers run as the JavaScript they publish. Harness's sources under tsx would carry a loader's artefact no
 * build a user runs has: tsx compiles with esbuild's `keepNames`, which wraps every named function and closure in a
 * `__name(fn, "name")` call — a `defineProperty` per closure created, each turning that function's properties into
 * a dictionary (≈ 10–12 KB of every idle agent's heap in W3, and CPU on every turn). The bundle is built once per
 * runner process, from the sources as they are, before the first Harness worker starts.
 */
import type * as Esbuild from "esbuild"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** `bundle` (default) or `source` (`BENCH_BUILD`, or its older name `BENCH_HARNESS_BUILD`). */
export const harnessBuild: "bundle" | "source" =
  (process.env["BENCH_BUILD"] ?? process.env["BENCH_HARNESS_BUILD"]) === "source" ? "source" : "bundle"

/**
 * Where the worker's bundle is written: `Worker.ts` with every runtime's adapter and everything they import, split
 * into one chunk per adapter so a worker loads only the runtime it boots (ADR 0057). `BENCH_WORKER_DIR` moves it, so
 * that a second run (a `--baseline` check beside a long run) does not rebuild the first one's workers.
 */
const workerBundleDir = process.env["BENCH_WORKER_DIR"] ??
  fileURLToPath(new URL("../.bundle/worker/", import.meta.url))

/** Set to `1` in the environment of a worker that runs from the worker bundle. */
export const workerBundled = "BENCH_WORKER_BUNDLED"

let workerBuilt: Promise<string> | undefined

/**
 * Bundles `Worker.ts` — the workloads and all the runtimes' adapters, each peer's packages and Harness's sources
 * alike — once per process; resolves with the entry's path. Every runtime then runs as compiled JavaScript without a
 * loader, built the same way.
 */
export const ensureWorkerBundle = (): Promise<string> => (workerBuilt ??= (async () => {
  const { build } = await import("esbuild")
  await build({
    entryPoints: [fileURLToPath(new URL("./Worker.ts", import.meta.url))],
    outdir: workerBundleDir,
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    // The reference's packages read their own `../package.json` at run time: they load from node_modules as
    // published (compiled JavaScript already); its adapter is bundled like every other.
    external: ["better-sqlite3", "pg-native", "esbuild", "@deepseek-ai/*"],
    conditions: ["@harness/source"],
    banner: {
      js:
        "import { createRequire as __benchRequire } from \"node:module\"; const require = __benchRequire(import.meta.url);"
    }
  })
  return join(workerBundleDir, "Worker.js")
})())

/** Set to `1` in the environment of a worker whose runner built the bundle. */
export const bundleReady = "BENCH_HARNESS_BUNDLE_READY"

/** Where the bundle is written (git-ignored). */
export const bundlePath = fileURLToPath(new URL("../.bundle/harness.mjs", import.meta.url))

const entry = fileURLToPath(new URL("./runtimes/harness.ts", import.meta.url))

let built: Promise<void> | undefined

/** Builds the bundle of the Harness adapter and everything it imports (once per process; esbuild loaded only here). */
export const ensureBundle = (): Promise<void> => (built ??= bundleTree({ outfile: bundlePath }))

/**
 * Bundles the Harness adapter of a source tree: this repository's (the default), or a tree of another commit's
 * `packages/` (`tree`), whose `@harness/*` imports resolve into that tree while third-party packages come from this
 * repository's `node_modules`.
 */
export const bundleTree = async (options: { readonly outfile: string; readonly tree?: string }): Promise<void> => {
  const { build } = await import("esbuild")
  const tree = options.tree
  await build({
    entryPoints: [tree === undefined ? entry : join(tree, "packages", "bench", "src", "runtimes", "harness.ts")],
    outfile: options.outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    // As the CLI's build: native or optional modules load from node_modules.
    external: ["better-sqlite3", "pg-native"],
    // The workspace packages from their sources, not their builds (ADR 0045).
    conditions: ["@harness/source"],
    ...(tree === undefined ? {} : {
      plugins: [workspaceOf(tree)],
      nodePaths: [fileURLToPath(new URL("../../../node_modules", import.meta.url))]
    }),
    banner: {
      js:
        "import { createRequire as __benchRequire } from \"node:module\"; const require = __benchRequire(import.meta.url);"
    }
  })
}

/** Resolves `@harness/<name>[/<module>]` to the sources of `<tree>/packages/<name>`, by its `exports` map. */
const workspaceOf = (tree: string): Esbuild.Plugin => ({
  name: "baseline-workspace",
  setup: (build) => {
    build.onResolve({ filter: /^@harness\// }, ({ path }) => {
      const [, name, ...rest] = path.split("/")
      const dir = join(tree, "packages", name!)
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { // that commit's own manifest
        readonly exports?: Record<string, string | Record<string, string | null> | null>
      }
      const subpath = rest.length === 0 ? "." : `./${rest.join("/")}`
      const target = exportTarget(manifest.exports ?? {}, subpath)
      const file = target === undefined ? undefined : join(dir, target)
      if (file === undefined || !existsSync(file)) {
        return { errors: [{ text: `${path}: not exported as a source file by ${dir}/package.json` }] }
      }
      return { path: file }
    })
  }
})

/** The source file an `exports` map gives a subpath: an exact key, or a `./*` pattern; the source condition first. */
const exportTarget = (
  exports: Record<string, string | Record<string, string | null> | null>,
  subpath: string
): string | undefined => {
  const pick = (entry: string | Record<string, string | null> | null | undefined): string | undefined =>
    entry === null || entry === undefined
      ? undefined
      : typeof entry === "string"
      ? entry
      : entry["@harness/source"] ?? entry["import"] ?? entry["default"] ?? undefined
  if (subpath in exports) return pick(exports[subpath])
  // The longest prefix wins, as in Node (`./internal/*` over `./*`).
  const patterns = Object.entries(exports).sort(([a], [b]) => b.indexOf("*") - a.indexOf("*"))
  for (const [key, entry] of patterns) {
    const star = key.indexOf("*")
    if (star < 0) continue
    const [before, after] = [key.slice(0, star), key.slice(star + 1)]
    if (subpath.startsWith(before) && subpath.endsWith(after) && subpath.length >= key.length - 1) {
      const matched = subpath.slice(before.length, subpath.length - after.length)
      return pick(entry)?.replace("*", matched)
    }
  }
  return undefined
}
