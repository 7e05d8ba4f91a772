#!/usr/bin/env node
// The `harness` executable. It runs the compiled bundle (dist/harness.mjs, built by `npm install` through the
// root `prepare` script) while it is at least as new as every workspace source it was built from; otherwise it
// runs the TypeScript sources through tsx's loader. HARNESS_FROM_SOURCE=1 forces the sources.
import { readFileSync, statSync } from "node:fs"
import module from "node:module"
import { dirname, join, resolve } from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const repo = resolve(root, "../..")

const bundleIsFresh = () => {
  if (process.env.HARNESS_FROM_SOURCE === "1") return false
  try {
    const built = statSync(join(root, "dist", "harness.mjs")).mtimeMs
    const inputs = JSON.parse(readFileSync(join(root, "dist", "inputs.json"), "utf8"))
    return inputs.every((input) => statSync(join(repo, input)).mtimeMs <= built)
  } catch {
    return false
  }
}

if (bundleIsFresh()) {
  module.enableCompileCache?.()
  await import("../dist/harness.mjs")
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/bin.ts")
}
