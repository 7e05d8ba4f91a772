/**
 * How the bench loads Harness: compiled by esbuild into one ES module, as the `harness` CLI ships (the default), or
 * from its TypeScript sources through tsx (`BENCH_HARNESS_BUILD=source`).
 *
 * The peers run as the JavaScript they publish. Harness's sources under tsx would carry a loader's artefact no
 * build a user runs has: tsx compiles with esbuild's `keepNames`, which wraps every named function and closure in a
 * `__name(fn, "name")` call — a `defineProperty` per closure created, each turning that function's properties into
 * a dictionary (≈ 10–12 KB of every idle agent's heap in W3, and CPU on every turn). The bundle is built once per
 * runner process, from the sources as they are, before the first Harness worker starts.
 */
import type * as Esbuild from "esbuild"
import { fileURLToPath } from "node:url"

/** `bundle` (default) or `source`. */
export const harnessBuild: "bundle" | "source" = process.env["BENCH_HARNESS_BUILD"] === "source" ? "source" : "bundle"

/** Set to `1` in the environment of a worker whose runner built the bundle. */
export const bundleReady = "BENCH_HARNESS_BUNDLE_READY"

/** Where the bundle is written (git-ignored). */
export const bundlePath = fileURLToPath(new URL("../.bundle/harness.mjs", import.meta.url))

const entry = fileURLToPath(new URL("./runtimes/harness.ts", import.meta.url))

let built: Promise<void> | undefined

/** Builds the bundle of the Harness adapter and everything it imports (once per process; esbuild loaded only here). */
export const ensureBundle = (): Promise<void> => (built ??= import("esbuild").then(bundle))

const bundle = async ({ build }: typeof Esbuild): Promise<void> => {
  await build({
    entryPoints: [entry],
    outfile: bundlePath,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    // As the CLI's build: native or optional modules load from node_modules.
    external: ["better-sqlite3", "pg-native"],
    // The workspace packages from their sources, not their builds (ADR 0045).
    conditions: ["@harness/source"],
    banner: {
      js:
        "import { createRequire as __benchRequire } from \"node:module\"; const require = __benchRequire(import.meta.url);"
    }
  })
}
