/**
 * The crash-test parent's side of a run: starts the child as a real process, reads its NDJSON report as it comes,
 * and sends `SIGKILL` the moment the child announces its kill point.
 *
 * The child is the TypeScript program `src/bin.ts`, run by Node either through `tsx` or as one ES module bundled
 * from the same sources by esbuild (the default: a child then starts in about a sixth of the CPU time, which is
 * what lets `npm test` afford fifty kills).
 *
 * @since 0.0.0
 */
import { Command, type CommandExecutor } from "@effect/platform"
import { Ids } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { ChildBundle } from "@harness/testkit"
import { Effect, Either, Fiber, type Scope, Stream } from "effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { ChildConfig, Line } from "./Protocol.js"
import { decodeLine } from "./Protocol.js"
import * as Stores from "./Stores.js"

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bin = path.join(packageDir, "src", "bin.ts")

/**
 * How the child is started: the Node arguments before its configuration.
 *
 * @since 0.0.0
 * @category models
 */
export interface Runner {
  readonly name: "tsx" | "bundle"
  readonly args: ReadonlyArray<string>
}

/**
 * Runs `src/bin.ts` through `tsx` (every module transpiled when the child loads it).
 *
 * @since 0.0.0
 * @category runners
 */
export const tsx: Runner = { name: "tsx", args: ["--import", "tsx", bin] }

/**
 * Bundles the child program `entry` and everything it imports into one ES module (`ChildBundle.bundle`, under the
 * workspace's `node_modules/.cache`, so Node resolves the native `better-sqlite3` from there); deleted with the scope.
 *
 * @since 0.0.0
 * @category runners
 */
export const bundleOf = (entry: string): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.map(
    ChildBundle.bundle(entry, path.join(packageDir, "..", "..", "node_modules", ".cache")),
    (outfile) => ({ name: "bundle", args: [outfile] })
  )

const bundle = bundleOf(bin)

/**
 * The runner `HARNESS_CRASH_RUNNER` names (`tsx` or `bundle`, the default).
 *
 * @since 0.0.0
 * @category runners
 */
export const fromEnv: Effect.Effect<Runner, never, Scope.Scope> = process.env.HARNESS_CRASH_RUNNER === "tsx"
  ? Effect.succeed(tsx)
  : bundle

/**
 * What one child run gave: its report lines in order, whether it was killed (and where), and what it wrote to
 * stderr (for diagnostics).
 *
 * @since 0.0.0
 * @category models
 */
export interface RunResult {
  readonly config: ChildConfig
  readonly lines: ReadonlyArray<Line>
  /** The kill point the child announced (then it was killed with `SIGKILL`), if any. */
  readonly killedAt: Extract<Line, { readonly _tag: "kill-point" }> | undefined
  /** How the process ended: `SIGKILL`, or its exit code. */
  readonly exit: string
  /**
   * What a second writer got at the kill point, while the child still held the session (ADR 0044): `busy` naming
   * the child is right; `none` when the session was not created yet. Absent when the child was not killed.
   */
  readonly intruder: Intruder | undefined
  /** The child's process id. */
  readonly pid: number
  /** Lines of stdout that were not report lines (a bug in the child). */
  readonly garbage: ReadonlyArray<string>
  readonly stderr: string
}

/**
 * A second process on the child's session at a kill point, while the child holds it: a writer's `open` (which
 * must be refused with `busy` naming the child, and change nothing) and a reader's (which must read).
 *
 * @since 0.0.0
 * @category models
 */
interface Intruder {
  /** `busy` with the holder's pid, `none` (no such session yet), or what else the writer's `open` did. */
  readonly writer:
    | { readonly _tag: "busy"; readonly pid: number | undefined }
    | { readonly _tag: "none" }
    | { readonly _tag: "other"; readonly what: string }
  /** The reader's error, if its read-only `open` failed (a session not created yet is no error). */
  readonly readerError: string | undefined
}

