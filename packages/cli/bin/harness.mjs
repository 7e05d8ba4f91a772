#!/usr/bin/env node
// The `harness` executable: the compiled bundle, dist/harness.mjs (`npm run build` makes it; an installed package
// ships it). In the repository, where the sources sit beside it, scripts/launch.mjs chooses between the bundle and the
// sources.
import { existsSync } from "node:fs"
import module from "node:module"
import { URL } from "node:url"

if (existsSync(new URL("../src/bin.ts", import.meta.url))) {
  await import("../scripts/launch.mjs")
} else {
  module.enableCompileCache?.()
  await import("../dist/harness.mjs")
}
