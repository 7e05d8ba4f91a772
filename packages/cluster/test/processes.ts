/**
 * Cluster nodes as real child processes (`fixtures/node.ts`): bundled once with esbuild into one ES module (a child
 * then starts in about a second of CPU instead of several under `tsx`), started with a JSON configuration, read line
 * by line, and signalled (`SIGKILL`, `SIGSTOP`, `SIGCONT`, `SIGTERM`). Every child is killed when its scope closes.
 */
import { ChildBundle } from "@harness/testkit"
import { Effect, Schedule, type Scope } from "effect"
import * as childProcess from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { NodeConfig } from "./fixtures/node.js"

const packageDir = fileURLToPath(new URL("..", import.meta.url))
const entry = path.join(packageDir, "test", "fixtures", "node.ts")

/** The bundled node program (its path), deleted with the scope. */
export const bundle: Effect.Effect<string, never, Scope.Scope> = ChildBundle.bundle(
  entry,
  path.join(packageDir, "..", "..", "node_modules", ".cache")
)

/** A line a node reported. */
export type Line = { readonly _tag: string; readonly pid: number } & Record<string, unknown>

/** A running node. */
export interface Node {
  readonly pid: number
  /** Every line reported so far, in order. */
  readonly lines: () => ReadonlyArray<Line>
  /** What it wrote to stderr so far. */
  readonly stderr: () => string
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** The process's end: its signal or exit code. */
  readonly exited: Effect.Effect<string>
  /** The first line (after `from` lines) that satisfies `f`, polled until `deadline`. */
  readonly waitFor: (
    what: string,
    f: (line: Line) => boolean,
    options?: { readonly from?: number; readonly deadline?: number }
  ) => Effect.Effect<Line, Error>
}

/** Starts a node; it is killed (`SIGKILL`, after `SIGCONT`) when the scope closes. */
export const start = (program: string, config: NodeConfig): Effect.Effect<Node, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const proc = childProcess.spawn(process.execPath, [program, JSON.stringify(config)], {
        cwd: packageDir,
        stdio: ["ignore", "pipe", "pipe"]
      })
      const lines: Array<Line> = []
      let buffer = ""
      let stderr = ""
      let end: string | undefined
      proc.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString()
        const parts = buffer.split("\n")
        buffer = parts.pop()!
        for (const part of parts) {
          try {
            lines.push(JSON.parse(part) as Line)
          } catch {
            lines.push({ _tag: "garbage", pid: proc.pid ?? 0, text: part })
          }
        }
      })
      proc.stderr.on("data", (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-20_000)
      })
      const exited = new Promise<string>((resolve) =>
        proc.on("close", (code, signal) => {
          end = signal ?? `exit ${code}`
          resolve(end)
        })
      )
      const tail = () =>
        `its last lines:\n${lines.slice(-20).map((l) => JSON.stringify(l)).join("\n")}\n${stderr.slice(-3000)}`
      const node: Node = {
        pid: proc.pid ?? 0,
        lines: () => lines,
        stderr: () => stderr,
        signal: (signal) => Effect.sync(() => end === undefined && proc.kill(signal)),
        exited: Effect.promise(() => exited),
        waitFor: (what, f, options) =>
          Effect.suspend(() => {
            const found = lines.slice(options?.from ?? 0).find(f)
            if (found !== undefined) return Effect.succeed(found)
            return end === undefined
              ? Effect.fail(new Error(`not yet: ${what}`))
              : Effect.fail(new Error(`node ${proc.pid} ended (${end}) before ${what}; ${tail()}`))
          }).pipe(
            // Polled: the deadline only bounds a failure.
            Effect.retry({
              schedule: Schedule.spaced("50 millis"),
              while: (e) => e.message.startsWith("not yet")
            }),
            Effect.timeoutFail({
              duration: options?.deadline ?? 30_000,
              onTimeout: () => new Error(`node ${proc.pid}: no ${what} in time; ${tail()}`)
            })
          )
      }
      return node
    }),
    (node) => Effect.zipRight(node.signal("SIGCONT"), node.signal("SIGKILL"))
  )
