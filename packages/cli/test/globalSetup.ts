/**
 * Before the CLI's tests: compile the executable (as `npm install` does), so the child processes run the bundle a
 * user runs — and start in about a second instead of several under the TypeScript loader.
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))], {
    stdio: "inherit"
  })
}
