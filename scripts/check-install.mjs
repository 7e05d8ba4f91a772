// The consumer test (ADR 0045): Harness as a user outside this repository gets it. Packs every published package
// (scripts/packages.mjs) and checks each tarball: publint, strict; only built files, README, LICENSE and package.json;
// no TypeScript source as an entry; `./internal/*` sealed; every bare import of its JavaScript and declarations
// declared in its package.json. Then installs the tarballs into a fresh project in a temporary folder, compiles the
// root README's "Install in your project" program and a store-backed program there under strict consumer settings
// (moduleResolution nodenext, and bundler), runs both against a local chat-completions stand-in, checks that
// internal modules cannot be imported, and installs the CLI tarball globally into a temporary prefix and runs
// `harness --version` and `harness demo` (and `npx @harness/cli demo` in the project).
//
// No network: npm resolves against a registry this script serves on 127.0.0.1 from the workspace's lockfile (the
// versions `npm ci` installed) and the packed tarballs; every third-party tarball comes from npm's cache, where
// `npm ci` put it — one not there fails the install instead of being downloaded. Install scripts are not run: the
// one native module (better-sqlite3) gets the binary `npm ci` already compiled. Needs `npm run build` first (`npm
// test` runs it). Run: `node scripts/check-install.mjs` (HARNESS_KEEP_CONSUMER=1 keeps the temporary folder).
import { execFile } from "node:child_process"
import console from "node:console"
import { createHash } from "node:crypto"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { builtinModules } from "node:module"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import process from "node:process"
import { URL } from "node:url"
import { promisify } from "node:util"
import { publint } from "publint"
import ts from "typescript"
import { packAll, repo } from "./packages.mjs"

const execFileAsync = promisify(execFile)
const failures = []
const fail = (message) => failures.push(message)
const step = (message) => console.log(`check-install: ${message}`)

/** Runs a command asynchronously (this process serves the registry meanwhile); fails the check if it fails. */
const run = async (what, command, args, options = {}) => {
  try {
    return await execFileAsync(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: 600_000, ...options })
  } catch (error) {
    fail(
      `${what}: ${command} ${args.join(" ")} failed (${error.code ?? error.signal}):\n${error.stdout}\n${error.stderr}`
    )
    return undefined
  }
}

const lock = JSON.parse(readFileSync(join(repo, "package-lock.json"), "utf8"))
const pinned = (name) => lock.packages[`node_modules/${name}`].version

// --- the registry: every third-party version in the lockfile, and the packed Harness tarballs ---------------------
/** name → version → the version's document, from the lockfile's entries (nested copies too) and the packed manifests. */
const registry = new Map()
const addVersion = (name, document) => {
  if (!registry.has(name)) registry.set(name, new Map())
  registry.get(name).set(document.version, document)
}
for (const [path, entry] of Object.entries(lock.packages)) {
  if (!path.includes("node_modules/") || entry.link === true || entry.integrity === undefined) continue
  const name = entry.name ?? path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)
  if (name.startsWith("@harness/")) continue
  const { bin, cpu, dependencies, engines, libc, optionalDependencies, os, peerDependencies, peerDependenciesMeta } =
    entry
  addVersion(name, {
    name,
    version: entry.version,
    dependencies,
    optionalDependencies,
    peerDependencies,
    peerDependenciesMeta,
    bin,
    engines,
    os,
    cpu,
    libc,
    hasInstallScript: entry.hasInstallScript,
    // Never served: npm takes the tarball from its cache by integrity, or the install fails.
    dist: { tarball: `-/missing/${encodeURIComponent(name)}-${entry.version}.tgz`, integrity: entry.integrity }
  })
}

const work = mkdtempSync(join(tmpdir(), "harness-consumer-"))
const packs = join(work, "packs")