const intrude = (config: ChildConfig): Effect.Effect<Intruder> =>
  Effect.gen(function*() {
    const id = Ids.SessionId.make(config.sessionId)
    const writer = yield* Effect.either(SessionLog.open(id))
    const reader = yield* Effect.either(Effect.flatMap(SessionLog.open(id, { readOnly: true }), (log) => log.events))
    const notStored = (message: string) => /NotFound/.test(message)
    return {
      writer: Either.isRight(writer)
        ? { _tag: "other", what: "the second writer opened the session the child held" }
        : writer.left.reason === "busy"
        ? { _tag: "busy", pid: writer.left.holder?.pid }
        : notStored(writer.left.message)
        ? { _tag: "none" }
        : { _tag: "other", what: writer.left.message },
      readerError: Either.isLeft(reader) && !notStored(reader.left.message) ? reader.left.message : undefined
    } satisfies Intruder
  }).pipe(
    Effect.provide(Stores.layer(config.backend, config.location)),
    Effect.catchAll((error) =>
      Effect.succeed<Intruder>({ writer: { _tag: "other", what: error.message }, readerError: undefined })
    )
  )

/**
 * Runs `node <args> <config as JSON>` in the package's directory to its end: `onLine` gets each line of its standard
 * output as it comes, with the process (to signal it). How it ended: `SIGKILL`, `exit <code>`, or what else ended it.
 *
 * Contract: the child is always reaped (killed if this effect is interrupted); its standard error is collected.
 *
 * @since 0.0.0
 * @category running
 */
export const runProcess = (
  args: ReadonlyArray<string>,
  config: unknown,
  onLine: (line: string, child: CommandExecutor.Process) => Effect.Effect<void>
): Effect.Effect<
  { readonly pid: number; readonly exit: string; readonly stderr: string },
  never,
  CommandExecutor.CommandExecutor
> =>
  Effect.scoped(Effect.gen(function*() {
    const child = yield* Command.start(
      Command.make(process.execPath, ...args, JSON.stringify(config)).pipe(Command.workingDirectory(packageDir))
    )
    const stderr = yield* child.stderr.pipe(
      Stream.decodeText(),
      Stream.runFold("", (all, text) => all + text),
      Effect.fork
    )
    yield* child.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) => onLine(line, child)),
      Effect.ignore
    )
    const exit = yield* Effect.either(child.exitCode)
    return {
      pid: child.pid,
      exit: Either.isRight(exit)
        ? `exit ${exit.right}`
        : /SIGKILL/.test(exit.left.message)
        ? "SIGKILL"
        : exit.left.message,
      stderr: yield* Effect.orElseSucceed(Fiber.join(stderr), () => "")
    }
  })).pipe(Effect.orDie)

/**
 * Runs one child to its end or to its kill point.
 *
 * Contract: the child is always reaped (the scope kills it if this effect is interrupted); every complete stdout
 * line the child wrote before it died is in `lines` or `garbage`; `SIGKILL` is sent only after the `kill-point`
 * line was read, and nothing is read after it (the child is blocked there).
 *
 * @since 0.0.0
 * @category running
 */
export const run = (
  runner: Runner,
  config: ChildConfig
): Effect.Effect<RunResult, never, CommandExecutor.CommandExecutor> =>
  Effect.suspend(() => {
    const lines: Array<Line> = []
    const garbage: Array<string> = []
    let killedAt: RunResult["killedAt"] = undefined
    let intruder: Intruder | undefined = undefined
    return Effect.map(
      runProcess(runner.args, config, (text, child) => {
        const decoded = decodeLine(text)
        if (Either.isLeft(decoded)) {
          garbage.push(text)
          return Effect.void
        }
        lines.push(decoded.right)
        if (decoded.right._tag !== "kill-point") return Effect.void
        killedAt = decoded.right
        // The child is frozen at its kill point, holding the session: a second process tries it, then the kill.
        return Effect.zipRight(
          Effect.map(intrude(config), (found) => {
            intruder = found
          }),
          Effect.ignore(child.kill("SIGKILL"))
        )
      }),
      (ended) => ({ config, lines, killedAt, intruder, garbage, ...ended })
    )
  })
