/**
 * The confined walk: resolves a path the way the kernel does — one component at a time, `..` taken from the
 * directory actually reached (not collapsed lexically), symbolic links expanded where they are met — while
 * holding an open descriptor on every directory it enters, opened with `O_NOFOLLOW` from the descriptor of its
 * parent. Nothing outside the root is ever opened: `..` at the root, or a link whose target leaves the root, ends
 * the walk with `PathEscape`.
 *
 * On Linux the held descriptors are used through `/proc/self/fd/N/name` (the kernel resolves `N` to the open
 * directory, wherever it now is), which gives `openat`-like operations that a concurrent swap of a directory
 * for a symbolic link cannot redirect. Where `/proc/self/fd` is missing the walk falls back to the physical path
 * strings it computed, which leaves the check-then-use race open (see ADR 0012).
 */
import type { Scope } from "effect"
import { Effect } from "effect"
import * as NFS from "node:fs"
import type { FileHandle } from "node:fs/promises"
import * as FSP from "node:fs/promises"
import * as NodePath from "node:path"
import { WorkspaceError } from "../WorkspaceError.js"

/** The kernel's own limit on symbolic links followed in one resolution (Linux `MAXSYMLINKS`). */
const maxSymlinkHops = 40

const C = NFS.constants

/** The workspace root: as configured (absolute, lexical) and as its real path; and how descriptors are named. */
export interface Root {
  readonly given: string
  readonly real: string
  /** Whether `/proc/self/fd/N` names open directories (Linux): then every operation goes through a descriptor. */
  readonly procFd: boolean
}

/** An open directory on the walk, with the physical path it had when it was opened. */
export interface Dir {
  readonly handle: FileHandle
  readonly path: string
}

/** Where a walk ended. */
export interface Located {
  /** The held directories from the root down; the last one is where `name` lives (or the target itself). */
  readonly dirs: ReadonlyArray<Dir>
  /**
   * The final entry inside the last directory, with what `lstat` saw there (`undefined`: missing); or
   * `undefined` when the path names the last directory itself (`.`, `src/..`).
   */
  readonly final: { readonly name: string; readonly stats: NFS.Stats | undefined } | undefined
  /** Components below a missing directory (only when not creating); the target is missing then. */
  readonly missing: ReadonlyArray<string>
  /** The physical absolute path the walk reached. */
  readonly absolute: string
}

/** A path to an entry of `dir` that goes through its descriptor where the platform allows. */
export const entryPath = (root: Root, dir: Dir, name: string): string =>
  root.procFd ? `/proc/self/fd/${dir.handle.fd}/${name}` : NodePath.join(dir.path, name)

/** The errno code of a Node failure (`ENOENT`, `ELOOP`, ...). */
const nodeCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/** Splits a path into components, dropping empty ones and `.` (never `..`). */
const components = (path: string): Array<string> => path.split(/[/\\]/).filter((part) => part !== "" && part !== ".")

/** The components of `absolute` below `root`, when `absolute` starts with `root` (compared by component). */
const below = (root: string, absolute: string): Array<string> | undefined => {
  const prefix = components(root)
  const parts = components(absolute)
  if (parts.length < prefix.length) return undefined
  for (let index = 0; index < prefix.length; index++) if (parts[index] !== prefix[index]) return undefined
  return parts.slice(prefix.length)
}

/** The components of an absolute path inside the root, as configured or real; `undefined` when outside. */
const insideRoot = (root: Root, absolute: string): Array<string> | undefined =>
  below(root.real, absolute) ?? below(root.given, absolute)