/** What the chat-completions stand-in answers every request with. */
const answer = "Hello from the stand-in model."
const completion = [
  { choices: [{ index: 0, delta: { role: "assistant", content: answer }, finish_reason: null }] },
  {
    choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
    usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 }
  }
].map((chunk) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "stand-in", ...chunk })}\n\n`
)
  .join("") + "data: [DONE]\n\n"

const server = createServer((request, response) => {
  const url = new URL(request.url, "http://127.0.0.1")
  const base = `http://127.0.0.1:${server.address().port}/`
  if (url.pathname === "/v1/chat/completions") {
    request.resume()
    response.setHeader("content-type", "text/event-stream")
    return response.end(completion)
  }
  if (url.pathname.startsWith("/-/harness/")) {
    const file = join(packs, decodeURIComponent(url.pathname.slice("/-/harness/".length)))
    if (existsSync(file)) return response.end(readFileSync(file))
  }
  if (url.pathname.startsWith("/-/missing/")) {
    fail(`${decodeURIComponent(url.pathname.slice("/-/missing/".length))} is not in npm's cache (run npm ci first)`)
  }
  const name = decodeURIComponent(url.pathname.slice(1))
  const versions = registry.get(name)
  // A name not here is an optional peer npm looks up and does without (ioredis, pg-native, …); one it needs fails
  // the install.
  if (url.pathname.startsWith("/-/") || versions === undefined) {
    response.statusCode = 404
    return response.end("{}")
  }
  const all = [...versions.values()].map((document) => ({
    ...document,
    dist: { ...document.dist, tarball: new URL(document.dist.tarball, base).href }
  }))
  response.setHeader("content-type", "application/json")
  response.end(JSON.stringify({
    name,
    "dist-tags": { latest: all[all.length - 1].version },
    versions: Object.fromEntries(all.map((document) => [document.version, document]))
  }))
})
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const origin = `http://127.0.0.1:${server.address().port}`
/** npm, offline but for this registry. */
const npmArgs = [
  `--registry=${origin}/`,
  "--prefer-offline",
  "--ignore-scripts",
  "--no-audit",
  "--no-fund",
  "--no-update-notifier",
  "--loglevel=warn"
]

// --- pack, and check each tarball ---------------------------------------------------------------------------------
step(`packing into ${packs}`)
const packed = packAll(packs)

const walk = (dir, base = dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name), base) : [relative(base, join(dir, entry.name))]
  )
const packageOf = (specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
const isBuiltin = (specifier) => builtinModules.includes(specifier) || builtinModules.includes(packageOf(specifier))
/** Bare imports the CLI's bundle makes lazily and guards: pg's optional native driver. */
const optionalInBundle = new Set(["pg-native"])

for (const { file, folder, manifest, name } of packed) {
  const tarball = readFileSync(file)
  const lint = await publint({ pack: { tarball: new Uint8Array(tarball).buffer }, strict: true, level: "suggestion" })
  for (const message of lint.messages) {
    fail(
      `${name}: publint ${message.type} ${message.code} at ${message.path.join(".")} ${JSON.stringify(message.args)}`
    )
  }
  addVersion(name, {
    ...manifest,
    dist: {
      tarball: `-/harness/${relative(packs, file)}`,
      integrity: `sha512-${createHash("sha512").update(tarball).digest("base64")}`
    }
  })
  const unpacked = join(work, "unpacked", folder)
  mkdirSync(unpacked, { recursive: true })
  await run(`unpack ${name}`, "tar", ["xzf", file, "-C", unpacked])
  const root = join(unpacked, "package")
  const files = walk(root)
  for (const path of files) {
    const allowed = ["package.json", "README.md", "LICENSE"].includes(path) ||
      /^dist\/.+\.(?:js|mjs|d\.ts|js\.map|d\.ts\.map)$/.test(path) || (folder === "cli" && path === "bin/harness.mjs")
    if (!allowed) fail(`${name} ships ${path} (only built files, README, LICENSE and package.json)`)
  }
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const values = target === null ? [] : typeof target === "string" ? [target] : Object.values(target)
    for (const value of values) {
      if (/\.[cm]?tsx?$/.test(value) && !/\.d\.[cm]?ts$/.test(value)) {
        fail(`${name}: exports["${subpath}"] is the TypeScript source ${value}`)
      }
    }
  }
  if (manifest.exports["./internal/*"] !== null) fail(`${name}: its exports do not seal ./internal/*`)
  const declared = new Set([
    name,
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
    ...Object.keys(manifest.optionalDependencies ?? {})
  ])
  for (const path of files.filter((path) => /\.(?:m?js|d\.ts)$/.test(path))) {
    const info = ts.preProcessFile(readFileSync(join(root, path), "utf8"), true, true)
    for (const { fileName } of [...info.importedFiles, ...info.typeReferenceDirectives]) {
      if (/^(?:\.|\/|node:)/.test(fileName) || isBuiltin(fileName) || declared.has(packageOf(fileName))) continue
      if (fileName === "node" && path.endsWith(".d.ts")) continue
      if (folder === "cli" && optionalInBundle.has(fileName) && !path.endsWith(".d.ts")) continue
      fail(`${name}: ${path} imports ${fileName}, which its package.json does not declare`)
    }
  }
}

