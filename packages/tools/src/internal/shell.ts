/**
 * The `shell` tool's handler: runs a command in the workspace with a timeout, keeps the tail of its combined
 * output, and makes sure its whole process tree dies with the call.
 *
 * Process tree: `@effect/platform-node`'s executor spawns every child with `detached: true`, so on POSIX the child
 * calls `setsid`: it leads a new session and a new process group, both numbered with its pid. A descendant may
 * leave the group (GNU `timeout … &`, `bash` with `set -m`, `setpgid`) but not the session without `setsid`, and
 * stays in it when it is re-parented after its parent exits. So on Linux the tree is every process of the
 * session, read from `/proc`, plus the descendants (by parent pid) of those — which also catches a `setsid`
 * child while its parent lives. Killing the tree: SIGTERM to the group and to each of those, a grace period
 * (until the leader exited, the output pipes closed and no member is left), then SIGKILL to whatever remains.
 * This happens on timeout, on interruption (cancel), and after a normal exit, to reap background jobs the
 * command left behind. Elsewhere only the process group is signalled (see ADR 0012).
 */
import type { Tool } from "@effect/ai"
import * as Command from "@effect/platform/Command"
import type { Process } from "@effect/platform/CommandExecutor"
import type { PlatformError } from "@effect/platform/Error"
import { FileSystem } from "@effect/platform/FileSystem"
import { Chunk, Deferred, Duration, Effect, Either, Exit, Option, Ref, Stream } from "effect"
import type { Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import type { Limits, Shell } from "../WorkspaceTools.js"
import { errnoCode, fromPlatformError } from "./platformError.js"
import { decodeUtf8, formatBytes } from "./render.js"

// ---------------------------------------------------------------------------------------------------------------
// Output: the last `max` bytes of stdout and stderr, interleaved as they arrive
// ---------------------------------------------------------------------------------------------------------------

interface Tail {
  readonly chunks: Chunk.Chunk<Uint8Array>
  /** Bytes held in `chunks`. */
  readonly kept: number
  /** Bytes already dropped from the front. */
  readonly dropped: number
}

const emptyTail: Tail = { chunks: Chunk.empty(), kept: 0, dropped: 0 }

/** Appends a chunk, dropping whole chunks from the front while the rest still holds `max` bytes. */
const appendTail = (tail: Tail, chunk: Uint8Array, max: number): Tail => {
  let chunks: Chunk.Chunk<Uint8Array> = Chunk.append(tail.chunks, chunk)
  let kept = tail.kept + chunk.length
  let dropped = tail.dropped
  while (true) {
    const head = Chunk.head(chunks)
    if (Option.isNone(head) || kept - head.value.length < max) break
    chunks = Chunk.drop(chunks, 1)
    kept -= head.value.length
    dropped += head.value.length
  }
  return { chunks, kept, dropped }
}

const encoder = new TextEncoder()

/**
 * The output the model is shown, at most `maxChars` characters: the kept tail (`maxBytes` at most), cut further
 * from the front to fit, with one marker when anything was cut. Contract: the marker states the whole cut — the
 * bytes the tail dropped and the characters the character limit cut, together — and what is shown.
 */
const renderOutput = (tail: Tail, maxBytes: number, maxChars: number): string => {
  const all = new Uint8Array(tail.kept)
  let at = 0
  for (const chunk of tail.chunks) {
    all.set(chunk, at)
    at += chunk.length
  }
  const excess = Math.max(0, tail.kept - maxBytes)
  const bytes = all.subarray(excess)
  const dropped = tail.dropped + excess
  // A cut may split a UTF-8 sequence: drop the replacement characters it leaves at the start.
  const raw = dropped > 0 ? decodeUtf8(bytes).replace(/^\uFFFD+/, "") : decodeUtf8(bytes)
  const text = raw.endsWith("\n") ? raw.slice(0, -1) : raw
  const total = tail.dropped + tail.kept
  if (dropped === 0 && text.length <= maxChars) return text === "" ? "(no output)" : text
  const marker = (shown: string) => {
    // The final line break is not printed, but it is not cut either.
    const shownBytes = encoder.encode(shown).length + (text === raw ? 0 : 1)
    return `… [truncated: the first ${formatBytes(Math.max(0, total - shownBytes))} of ${
      formatBytes(total)
    } of output omitted, showing the last ${
      formatBytes(shownBytes)
    }; redirect the output to a file and use read_file or grep to see all of it]\n`
  }
  // The marker's length depends on what it shows: settle it in a few rounds (it only shrinks as `keep` does).
  let keep = Math.min(text.length, maxChars)
  for (let round = 0; round < 4; round++) {
    const next = Math.min(text.length, Math.max(0, maxChars - marker(text.slice(text.length - keep)).length))
    if (next === keep) break
    keep = next
  }
  const shown = text.slice(text.length - keep)
  return marker(shown) + shown
}

// ---------------------------------------------------------------------------------------------------------------
// The process tree
// ---------------------------------------------------------------------------------------------------------------

const signal = (pid: number, name: NodeJS.Signals): void => {
  try {
    process.kill(pid, name)
  } catch {
    // ESRCH: it is gone already.
  }
}

/** One line of `/proc/<pid>/stat`: the fields after the command name (which may hold spaces and parentheses). */
interface ProcStat {
  readonly pid: number
  readonly state: string
  readonly ppid: number
  readonly session: number
}

const parseStat = (pid: number, text: string): ProcStat | undefined => {
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
  const ppid = Number(fields[1])
  const session = Number(fields[3])
  return fields[0] === undefined || Number.isNaN(ppid) || Number.isNaN(session)
    ? undefined
    : { pid, state: fields[0], ppid, session }
}

/** Every process on the machine, from `/proc` (a process that exits during the scan is skipped). */
const processes = (fs: FileSystem): Effect.Effect<ReadonlyArray<ProcStat>> =>
  Effect.gen(function*() {
    const names = yield* Effect.orElseSucceed(fs.readDirectory("/proc"), () => [])
    const stats = yield* Effect.forEach(
      names.filter((name) => /^\d+$/.test(name)),
      (name) =>
        fs.readFileString(`/proc/${name}/stat`).pipe(
          Effect.map((text) => parseStat(Number(name), text)),
          Effect.orElseSucceed(() => undefined)
        ),
      { concurrency: 32 }
    )
    return stats.filter((stat): stat is ProcStat => stat !== undefined)
  })

/**
 * The live (not zombie) processes of the tree started as the session `sid`: the session's members and,
 * transitively, their children. Once the leader is gone (`leaderGone`), a live process numbered `sid` means the
 * number was reused — which the kernel allows only when nothing of the session is left — so the tree is empty.
 */
const treeOf = (fs: FileSystem, sid: number, leaderGone: boolean): Effect.Effect<ReadonlyArray<number>> =>
  Effect.map(processes(fs), (all) => {
    const live = all.filter((stat) => stat.state !== "Z" && stat.state !== "X" && stat.pid !== process.pid)
    if (leaderGone && live.some((stat) => stat.pid === sid)) return []
    const members = new Set(live.filter((stat) => stat.session === sid).map((stat) => stat.pid))
    let grew = members.size > 0
    while (grew) {
      grew = false
      for (const stat of live) {
        if (!members.has(stat.pid) && members.has(stat.ppid)) {
          members.add(stat.pid)
          grew = true
        }
      }
    }
    return [...members]
  })

/** How the tree is found: the `/proc` scan on Linux, the process group elsewhere. */
interface Tree {
  readonly child: Process
  readonly fs: FileSystem
  readonly procfs: boolean
  /** Set once the leader has exited (and been reaped). */
  readonly leaderGone: Ref.Ref<boolean>
}

/** Sends `name` to the whole tree; what is already gone is not an error. Returns the pids signalled by pid. */
const signalTree = (tree: Tree, name: NodeJS.Signals): Effect.Effect<ReadonlyArray<number>> =>
  Effect.gen(function*() {
    if (process.platform === "win32") {
      // No process groups: the executor's `kill` runs `taskkill /T /F` on the tree.
      yield* Effect.ignore(tree.child.kill(name))
      return []
    }
    yield* Effect.sync(() => signal(-tree.child.pid, name))
    if (!tree.procfs) return []
    const pids = yield* treeOf(tree.fs, tree.child.pid, yield* Ref.get(tree.leaderGone))
    yield* Effect.sync(() => pids.forEach((pid) => signal(pid, name)))
    return pids
  })

/** Polls until nothing of the tree is left alive. */
const treeGone = (tree: Tree): Effect.Effect<void> =>
  tree.procfs
    ? Effect.gen(function*() {
      while ((yield* treeOf(tree.fs, tree.child.pid, yield* Ref.get(tree.leaderGone))).length > 0) {
        yield* Effect.sleep(Duration.millis(25))
      }
    })
    : Effect.void

/**
 * Kills the child's process tree: SIGTERM to all of it, then — once the leader has exited, the output pipes are
 * closed (nobody in the tree holds them) and no member is left, or after `grace` — SIGKILL to whatever is left.
 */
const killTree = (tree: Tree, drained: Deferred.Deferred<void>, grace: Duration.Duration): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* signalTree(tree, "SIGTERM")
    // Interruptible even inside a finalizer: otherwise the timeout could not cut the wait short.
    yield* Effect.all([Effect.ignore(tree.child.exitCode), Deferred.await(drained), treeGone(tree)], {
      discard: true
    }).pipe(
      Effect.interruptible,
      Effect.timeoutOption(grace)
    )
    yield* signalTree(tree, "SIGKILL")
  })

