// The published packages and how each becomes the tarball a user installs (ADR 0045). A package is packed from a
// staged copy: the files its `files` field ships (npm's own list, `npm pack --dry-run`) and a manifest without what
// only the workspace uses — the `@harness/source` export condition (the sources, which are not shipped), the
// `./test/*` exports, `devDependencies`, `scripts`. `node scripts/packages.mjs pack <dir>` writes the tarballs;
// `node scripts/packages.mjs publish` publishes each package whose version is not on the registry yet.
import { execFileSync } from "node:child_process"
import console from "node:console"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"

/** The repository's root. */
export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..")

/** The published packages (folder names under packages/), in dependency order. */
const products = [
  "domain",
  "session",
  "agent",
  "testkit",
  "tools",
  "mcp",
  "llm",
  "goal",
  "subagents",
  "store-sql",
  "store-sqlite",
  "store-jsonl",
  "store-postgres",
  "server",
  "cluster",
  "cli"
]

/** The export condition under which the workspace resolves a package to its TypeScript sources. */
const sourceCondition = "@harness/source"

const npm = (args, options = {}) => execFileSync("npm", args, { encoding: "utf8", ...options })

/** A package's manifest as published: the workspace-only fields and conditions taken out. */
const publishedManifest = (manifest) => {
  const { devDependencies: _dev, homepage: _homepage, scripts: _scripts, ...rest } = manifest
  const exports = {}
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (target !== null && typeof target === "object") {
      const { [sourceCondition]: _source, ...conditions } = target
      // A subpath only the workspace resolves (test helpers) is sealed, as `./internal/*` is.
      exports[subpath] = Object.keys(conditions).length === 0 ? null : conditions
    } else exports[subpath] = target
  }
  return { ...rest, exports }
}

/** The files npm ships for the package in `dir` (its `files` field, plus package.json, README and LICENSE). */
const shippedFiles = (dir) =>
  JSON.parse(npm(["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir }))[0].files.map((file) => file.path)

/**
 * Every built file must come from a source that still exists: tsc -b never deletes the output of a deleted module,
 * and a stale module would be published.
 */
const checkNoStaleOutput = (dir, files) => {
  for (const file of files) {
    const match = /^dist\/(.+?)(?:\.d\.ts|\.js)(?:\.map)?$/.exec(file)
    if (match === null || match[1] === "harness" || file.startsWith("dist/chunks/")) continue
    if (!existsSync(join(dir, "src", `${match[1]}.ts`))) {
      throw new Error(`${dir}/${file} has no source (src/${match[1]}.ts): delete ${dir}/dist and run npm run build`)
    }
  }
}

/** Copies the package `name` as it is published into `stage` (a new folder) and returns the manifest. */
const stagePackage = (name, stage) => {
  const dir = join(repo, "packages", name)
  const files = shippedFiles(dir)
  checkNoStaleOutput(dir, files)
  mkdirSync(stage, { recursive: true })
  for (const file of files) {
    if (file === "package.json") continue
    mkdirSync(dirname(join(stage, file)), { recursive: true })
    cpSync(join(dir, file), join(stage, file))
  }
  const manifest = publishedManifest(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")))
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)
  return manifest
}

/** Packs every product package into `out` and returns `{ name, folder, file, manifest }` for each. */
export const packAll = (out) => {
  mkdirSync(out, { recursive: true })
  const staging = mkdtempSync(join(tmpdir(), "harness-stage-"))
  try {
    return products.map((folder) => {
      const stage = join(staging, folder)
      const manifest = stagePackage(folder, stage)
      const [packed] = JSON.parse(npm(["pack", stage, "--json", "--ignore-scripts", "--pack-destination", out]))
      return { name: manifest.name, folder, file: join(out, packed.filename), manifest }
    })
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

const main = (command, target) => {
  if (command === "pack" && target !== undefined) {
    for (const { file } of packAll(resolve(target))) console.log(file)
  } else if (command === "publish") {
    const out = mkdtempSync(join(tmpdir(), "harness-publish-"))
    for (const { file, manifest } of packAll(out)) {
      const published = (() => {
        try {
          return npm(["view", `${manifest.name}@${manifest.version}`, "version"], { stdio: "pipe" }).trim() !== ""
        } catch {
          return false
        }
      })()
      if (published) console.log(`${manifest.name}@${manifest.version} is already published`)
      else npm(["publish", file, "--access", "public"], { stdio: "inherit" })
    }
    rmSync(out, { recursive: true, force: true })
  } else {
    console.error("usage: node scripts/packages.mjs pack <dir> | publish")
    process.exitCode = 2
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv[2], process.argv[3])