/** Maps a Node failure while doing `action` on `path` (as the model named it) into a `WorkspaceError`. */
const fromNodeError = (error: unknown, path: string, action: string): WorkspaceError => {
  const code = nodeCode(error)
  switch (code) {
    case "ENOENT":
      return new WorkspaceError({
        reason: "NotFound",
        path,
        message: `Cannot ${action} \`${path}\`: it does not exist. Use list_dir or find_files to see what is there.`
      })
    case "ENOTDIR":
      return new WorkspaceError({
        reason: "NotADirectory",
        path,
        message: `Cannot ${action} \`${path}\`: a parent of it is a file, not a directory.`
      })
    case "EISDIR":
      return new WorkspaceError({
        reason: "NotAFile",
        path,
        message: `Cannot ${action} \`${path}\`: it is a directory. Use list_dir to see its entries.`
      })
    case "ELOOP":
      return new WorkspaceError({
        reason: "SymlinkLoop",
        path,
        message: `Cannot ${action} \`${path}\`: its symbolic links form a loop.`
      })
    case "ENAMETOOLONG":
      return new WorkspaceError({
        reason: "InvalidArgument",
        path,
        message: `Cannot ${action} \`${path}\`: a name in it is longer than the file system allows (255 bytes).`
      })
    case "EACCES":
    case "EPERM":
      return new WorkspaceError({ reason: "Io", path, message: `Cannot ${action} \`${path}\`: permission denied.` })
  }
  const detail = error instanceof Error ? error.message : String(error)
  return new WorkspaceError({ reason: "Io", path, message: `Cannot ${action} \`${path}\`: ${detail}` })
}

/** Runs a Node file-system promise, mapping its failure. */
export const attempt = <A>(
  run: () => Promise<A>,
  path: string,
  action: string
): Effect.Effect<A, WorkspaceError> =>
  Effect.tryPromise({ try: run, catch: (error) => fromNodeError(error, path, action) })

/** Runs a Node file-system promise; a failure is returned as its errno code. */
const probe = <A>(run: () => Promise<A>): Effect.Effect<A, string> =>
  Effect.tryPromise({ try: run, catch: (error) => nodeCode(error) ?? "EIO" })

const directoryFlags = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW

/** Opens a directory (never through a final symbolic link), closed with the scope. */
const openDirectory = (
  target: string,
  physical: string,
  input: string
): Effect.Effect<Dir, WorkspaceError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt(() => FSP.open(target, directoryFlags), input, "open").pipe(
      Effect.map((handle): Dir => ({ handle, path: physical }))
    ),
    (dir) => Effect.promise(() => dir.handle.close().catch(() => undefined))
  )

/** The path changed while the tool used it: a concurrent process replaced part of it. */
export const changed = (input: string, what: string) =>
  new WorkspaceError({
    reason: "Changed",
    path: input,
    message: `\`${input}\` changed while it was being ${what} (another process replaced part of it, e.g. with a ` +
      "symbolic link). Nothing outside the workspace was touched; try again."
  })

const escapeByDots = (input: string) =>
  new WorkspaceError({
    reason: "PathEscape",
    path: input,
    message: `\`${input}\` leaves the workspace root through \`..\`. Only paths inside the workspace are ` +
      "allowed; paths are relative to the root."
  })

const escapeByLink = (input: string, link: string, target: string) =>
  new WorkspaceError({
    reason: "PathEscape",
    path: input,
    message: `\`${input}\` goes through the symbolic link \`${link}\` to \`${target}\`, outside the workspace ` +
      "root. Only paths inside the workspace are allowed."
  })

const loop = (input: string) =>
  new WorkspaceError({
    reason: "SymlinkLoop",
    path: input,
    message: `\`${input}\` cannot be resolved: its symbolic links form a loop (or a chain longer than ` +
      `${maxSymlinkHops}).`
  })

/**
 * Walks `input` from the root.
 *
 * Contract: every directory entered is opened with `O_NOFOLLOW` relative to the descriptor of its parent and
 * held until the scope closes; `..` pops to the directory the walk came from; a symbolic link is read and its
 * target walked in its place (an absolute target must lie under the root, a relative one is walked from the
 * link's directory). `..` above the root or a link out is `PathEscape`, more than 40 links `SymlinkLoop`. The
 * final component is not entered: `final` reports what is there. With `create`, missing intermediate
 * directories are made (mode 0777 less the umask); without it the rest of the path below a missing directory is
 * kept in `missing`, with `..` in it applied lexically (nothing exists there to resolve).
 */
