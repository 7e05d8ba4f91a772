/**
 * Reading and writing files through the confined walk. A read opens the file with `O_NOFOLLOW` from the held
 * descriptor of its directory and checks that what it opened is what the walk saw there (same device and
 * inode), a regular file, not hard-linked from elsewhere, within the size limit. A write creates its temporary
 * file with `O_EXCL | O_NOFOLLOW` in the held directory and renames it over the target in that same directory,
 * so neither can land outside the root even while another process swaps directories for links.
 */
import { Effect, Random } from "effect"
import type * as NFS from "node:fs"
import * as NodeFs from "node:fs"
import type { FileHandle } from "node:fs/promises"
import * as FSP from "node:fs/promises"
import type { Resolved } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import { formatBytes } from "./render.js"
import type { Root } from "./walk.js"
import { attempt, changed, entryPath, walk } from "./walk.js"

const C = NodeFs.constants

/** What kind of entry `stats` describes, for messages. */
const describeStats = (stats: NFS.Stats): string =>
  stats.isFile()
    ? "a file"
    : stats.isDirectory()
    ? "a directory"
    : stats.isSymbolicLink()
    ? "a symbolic link"
    : stats.isBlockDevice() || stats.isCharacterDevice()
    ? "a device"
    : stats.isFIFO()
    ? "a named pipe"
    : stats.isSocket()
    ? "a socket"
    : "not a regular file"

const notFound = (resolved: Resolved, action: string) =>
  new WorkspaceError({
    reason: "NotFound",
    path: resolved.input,
    message: `Cannot ${action} \`${resolved.relative}\`: it does not exist. Use list_dir or find_files to see ` +
      "what is there."
  })

const directory = (resolved: Resolved, action: string) =>
  new WorkspaceError({
    reason: "NotAFile",
    path: resolved.input,
    message: `Cannot ${action} \`${resolved.relative}\`: it is a directory. Use list_dir or find_files.`
  })

const tooLarge = (resolved: Resolved, action: string, size: number, maxBytes: number) =>
  new WorkspaceError({
    reason: "TooLarge",
    path: resolved.input,
    message: `Cannot ${action} \`${resolved.relative}\`: it is ${formatBytes(size)}, over the limit of ` +
      `${formatBytes(maxBytes)}. Use grep to find the lines you need, or shell (e.g. \`sed -n '1,100p'\`).`
  })

/** Requires a regular file of at most `maxBytes`, linked only once. */
const checkFile = (stats: NFS.Stats, resolved: Resolved, action: string, maxBytes: number) => {
  if (stats.isDirectory()) return directory(resolved, action)
  if (!stats.isFile()) {
    return new WorkspaceError({
      reason: "NotAFile",
      path: resolved.input,
      message: `Cannot ${action} \`${resolved.relative}\`: it is ${describeStats(stats)}, not a regular file.`
    })
  }
  if (stats.size > maxBytes) return tooLarge(resolved, action, stats.size, maxBytes)
  if (stats.nlink > 1) {
    return new WorkspaceError({
      reason: "HardLink",
      path: resolved.input,
      message: `Cannot ${action} \`${resolved.relative}\`: it has ${stats.nlink} hard links, so it may be a file ` +
        "from outside the workspace linked in. Use shell (e.g. `cat`) if you need it."
    })
  }
  return undefined
}

const sameFile = (a: NFS.Stats, b: NFS.Stats): boolean => a.dev === b.dev && a.ino === b.ino

const close = (handle: FileHandle) => Effect.promise(() => handle.close().catch(() => undefined))

/** A file read through the walk. */
export interface Read {
  readonly resolved: Resolved
  readonly bytes: Uint8Array
  readonly stats: NFS.Stats
}

/**
 * Reads the regular file at `input`.
 *
 * Contract: fails with `NotFound`, `NotAFile` (a directory, FIFO, device...; a FIFO is never opened for
 * reading), `TooLarge` (over `maxBytes`, checked on the open descriptor), `HardLink` (more than one link),
 * `Changed` (what was opened is not what the walk found: a concurrent swap), or a walk failure.
 */