interface Finished {
  readonly exit: Either.Either<number, PlatformError>
  /** False when the output pipes stayed open after the tree was killed (a process escaped the group). */
  readonly drained: boolean
}

/**
 * Runs `command` to completion, streaming its output into `output`.
 *
 * Contract: when it returns, the leader has exited and the rest of its process group was killed. When it is
 * interrupted (timeout, cancel), the finalizer kills the tree before the executor's own cleanup runs.
 */
const runTree = (
  command: Command.Command,
  output: Ref.Ref<Tail>,
  maxBytes: number,
  grace: Duration.Duration
) =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem
    const procfs = process.platform === "linux" &&
      (yield* Effect.orElseSucceed(fs.exists("/proc/self/stat"), () => false))
    // Nothing asynchronous between the start and the subscription to the output: a quick command's output
    // could be over before the reader is attached.
    const child = yield* Command.start(command)
    const tree: Tree = { child, fs, procfs, leaderGone: yield* Ref.make(false) }
    const drained = yield* Deferred.make<void>()
    yield* Stream.merge(child.stdout, child.stderr).pipe(
      Stream.runForEach((chunk) => Ref.update(output, (tail) => appendTail(tail, chunk, maxBytes))),
      Effect.ignore,
      Effect.ensuring(Deferred.succeed(drained, undefined)),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer((exit) => Exit.isSuccess(exit) ? Effect.void : killTree(tree, drained, grace))
    const exit = yield* Effect.either(child.exitCode)
    yield* Ref.set(tree.leaderGone, true)
    // Background jobs the command left behind (in the process group or not) die with the call.
    yield* killTree(tree, drained, grace)
    const done = yield* Deferred.await(drained).pipe(Effect.timeoutOption(grace))
    return { exit, drained: Option.isSome(done) } satisfies Finished
  }))