export const walk = (
  root: Root,
  input: string,
  options: { readonly create: boolean }
): Effect.Effect<Located, WorkspaceError, Scope.Scope> =>
  Effect.gen(function*() {
    if (input.includes("\u0000")) {
      return yield* new WorkspaceError({
        reason: "InvalidArgument",
        path: input,
        message: "The path contains a NUL character; give a plain relative path such as `src/index.ts`."
      })
    }
    const raw = input.trim() === "" ? "." : input
    let pending: Array<string>
    if (NodePath.isAbsolute(raw)) {
      const inside = insideRoot(root, raw)
      if (inside === undefined) {
        return yield* new WorkspaceError({
          reason: "PathEscape",
          path: input,
          message: `\`${input}\` is an absolute path outside the workspace root \`${root.real}\`. ` +
            "Only paths inside the workspace are allowed; give a path relative to the root."
        })
      }
      pending = inside
    } else {
      pending = components(raw)
    }
    const dirs: Array<Dir> = [yield* openDirectory(root.real, root.real, input)]
    const missing: Array<string> = []
    let hops = 0
    let final: Located["final"] = undefined
    let via: { readonly link: string; readonly target: string } | undefined = undefined
    const top = () => dirs[dirs.length - 1] as Dir
    const isLast = () => pending.every((part) => part === ".")
    while (pending.length > 0) {
      const name = pending.shift() as string
      if (name === ".") continue
      if (missing.length > 0) {
        if (name === "..") missing.pop()
        else missing.push(name)
        continue
      }
      if (name === "..") {
        if (dirs.length === 1) {
          return yield* (via === undefined ? escapeByDots(input) : escapeByLink(input, via.link, via.target))
        }
        dirs.pop()
        continue
      }
      const parent = top()
      const entry = entryPath(root, parent, name)
      const last = isLast()
      const stats = yield* probe(() => FSP.lstat(entry)).pipe(
        Effect.catchAll((code) =>
          code === "ENOENT" ? Effect.succeed(undefined) : Effect.fail(fromNodeError({ code }, input, "resolve"))
        )
      )
      if (stats === undefined) {
        if (last) {
          final = { name, stats: undefined }
          break
        }
        if (!options.create) {
          missing.push(name)
          continue
        }
        yield* probe(() => FSP.mkdir(entry)).pipe(
          Effect.catchAll((code) =>
            code === "EEXIST" ? Effect.void : Effect.fail(fromNodeError({ code }, input, "create the directories of"))
          )
        )
        dirs.push(
          yield* openDirectory(entry, NodePath.join(parent.path, name), input).pipe(
            Effect.catchTag("WorkspaceError", (error) =>
              error.reason === "SymlinkLoop" || error.reason === "NotADirectory"
                ? Effect.fail(changed(input, "created"))
                : Effect.fail(error))
          )
        )
        continue
      }
      if (stats.isSymbolicLink()) {
        if (++hops > maxSymlinkHops) {
          return yield* loop(input)
        }
        const target = yield* attempt(
          () =>
            FSP.readlink(entry),
          input,
          "resolve"
        )
        const shown = NodePath.join(parent.path, name)
        via = { link: NodePath.relative(root.real, shown) || ".", target }
        if (NodePath.isAbsolute(target)) {
          const inside = insideRoot(root, target)
          if (inside === undefined) {
            return yield* escapeByLink(input, via.link, target)
          }
          dirs.length = 1
          pending = [...inside, ...pending]
        } else {
          pending = [...components(target), ...pending]
        }
        continue
      }
      if (last) {
        final = { name, stats }
        break
      }
      if (!stats.isDirectory()) {
        if (options.create) {
          return yield* new WorkspaceError({
            reason: "NotADirectory",
            path: input,
            message: `Cannot use \`${input}\`: \`${
              NodePath.relative(root.real, NodePath.join(parent.path, name))
            }\` is a file, not a directory.`
          })
        }
        missing.push(name)
        continue
      }
      dirs.push(
        yield* openDirectory(entry, NodePath.join(parent.path, name), input).pipe(
          // Between the `lstat` and the `open` the directory became something else: a swap is under way.
          Effect.catchTag("WorkspaceError", (error) =>
            error.reason === "SymlinkLoop" || error.reason === "NotADirectory" || error.reason === "NotFound"
              ? Effect.fail(changed(input, "resolved"))
              : Effect.fail(error))
        )
      )
    }
    const at = top().path
    const absolute = final !== undefined ? NodePath.join(at, final.name) : NodePath.join(at, ...missing)
    return { dirs, final, missing, absolute } satisfies Located
  })
