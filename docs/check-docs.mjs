// Checks the JSDoc that `@effect/docgen` does not: every documented export of a package's public modules has
// exactly one `@category`, taken from that package's closed set below, and every entry point has an `@example`
// (docgen type-checks and runs the examples); and that every published package's README starts with its install line
// and the root README has its "Install in your project" section; that an ADR numbered 0048 or later is at most 900
// words, and that an ADR superseded by docs/performance.md names rows that exist there. Prints each finding as
// `file:line: text` and exits 1 if there is any.
// Run: `npm run docs` (docgen for every package below, then this check).
import { existsSync, readdirSync, readFileSync } from "node:fs"
import process from "node:process"

/** Each package's closed set of categories. A new category is a decision: add it here. */
const categories = {
  domain: ["constants", "constructors", "errors", "guards", "models", "schemas", "symbols", "utils"],
  session: [
    "closing",
    "constants",
    "constructors",
    "errors",
    "guards",
    "layers",
    "models",
    "schemas",
    "services",
    "sessions",
    "symbols",
    "utils"
  ],
  agent: ["constructors", "errors", "guards", "layers", "models", "services", "symbols", "utils"],
  testkit: ["constructors", "invariants", "layers", "models", "rendering", "replies", "services"],
  tools: ["constants", "constructors", "errors", "layers", "models", "schemas", "tools"],
  mcp: ["constants", "constructors", "errors", "layers", "models", "schemas", "services", "utils"],
  llm: ["constants", "constructors", "errors", "layers", "models", "utils"],
  "store-sql": ["constants", "constructors", "models", "utils"],
  "store-sqlite": ["constructors", "layers", "models"],
  "store-jsonl": ["constructors", "layers", "models"],
  "store-postgres": ["constructors", "layers", "models"],
  goal: [
    "commands",
    "constants",
    "constructors",
    "errors",
    "guards",
    "models",
    "schemas",
    "services",
    "symbols",
    "utils"
  ],
  subagents: ["constructors", "errors", "layers", "models", "schemas", "services", "utils"],
  server: ["api", "constructors", "errors", "groups", "guards", "layers", "models", "schemas", "services", "symbols"],
  cluster: ["config", "constructors", "entities", "errors", "layers", "models", "operations", "rpcs"],
  cli: ["commands", "constants", "constructors", "errors", "layers", "models", "schemas", "utils"]
}

/** Entry points that must carry an `@example`: `package/Module.export`. */
const entryPoints = [
  "agent/Agent.make",
  "agent/Agent.layer",
  "llm/ChatCompletions.layerConfig",
  "session/SessionLog.make",
  "tools/NodeWorkspaceTools.make",
  "testkit/ScriptedModel.make"
]

const exported =
  /^\s*export\s+(?:declare\s+)?(?:abstract\s+)?(?:const|let|function\*?|class|interface|type|namespace|enum)\s+(\w+)/
const specifier = /^\s+(?:type\s+)?(\w+)(?:\s+as\s+(\w+))?,?\s*$/

const findings = []
const examples = new Set()
for (const [pkg, allowed] of Object.entries(categories)) {
  const dir = `packages/${pkg}/src`
  const modules = readdirSync(dir).filter((file) => file.endsWith(".ts") && file !== "index.ts" && file !== "bin.ts")
  for (const module of modules) {
    const file = `${dir}/${module}`
    const lines = readFileSync(file, "utf8").split("\n")
    for (let start = 0; start < lines.length; start++) {
      if (!lines[start].trim().startsWith("/**")) continue
      let end = start
      while (!lines[end].includes("*/")) end++
      let next = end + 1
      while (next < lines.length && lines[next].trim() === "") next++
      const block = lines.slice(start, end + 1).join("\n")
      const declaration = lines[next] ?? ""
      const match = exported.exec(declaration) ??
        (declaration.startsWith("export") ? null : specifier.exec(declaration))
      start = end
      if (match === null || !block.includes("@since")) continue
      const name = match[2] ?? match[1]
      const where = `${file}:${next + 1}`
      const found = [...block.matchAll(/@category\s+(\S+)/g)].map((m) => m[1])
      if (found.length !== 1) findings.push(`${where}: ${name} has ${found.length} @category tags (wants one)`)
      for (const category of found) {
        if (!allowed.includes(category)) {
          findings.push(`${where}: ${name}: @category ${category} is not in ${pkg}'s set (${allowed.join(", ")})`)
        }
      }
      if (block.includes("@example")) examples.add(`${pkg}/${module.slice(0, -3)}.${name}`)
    }
  }
}
for (const entry of entryPoints) {
  if (!examples.has(entry)) findings.push(`${entry}: an entry point without an @example`)
}