// ---------------------------------------------------------------------------------------------------------------
// The handler
// ---------------------------------------------------------------------------------------------------------------

const describeExit = (exit: Either.Either<number, PlatformError>): string => {
  if (Either.isRight(exit)) return `[exit code: ${exit.right}]`
  const signal = /signal: (\w+)/.exec(exit.left.message)?.[1]
  return signal !== undefined ? `[terminated by signal ${signal}]` : `[exit status unknown: ${exit.left.message}]`
}

const spawnError = (error: PlatformError, program: string, cwd: string): WorkspaceError => {
  if (errnoCode(error) === "ENOENT" || (error._tag === "SystemError" && error.reason === "NotFound")) {
    return new WorkspaceError({
      reason: "NotFound",
      message: `Cannot run \`${program}\`: no such program. Check its name and that it is installed on PATH, ` +
        "or use `command` to run a shell line."
    })
  }
  return fromPlatformError(error, cwd, `run \`${program}\` in`)
}

const formatSeconds = (duration: Duration.Duration): string => `${Duration.toMillis(duration) / 1000}s`

export const run = Effect.fn("WorkspaceTools.shell")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof Shell>
) {
  const fs = yield* FileSystem
  if ((params.command === undefined) === (params.argv === undefined)) {
    return yield* new WorkspaceError({
      reason: "InvalidArgument",
      message: "Give exactly one of `command` (a shell line, run with `sh -c`) or `argv` (a program and its " +
        "arguments, run without a shell)."
    })
  }
  if (params.command !== undefined && params.command.trim() === "") {
    return yield* new WorkspaceError({ reason: "InvalidArgument", message: "`command` is empty." })
  }
  const cwd = yield* workspace.resolve(params.cwd ?? ".")
  const info = yield* fs.stat(cwd.absolute).pipe(
    Effect.mapError((error) => fromPlatformError(error, cwd.input, "run a command in"))
  )
  if (info.type !== "Directory") {
    return yield* new WorkspaceError({
      reason: "NotADirectory",
      path: cwd.input,
      message: `Cannot run a command in \`${cwd.relative}\`: it is not a directory.`
    })
  }
  const maxTimeout = Duration.decode(limits.maxShellTimeout)
  const timeout = params.timeoutSeconds === undefined
    ? Duration.min(Duration.decode(limits.shellTimeout), maxTimeout)
    : Duration.min(Duration.millis(params.timeoutSeconds * 1000), maxTimeout)
  const grace = Duration.decode(limits.shellKillGrace)
  const argv: readonly [string, ...Array<string>] = params.argv ?? ["sh", "-c", params.command ?? ""]
  const program = argv[0]
  const command = Command.make(program, ...argv.slice(1)).pipe(
    Command.workingDirectory(cwd.absolute),
    Command.stdin(Stream.empty)
  )
  const output = yield* Ref.make(emptyTail)
  const finished = yield* runTree(command, output, limits.maxShellOutputBytes, grace).pipe(
    Effect.mapError((error) => spawnError(error, program, cwd.input)),
    Effect.timeoutOption(timeout)
  )
  const tail = yield* Ref.get(output)
  // One cut, one marker: the byte limit bounds what is kept, the character limit what the model is shown.
  const shown = (room: number) => renderOutput(tail, limits.maxShellOutputBytes, Math.max(0, room))
  if (Option.isNone(finished)) {
    const head = `The command timed out after ${formatSeconds(timeout)} and was killed, with every process it ` +
      `started. Raise timeoutSeconds (at most ${formatSeconds(maxTimeout)}) if it needs longer. ` +
      "Output before the timeout:\n"
    return yield* new WorkspaceError({
      reason: "Timeout",
      message: head + shown(limits.maxOutputChars - head.length)
    })
  }
  const incomplete = finished.value.drained
    ? ""
    : "\n[output may be incomplete: a process that left the command's session still holds it open]"
  const end = `${incomplete}\n${describeExit(finished.value.exit)}`
  return `${shown(limits.maxOutputChars - end.length)}${end}`
})
