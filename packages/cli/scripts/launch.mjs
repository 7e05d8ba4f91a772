// How `harness` starts in the repository (bin/harness.mjs comes here when the sources sit beside it): the compiled
// bundle (dist/harness.mjs, built by `npm install` through the root `prepare` script) while it is at least as new as
// every workspace source it was built from; otherwise the TypeScript sources through tsx's loader, with the workspace
// packages resolved to their sources (the `@harness/source` export condition, ADR 0045). HARNESS_FROM_SOURCE=1
// forces the sources. Not published: an installed CLI runs its bundle.
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
  // Registered last, so it runs first: every resolution asks for the workspace packages' sources.
  module.register(
    "data:text/javascript,export const resolve = (specifier, context, next) => " +
      "next(specifier, { ...context, conditions: [...context.conditions, \"@harness/source\"] })"
  )
  await import("../src/bin.ts")
}
