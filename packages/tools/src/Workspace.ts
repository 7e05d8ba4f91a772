/**
 * The workspace: one root directory that every built-in tool is confined to. Paths from the model are resolved
 * against it to real paths (symbolic links resolved) and refused, with a `WorkspaceError` saying why, when they
 * would leave it — so a tool holding a resolved path cannot touch anything outside the root.
 *
 * @since 0.0.0
 */
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { Effect } from "effect"
import { fromPlatformError } from "./internal/platformError.js"
import { resolveConfined } from "./internal/resolve.js"
import { WorkspaceError } from "./WorkspaceError.js"

/**
 * A path resolved inside the workspace.
 *
 * @since 0.0.0
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
 * A workspace root and the resolution of paths against it.
 *
 * @since 0.0.0
 */
export interface Workspace {
  /** The root's real absolute path. */
  readonly root: string
  /**
   * Resolves a path given by the model.
   *
   * Contract: a relative path is taken from the root; an absolute path must lie under the root. The existing part
   * of the path is resolved with `realpath` (symbolic links anywhere along it), a dangling link is followed, and
   * the result must still lie under the root's real path. Otherwise it fails with `PathEscape` (saying whether
   * `..`, an absolute path or a symbolic link was the cause) or `SymlinkLoop`. The target need not exist.
   * Resolution is a check at one instant: a concurrent process that swaps a directory for a link afterwards is
   * not defended against (see the README).
   */
  readonly resolve: (path: string) => Effect.Effect<Resolved, WorkspaceError>
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
    const roots = { given, real }
    const display = (absolute: string): string => {
      const relative = path.relative(real, absolute)
      return relative === "" ? "." : relative.split(path.sep).join("/")
    }
    return {
      root: real,
      display,
      resolve: (input) =>
        resolveConfined(fs, path, roots, input).pipe(
          Effect.map((absolute): Resolved => ({ input, absolute, relative: display(absolute) }))
        )
    }
  })
