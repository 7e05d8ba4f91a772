/**
 * What the crash tests share: a child process running one of `./fixtures/*.ts`, killed where the test says, and a
 * temporary directory for its files.
 */
import { Effect } from "effect"
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../..", import.meta.url))

/** How a child ended: what it printed on standard output, its exit code, the signal that killed it. */
interface ChildRun {
  readonly out: string
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/**
 * Runs `./fixtures/<script>` with `args` (from the repository root, on the sources, through tsx; its standard error
 * goes to the test's). Contract: once `until` holds for what it printed so far, the child is killed with SIGKILL;
 * without `until` it runs to its own exit. Interrupting the effect kills the child.
 */
export const runChild = (script: string, args: ReadonlyArray<string>, until?: (out: string) => boolean) =>
  Effect.async<ChildRun>((resume) => {
    const proc = childProcess.spawn(
      process.execPath,
      [
        "--conditions=@harness/source",
        "--import",
        "tsx",
        fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url)),
        ...args
      ],
      { cwd: root, stdio: ["ignore", "pipe", "inherit"] }
    )
    let out = ""
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (until !== undefined && until(out) && proc.exitCode === null) proc.kill("SIGKILL")
    })
    proc.on("exit", (code, signal) => resume(Effect.succeed({ out, code, signal })))
    return Effect.sync(() => proc.kill("SIGKILL"))
  })

/** A fresh temporary directory named `harness-<name>-…`, removed with the scope. */
export const tempDir = (name: string) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), `harness-${name}-`))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