// --- a project that installs the tarballs ------------------------------------------------------------------------
const project = join(work, "project")
mkdirSync(join(project, "src"), { recursive: true })
const readme = readFileSync(join(repo, "README.md"), "utf8")
const install = /## Install in your project[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)
if (install === null) fail("README.md has no \"Install in your project\" section with a ts block")
writeFileSync(join(project, "src", "readme.ts"), install?.[1] ?? "")
writeFileSync(
  join(project, "src", "store.ts"),
  `// A store-backed agent: two runs over one session in SQLite; the second continues what the first stored.
import { NodeHttpClient } from "@effect/platform-node"
import { Agent } from "@harness/agent"
import { Ids, Message } from "@harness/domain"
import { ChatCompletions } from "@harness/llm"
import { SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Console, Effect } from "effect"

const id = Ids.SessionId.make("consumer-1")

const turn = (text: string, first: boolean) =>
  Effect.gen(function*() {
    const session = first ? yield* SessionLog.make({ id }) : yield* SessionLog.open(id)
    const agent = yield* Agent.make({ session })
    yield* agent.followup(Message.make(text))
    yield* agent.whenIdle
    const turns = (yield* agent.log).filter((event) => event.type === "turn/end").length
    yield* session.close
    return turns
  }).pipe(Effect.scoped)

const program = Effect.gen(function*() {
  yield* turn("hello", true)
  const turns = yield* turn("and again", false)
  yield* Console.log(\`turns: \${turns}\`)
}).pipe(
  Effect.provide(SqliteStore.layer({ filename: "sessions.db" })),
  Effect.provide(ChatCompletions.layerConfig()),
  Effect.provide(NodeHttpClient.layerUndici)
)

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
`
)
// @effect/platform-node's declarations import `ws`, whose types (@types/ws) neither it nor Harness brings: a consumer
// that type-checks libraries (skipLibCheck false, as here) declares the module, or installs @types/ws.
writeFileSync(
  join(project, "src", "ws.d.ts"),
  "declare module \"ws\" {\n  export type ServerOptions<A = unknown, B = unknown> = { readonly _?: [A, B] }\n" +
    "  export const WebSocket: unknown\n}\n"
)
writeFileSync(
  join(project, "src", "sealed.ts"),
  `// Internal modules and the workspace's test helpers are not importable.
for (const specifier of ["@harness/agent/internal/loop", "@harness/session/test/conformance", "@harness/session/internal/x"]) {
  try {
    await import(specifier)
    console.error(\`\${specifier} was importable\`)
    process.exitCode = 1
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") throw error
  }
}
export {}
`
)
const harnessDeps = Object.fromEntries(packed.map(({ manifest }) => [manifest.name, manifest.version]))
writeFileSync(
  join(project, "package.json"),
  JSON.stringify(
    {
      name: "harness-consumer",
      private: true,
      type: "module",
      dependencies: {
        ...harnessDeps,
        effect: pinned("effect"),
        "@effect/ai": pinned("@effect/ai"),
        "@effect/platform": pinned("@effect/platform"),
        "@effect/platform-node": pinned("@effect/platform-node"),
        "@effect/sql": pinned("@effect/sql"),
        "@types/node": pinned("@types/node")
      }
    },
    null,
    2
  )
)
const strict = {
  target: "ES2022",
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
  types: ["node"],
  rootDir: "src"
}
writeFileSync(
  join(project, "tsconfig.json"),
  JSON.stringify({ compilerOptions: { ...strict, module: "nodenext", moduleResolution: "nodenext", outDir: "out" } })
)
writeFileSync(
  join(project, "tsconfig.bundler.json"),
  JSON.stringify({ compilerOptions: { ...strict, module: "esnext", moduleResolution: "bundler", noEmit: true } })
)

