/**
 * Start-up: what the compiled `harness` loads before it parses its arguments. `--help`, `--version`, `config` and a
 * bad flag need only the command definitions and the settings; the agent, the session log, the stores, the tools,
 * the goals and the model load when a command runs (`internal/commands.ts`, imported on demand). Each of those
 * packages, loaded at start-up, costs every `harness` invocation its compile and evaluation time (measured in the
 * package README). The bundle is the one the global setup builds, as `npm install` does.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const dist = fileURLToPath(new URL("../dist/", import.meta.url))

/** The files `file` loads with static imports, itself included, transitively (dynamic `import()`s excluded). */
const staticallyLoaded = (file: string, seen: Set<string> = new Set()): Set<string> => {
  if (seen.has(file)) return seen
  seen.add(file)
  const text = readFileSync(file, "utf8")
  for (const [, path] of text.matchAll(/(?:^|[\s;}])(?:from|import)\s*"(\.\.?\/[^"]+\.mjs)"/g)) {
    staticallyLoaded(join(dirname(file), path!), seen)
  }
  return seen
}

/** The workspace packages whose sources the files hold (esbuild marks each module with a `// path` comment). */
const workspacePackages = (files: Iterable<string>): Set<string> => {
  const packages = new Set<string>()
  for (const file of files) {
    for (const [, name] of readFileSync(file, "utf8").matchAll(/^\/\/ packages\/([^/]+)\/src\//gm)) {
      packages.add(name!)
    }
  }
  return packages
}

/** The workspace packages only a running command needs. */
const onDemand = [
  "session",
  "domain",
  "tools",
  "mcp",
  "goal",
  "store-sqlite",
  "store-jsonl",
  "store-sql",
  "store-postgres",
  "cluster"
]

describe("start-up", () => {
  it("loads the command definitions and the settings, none of the agent (but its budgets' model), the stores, the tools or the model", () => {
    const eager = staticallyLoaded(join(dist, "harness.mjs"))
    const packages = workspacePackages(eager)
    assert.isTrue(packages.has("cli"), "the CLI's own definitions are loaded")
    for (const name of onDemand) {
      assert.isFalse(packages.has(name), `@harness/${name} is loaded at start-up`)
    }
    // Of the provider, only its settings' descriptions (for `harness config`): the module that loads nothing else.
    const llm = new Set(
      [...eager].flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/^\/\/ packages\/llm\/src\/(.+)$/gm)].map(([, path]) => path)
      )
    )
    assert.deepStrictEqual([...llm].sort(), ["ChatCompletionsSettings.ts", "internal/configSettings.ts"])
    // Of the agent, only its budgets' model (the step cap's default, the price lookup): a module that imports nothing.
    const agent = [...eager].flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/^\/\/ packages\/agent\/src\/(.+)$/gm)].map(([, path]) => path)
    )
    assert.deepStrictEqual(agent, ["Budget.ts"])
  })
})
