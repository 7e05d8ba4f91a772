// Compiles the CLI into JavaScript (dist/harness.mjs, plus dist/chunks/ for what is loaded on demand: the
// PostgreSQL store, the HTTP provider) so that it starts without a TypeScript loader.
// dist/inputs.json lists the workspace sources it was built from; bin/harness.mjs uses the bundle only while none
// of them is newer than it (edit a source and the CLI runs from source again until the next build).
import { build } from "esbuild"
import console from "node:console"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, "..")
const repo = resolve(root, "../..")
const outdir = join(root, "dist")
const outfile = join(outdir, "harness.mjs")
rmSync(join(outdir, "chunks"), { recursive: true, force: true })
mkdirSync(dirname(outfile), { recursive: true })

const result = await build({
  entryPoints: [join(root, "src", "bin.ts")],
  outdir,
  entryNames: "harness",
  chunkNames: "chunks/[name]-[hash]",
  outExtension: { ".js": ".mjs" },
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  metafile: true,
  logLevel: "warning",
  // Native or optional modules stay outside the bundle and load from node_modules; so does the MCP SDK (a dependency
  // of the CLI, loaded only when an MCP server is configured), whose Ajv carries code templates that name packages.
  external: ["better-sqlite3", "pg-native", "@modelcontextprotocol/sdk"],
  // The workspace packages from their sources (their `exports` point at dist/ only without this condition).
  conditions: ["@harness/source"],
  banner: {
    js:
      "import { createRequire as __harnessRequire } from \"node:module\"; const require = __harnessRequire(import.meta.url);"
  }
})

const inputs = Object.keys(result.metafile.inputs)
  .filter((input) => !input.includes("node_modules"))
  .map((input) => relative(repo, resolve(process.cwd(), input)))
writeFileSync(join(root, "dist", "inputs.json"), `${JSON.stringify(inputs, null, 1)}\n`)
console.log(`harness: built ${relative(process.cwd(), outfile)} from ${inputs.length} workspace sources`)
