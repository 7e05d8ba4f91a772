/**
 * A test's child program as one ES module, for tests that run it as a real process (kill it, stop it, start it
 * again): its TypeScript entry and everything it imports bundled by esbuild, so the child starts in about a second
 * of CPU instead of several under `tsx`. esbuild is an optional peer: only a test that bundles needs it.
 *
 * @since 0.0.0
 */
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Bundles `entry` into one ES module in a fresh folder under `under` and answers the module's path. `under` should
 * lie in the workspace's `node_modules` (e.g. `node_modules/.cache`): the native modules stay external
 * (`better-sqlite3`, `msgpackr-extract`) and Node resolves them from there. The workspace packages are bundled from
 * their sources (the `@harness/source` condition), not their builds.
 *
 * Contract: the folder is deleted when the scope closes; a failed build is a defect (the test's setup is broken).
 *
 * @since 0.0.0
 * @category constructors
 */
export const bundle = (entry: string, under: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const esbuild = await import("esbuild")
      fs.mkdirSync(under, { recursive: true })
      const dir = fs.mkdtempSync(path.join(under, `${path.basename(entry, path.extname(entry))}-`))
      const outfile = path.join(dir, "child.mjs")
      await esbuild.build({
        entryPoints: [entry],
        bundle: true,
        platform: "node",
        format: "esm",
        outfile,
        external: ["better-sqlite3", "msgpackr-extract"],
        conditions: ["@harness/source"],
        // Bundled CommonJS dependencies call `require`, which an ES module lacks; the name is one no bundled module
        // declares.
        banner: {
          js:
            "import { createRequire as __harnessRequire } from 'node:module'; const require = __harnessRequire(import.meta.url);"
        },
        logLevel: "error"
      })
      return { dir, outfile }
    }),
    ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(({ outfile }) => outfile))