export const readFile = (
  root: Root,
  display: (absolute: string) => string,
  input: string,
  options: { readonly maxBytes: number; readonly action: string }
): Effect.Effect<Read, WorkspaceError> =>
  Effect.scoped(Effect.gen(function*() {
    const { action, maxBytes } = options
    const located = yield* walk(root, input, { create: false })
    const resolved: Resolved = { input, absolute: located.absolute, relative: display(located.absolute) }
    const final = located.final
    if (located.missing.length > 0 || (final !== undefined && final.stats === undefined)) {
      return yield* notFound(resolved, action)
    }
    if (final === undefined || final.stats === undefined) return yield* directory(resolved, action)
    const seen = checkFile(final.stats, resolved, action, maxBytes)
    if (seen !== undefined) return yield* seen
    const dir = located.dirs[located.dirs.length - 1]
    if (dir === undefined) return yield* Effect.dieMessage("a walk holds at least the root")
    const handle = yield* Effect.acquireRelease(
      attempt(
        () => FSP.open(entryPath(root, dir, final.name), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_NOCTTY),
        input,
        action
      ).pipe(
        Effect.catchTag("WorkspaceError", (error) =>
          error.reason === "SymlinkLoop" ? Effect.fail(changed(input, "opened")) : Effect.fail(error))
      ),
      close
    )
    const stats = yield* attempt(
      () =>
        handle.stat(),
      input,
      action
    )
    if (!sameFile(stats, final.stats)) return yield* changed(input, "opened")
    const opened = checkFile(stats, resolved, action, maxBytes)
    if (opened !== undefined) return yield* opened
    const buffer = yield* attempt(() => handle.readFile(), input, action)
    // The file may have grown since the `fstat`.
    if (buffer.length > maxBytes) return yield* tooLarge(resolved, action, buffer.length, maxBytes)
    return { resolved, bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length), stats } satisfies Read
  }))

/** A file written through the walk. */
export interface Written {
  readonly resolved: Resolved
  /** Whether a file was there before (its content replaced, its permission bits kept). */
  readonly replaced: boolean
}

/**
 * Writes `data` to `input` atomically, creating missing parent directories.
 *
 * Contract: the content goes to a new temporary file (`O_CREAT | O_EXCL | O_NOFOLLOW`, a short fixed-length
 * name, so any target name the file system allows works) in the target's held directory, then is renamed over
 * the target in that same directory; the file is old or new, never half. An existing file's permission bits are
 * kept. Uninterruptible once the temporary file exists. Fails with `NotAFile` when the target is a directory or
 * not a regular file, `NotADirectory` when a parent is a file, or a walk failure.
 */
export const writeFile = (
  root: Root,
  display: (absolute: string) => string,
  input: string,
  data: Uint8Array
): Effect.Effect<Written, WorkspaceError> =>
  Effect.scoped(Effect.gen(function*() {
    const located = yield* walk(root, input, { create: true })
    const resolved: Resolved = { input, absolute: located.absolute, relative: display(located.absolute) }
    const final = located.final
    if (final === undefined) return yield* directory(resolved, "write")
    if (final.stats !== undefined && !final.stats.isFile()) {
      return yield* new WorkspaceError({
        reason: "NotAFile",
        path: input,
        message: `Cannot write \`${resolved.relative}\`: it is ${describeStats(final.stats)}.`
      })
    }
    const dir = located.dirs[located.dirs.length - 1]
    if (dir === undefined) return yield* Effect.dieMessage("a walk holds at least the root")
    const suffix = (yield* Random.nextIntBetween(0, 2 ** 31 - 1)).toString(36)
    const temporary = entryPath(root, dir, `.harness-${suffix}.tmp`)
    const mode = final.stats === undefined ? undefined : final.stats.mode & 0o7777
    yield* Effect.acquireUseRelease(
      attempt(() => FSP.open(temporary, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o666), input, "write"),
      (handle) =>
        attempt(() => handle.writeFile(data), input, "write").pipe(
          Effect.zipRight(mode === undefined ? Effect.void : attempt(() => handle.chmod(mode), input, "write"))
        ),
      close
    ).pipe(
      Effect.zipRight(attempt(() => FSP.rename(temporary, entryPath(root, dir, final.name)), input, "write")),
      Effect.tapError(() => Effect.promise(() => FSP.unlink(temporary).catch(() => undefined))),
      Effect.uninterruptible
    )
    return { resolved, replaced: final.stats !== undefined } satisfies Written
  }))
