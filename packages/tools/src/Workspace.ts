/**
 * The workspace: one root directory that every built-in tool is confined to. Paths from the model are resolved
 * against it the way the kernel resolves them (component by component, `..` from the directory actually reached,
 * symbolic links expanded where met) and refused, with a `WorkspaceError` saying why, when they would leave it.
 * Files are read and written through descriptors held on the directories walked, so a concurrent process that
 * swaps a directory for a symbolic link cannot redirect a read or a write outside the root (on Linux; ADR 0012).
 *
 * @since 0.0.0
 */
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as Access from "./internal/access.js"
import { fromPlatformError } from "./internal/platformError.js"
import { walk } from "./internal/walk.js"
import type { Root } from "./internal/walk.js"
import { WorkspaceError } from "./WorkspaceError.js"

/**
 * A path resolved inside the workspace.
 *
 * @since 0.0.0
 * @category models
 */
export interface Resolved {
  /** The path as the caller gave it. */
  readonly input: string
  /** The real absolute path: every existing symbolic link along it resolved. */
  readonly absolute: string
  /** The path as the model should see it: relative to the root, `.` for the root itself. */
  readonly relative: string
}

/**
 * A regular file read inside the workspace.
 *
 * @public
 * @since 0.0.0
 * @category models
 */
export interface FileRead {
  readonly resolved: Resolved
  readonly bytes: Uint8Array
  /** The file's permission bits. */
  readonly mode: number
}

/**
 * A workspace root and the resolution of paths against it.
 *
 * @since 0.0.0
 * @category models
 */
export interface Workspace {
  /** The root's real absolute path. */
  readonly root: string
  /**
   * Resolves a path given by the model.
   *
   * Contract: a relative path is taken from the root; an absolute path must lie under the root (as configured or
   * as its real path). The path is walked as the kernel walks it: `..` goes to the parent of the directory
   * actually reached (so `link/..` is the link target's parent, as `cd` and `cat` see it), a symbolic link is
   * expanded where it is met (a dangling one too: creating through it creates its target), and nothing outside
   * the root is ever entered. Fails with `PathEscape` (saying whether `..`, an absolute path or a symbolic link
   * was the cause), `SymlinkLoop` (more than 40 links) or `InvalidArgument` (a NUL character). The target need
   * not exist. The result is a path string: using it later is a check at one instant — `read` and `write` are
   * the race-free ways to touch a file.
   */
  readonly resolve: (path: string) => Effect.Effect<Resolved, WorkspaceError>
  /**
   * Reads a regular file.
   *
   * Contract: the file is opened with `O_NOFOLLOW` through the descriptor of its directory held by the walk, and
   * must be the entry the walk found there (same device and inode), else `Changed`. Fails with `NotFound`,
   * `NotAFile` (directories, FIFOs and devices — a FIFO is never read), `TooLarge` (over `maxBytes`),
   * `HardLink` (a file with more than one link may be an outside file linked in), or a `resolve` failure.
   * `action` names the operation in messages (`"read"`, `"edit"`).
   */
  readonly read: (
    path: string,
    options: { readonly maxBytes: number; readonly action: string }
  ) => Effect.Effect<FileRead, WorkspaceError>
  /**
   * Writes a file atomically, creating missing parent directories.
   *
   * Contract: missing directories are made through the held descriptor of their parent; the content goes to a
   * new temporary file in the target's directory (`O_EXCL | O_NOFOLLOW`, a short name, so any target name the
   * file system allows works), which is then renamed over the target in that same directory: the file is old or
   * new, never half, and neither step can land outside the root. An existing file's permission bits are kept;
   * its other hard links keep the old content. Uninterruptible once the temporary file exists. Fails with
   * `NotAFile` (a directory or special file is there), `NotADirectory` (a parent is a file), or a `resolve`
   * failure. Returns whether a file was replaced.
   */
  readonly write: (
    path: string,
    data: Uint8Array
  ) => Effect.Effect<{ readonly resolved: Resolved; readonly replaced: boolean }, WorkspaceError>
  /** Shows an absolute path inside the workspace relative to the root (`.` for the root). */
  readonly display: (absolute: string) => string
}

/**
 * Opens a workspace at `root` (absolute, or relative to the process's working directory).
 *
 * Contract: fails with `NotFound` or `NotADirectory` when `root` is not an existing directory. The root's real
 * path is computed once, here; the `FileSystem` and `Path` in context are captured, so `resolve` needs nothing.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (root: string): Effect.Effect<Workspace, WorkspaceError, FileSystem | Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const path = yield* Path
    const given = path.resolve(root)
    const real = yield* fs.realPath(given).pipe(
      Effect.mapError((error) => fromPlatformError(error, root, "open the workspace root"))
    )
    const info = yield* fs.stat(real).pipe(
      Effect.mapError((error) => fromPlatformError(error, root, "open the workspace root"))
    )
    if (info.type !== "Directory") {
      return yield* new WorkspaceError({
        reason: "NotADirectory",
        path: root,
        message: `The workspace root \`${root}\` is not a directory; pass the directory the tools should work in.`
      })
    }
    const procFd = yield* Effect.sync(() => process.platform === "linux" && NodeFs.existsSync("/proc/self/fd"))
    const confined: Root = { given, real, procFd }
    const display = (absolute: string): string => {
      const relative = path.relative(real, absolute)
      return relative === "" ? "." : relative.split(path.sep).join("/")
    }
    return {
      root: real,
      display,
      resolve: (input) =>
        Effect.scoped(walk(confined, input, { create: false })).pipe(
          Effect.map(({ absolute }): Resolved => ({ input, absolute, relative: display(absolute) }))
        ),
      read: (input, options) =>
        Access.readFile(confined, display, input, options).pipe(
          Effect.map(({ bytes, resolved, stats }): FileRead => ({ resolved, bytes, mode: stats.mode & 0o7777 }))
        ),
      write: (input, data) => Access.writeFile(confined, display, input, data)
    }
  })
