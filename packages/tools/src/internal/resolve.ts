/**
 * Confined path resolution: turns a path the model gave into the real absolute path it denotes, and refuses it
 * unless that real path lies inside the workspace root. Real paths are computed as the OS would: the longest
 * existing prefix goes through `realpath` (every symbolic link along it resolved), and a dangling symbolic link
 * right after that prefix is followed too, since creating a file through it would create its target.
 */
import type { FileSystem } from "@effect/platform/FileSystem"
import type { Path } from "@effect/platform/Path"
import { Effect, Either } from "effect"
import { WorkspaceError } from "../WorkspaceError.js"
import { errnoCode, fromPlatformError, isMissing } from "./platformError.js"

/** The workspace root twice: as configured (absolute, lexical) and as its real path. */
export interface Roots {
  readonly given: string
  readonly real: string
}

/** The kernel's own limit on symbolic links followed in one resolution (Linux `MAXSYMLINKS`). */
const maxSymlinkHops = 40

/** Whether `candidate` is `root` or lies below it. Both must be absolute and normalized. */
export const isWithin = (path: Path, root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate)
  return relative === "" || !(relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
}

const loop = (input: string) =>
  new WorkspaceError({
    reason: "SymlinkLoop",
    path: input,
    message: `\`${input}\` cannot be resolved: its symbolic links form a loop (or a chain longer than ` +
      `${maxSymlinkHops}).`
  })

/** The real path of `lexical`: the existing prefix resolved by `realpath`, the missing rest appended. */
const realize = (
  fs: FileSystem,
  path: Path,
  lexical: string,
  hops: number,
  input: string
): Effect.Effect<string, WorkspaceError> =>
  Effect.gen(function*() {
    let current = lexical
    const rest: Array<string> = []
    let real: string
    while (true) {
      const result = yield* Effect.either(fs.realPath(current))
      if (Either.isRight(result)) {
        real = result.right
        break
      }
      if (errnoCode(result.left) === "ELOOP") return yield* loop(input)
      if (!isMissing(result.left)) return yield* fromPlatformError(result.left, input, "resolve")
      const parent = path.dirname(current)
      if (parent === current) return yield* fromPlatformError(result.left, input, "resolve")
      rest.unshift(path.basename(current))
      current = parent
    }
    const [first, ...others] = rest
    if (first !== undefined) {
      // `realpath` fails on a dangling symbolic link; `readlink` tells it apart from a missing entry.
      const link = yield* Effect.either(fs.readLink(path.join(real, first)))
      if (Either.isRight(link)) {
        if (hops >= maxSymlinkHops) return yield* loop(input)
        return yield* realize(fs, path, path.resolve(real, link.right, ...others), hops + 1, input)
      }
    }
    return path.join(real, ...rest)
  })

/**
 * Resolves `input` against the workspace.
 *
 * Contract: relative paths are taken from the root; absolute paths must lie under the root (as configured or as
 * its real path). The result is a real absolute path inside `roots.real`, or a failure: `PathEscape` (with the
 * cause: `..`, an absolute path elsewhere, or a symbolic link out), `SymlinkLoop`, `InvalidArgument` (a NUL byte)
 * or `Io`. The target itself need not exist.
 */
export const resolveConfined = (
  fs: FileSystem,
  path: Path,
  roots: Roots,
  input: string
): Effect.Effect<string, WorkspaceError> =>
  Effect.gen(function*() {
    if (input.includes("\u0000")) {
      return yield* new WorkspaceError({
        reason: "InvalidArgument",
        path: input,
        message: "The path contains a NUL character; give a plain relative path such as `src/index.ts`."
      })
    }
    const raw = input.trim() === "" ? "." : input
    let lexical: string
    if (path.isAbsolute(raw)) {
      const normal = path.resolve(raw)
      if (isWithin(path, roots.real, normal)) {
        lexical = normal
      } else if (isWithin(path, roots.given, normal)) {
        lexical = path.join(roots.real, path.relative(roots.given, normal))
      } else {
        return yield* new WorkspaceError({
          reason: "PathEscape",
          path: input,
          message: `\`${input}\` is an absolute path outside the workspace root \`${roots.real}\`. ` +
            "Only paths inside the workspace are allowed; give a path relative to the root."
        })
      }
    } else {
      lexical = path.resolve(roots.real, raw)
      if (!isWithin(path, roots.real, lexical)) {
        return yield* new WorkspaceError({
          reason: "PathEscape",
          path: input,
          message: `\`${input}\` leaves the workspace root through \`..\` (it would be \`${lexical}\`). ` +
            "Only paths inside the workspace are allowed; paths are relative to the root."
        })
      }
    }
    const physical = yield* realize(fs, path, lexical, 0, input)
    if (!isWithin(path, roots.real, physical)) {
      return yield* new WorkspaceError({
        reason: "PathEscape",
        path: input,
        message: `\`${input}\` goes through a symbolic link to \`${physical}\`, outside the workspace root ` +
          `\`${roots.real}\`. Only paths inside the workspace are allowed.`
      })
    }
    return physical
  })