/** Gives every better-sqlite3 under `root` the binary `npm ci` compiled for the workspace. */
const nativeBinary = join(repo, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node")
const provideNative = (root) => {
  const visit = (modules) => {
    if (!existsSync(modules)) return
    for (const entry of readdirSync(modules, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue
      const dir = join(modules, entry.name)
      if (entry.name.startsWith("@")) visit(dir)
      else {
        if (entry.name === "better-sqlite3") cpSync(nativeBinary, join(dir, "build", "Release", "better_sqlite3.node"))
        visit(join(dir, "node_modules"))
      }
    }
  }
  visit(root)
}

const tsc = join(repo, "node_modules", "typescript", "bin", "tsc")
const modelEnv = {
  ...process.env,
  NODE_OPTIONS: "",
  LLM_BASE_URL: `${origin}/v1`,
  LLM_API_KEY: "consumer-test-key",
  LLM_MODEL: "stand-in",
  LLM_MAX_RETRIES: "0",
  NO_COLOR: "1",
  HARNESS_OFFLINE_PACE_MS: "1"
}
const demoEnv = Object.fromEntries(Object.entries(modelEnv).filter(([key]) => !/^(LLM_|DEEPSEEK_)/.test(key)))

if (failures.length === 0) {
  step(`installing the tarballs into ${project}`)
  if (await run("install into a project", "npm", ["install", ...npmArgs], { cwd: project })) {
    provideNative(join(project, "node_modules"))
    step("compiling (nodenext, then bundler) and running the programs")
    const compiled = await run("tsc (nodenext)", process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project })
    await run("tsc (bundler)", process.execPath, [tsc, "-p", "tsconfig.bundler.json"], { cwd: project })
    if (compiled) {
      const first = await run("the README program", process.execPath, ["out/readme.js"], {
        cwd: project,
        env: modelEnv
      })
      if (first && !first.stdout.includes(answer)) fail(`the README program printed ${JSON.stringify(first.stdout)}`)
      const store = await run("the store program", process.execPath, ["out/store.js"], { cwd: project, env: modelEnv })
      if (store && !store.stdout.includes("turns: 2")) fail(`the store program printed ${JSON.stringify(store.stdout)}`)
      await run("internal modules sealed", process.execPath, ["out/sealed.js"], { cwd: project, env: modelEnv })
    }
    const npx = await run("npx @harness/cli demo", "npx", [...npmArgs, "@harness/cli", "demo"], {
      cwd: project,
      env: demoEnv
    })
    if (npx && !npx.stdout.includes("sessions")) fail(`npx @harness/cli demo printed ${JSON.stringify(npx.stdout)}`)
  }

  step("installing the CLI globally")
  const prefix = join(work, "global")
  const cli = packed.find(({ folder }) => folder === "cli").file
  if (await run("npm install -g", "npm", ["install", "-g", "--prefix", prefix, ...npmArgs, cli], { cwd: work })) {
    provideNative(join(prefix, "lib", "node_modules"))
    const harness = join(prefix, "bin", "harness")
    const cwd = mkdtempSync(join(work, "demo-"))
    const version = await run("harness --version", harness, ["--version"], { cwd, env: demoEnv })
    const expected = packed.find(({ folder }) => folder === "cli").manifest.version
    if (version && version.stdout.trim() !== expected) fail(`harness --version printed ${version.stdout.trim()}`)
    const demo = await run("harness demo", harness, ["demo"], { cwd, env: demoEnv })
    if (demo && !existsSync(join(cwd, ".harness", "sessions.db"))) fail("harness demo stored no session")
  }
}

server.close()
if (process.env.HARNESS_KEEP_CONSUMER === "1") step(`kept ${work}`)
else rmSync(work, { recursive: true, force: true })
for (const failure of failures) console.error(`check-install: ${failure}`)
step(failures.length === 0 ? "every package installs and works from outside" : `${failures.length} failure(s)`)
process.exitCode = failures.length === 0 ? 0 : 1