// Install lines (ADR 0045): every published package's README starts, after its title, with a `sh` block whose first
// line installs the package and each peer dependency it requires (a global install of the CLI needs none named);
// the root README has the "Install in your project" section.
for (const pkg of readdirSync("packages")) {
  const manifestFile = `packages/${pkg}/package.json`
  if (!existsSync(manifestFile)) continue
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8"))
  if (manifest.private === true) continue
  const readme = `packages/${pkg}/README.md`
  const lines = existsSync(readme) ? readFileSync(readme, "utf8").split("\n") : []
  const line = lines[0] === `# ${manifest.name}` && lines[1] === "" && lines[2] === "```sh" ? lines[3] : undefined
  const words = (line ?? "").split("#")[0].trim().split(/\s+/)
  if (line === undefined || words[0] !== "npm" || words[1] !== "install" || !words.includes(manifest.name)) {
    findings.push(`${readme}:3: does not start with its install line (a sh block: npm install ${manifest.name} …)`)
    continue
  }
  const optional = manifest.peerDependenciesMeta ?? {}
  const required = Object.keys(manifest.peerDependencies ?? {}).filter((peer) => optional[peer]?.optional !== true)
  for (const peer of words.includes("-g") ? [] : required) {
    if (!words.includes(peer)) findings.push(`${readme}:4: the install line lacks the peer dependency ${peer}`)
  }
}
if (!/^## Install in your project$/m.test(readFileSync("README.md", "utf8"))) {
  findings.push("README.md: no \"## Install in your project\" section")
}

// ADRs (docs/README.md, "Decision records"): from 0048 on, an ADR is at most `adrWordCap` words, counted as `wc -w`
// counts them (runs of non-whitespace); 0001–0047 were written before the cap and are exempt. An ADR whose status says
// it is superseded by docs/performance.md names rows (levers, in bold at the start of a row) or sections that exist.
const adrWordCap = 900
const firstCappedAdr = 48
const words = (text) => text.split(/\s+/).filter((word) => word !== "").length
const performance = existsSync("docs/performance.md") ? readFileSync("docs/performance.md", "utf8") : ""
const sections = new Set([...performance.matchAll(/^#+ (.+)$/gm)].map((match) => match[1]))
for (const file of readdirSync("docs/adr").filter((name) => name.endsWith(".md")).sort()) {
  const path = `docs/adr/${file}`
  const text = readFileSync(path, "utf8")
  const number = Number(/^(\d{4})-/.exec(file)?.[1] ?? Number.NaN)
  if (Number.isNaN(number)) findings.push(`${path}: an ADR's file name starts with its four-digit number`)
  const count = words(text)
  if (number >= firstCappedAdr && count > adrWordCap) {
    findings.push(
      `${path}: ${count} words; an ADR from ${String(firstCappedAdr).padStart(4, "0")} on is at most ${adrWordCap} ` +
        `words (counted as wc -w counts them): keep the problem, the decision, the alternatives and the consequences; ` +
        `figures go to docs/performance.md`
    )
  }
  const status = text.split("\n").findIndex((line) => line.startsWith("Status:"))
  const line = status === -1 ? "" : text.split("\n")[status]
  if (!line.includes("docs/performance.md")) continue
  const named = /\((?:rows?|section) (.*?)\)(?:[;:]|$)/.exec(line)?.[1] ?? ""
  const names = [...named.matchAll(/"([^"]+)"/g)].map((match) => match[1])
  if (names.length === 0) findings.push(`${path}:${status + 1}: superseded by docs/performance.md without a row named`)
  for (const name of names) {
    if (!performance.includes(`**${name}`) && !sections.has(name)) {
      findings.push(`${path}:${status + 1}: docs/performance.md has no row or section "${name}"`)
    }
  }
}

for (const finding of findings) process.stdout.write(`${finding}\n`)
process.stdout.write(
  `${findings.length} finding(s) (${Object.keys(categories).length} packages' JSDoc, READMEs' install lines, ADRs)\n`
)
process.exitCode = findings.length === 0 ? 0 : 1
