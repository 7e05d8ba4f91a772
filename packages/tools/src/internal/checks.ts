/**
 * What the file tools share: the checks a path must pass before a tool reads or lists it (a regular text file
 * within its size limit, a directory), how a file type is named in a refusal, and the room kept for markers.
 */
import type { FileSystem } from "@effect/platform/FileSystem"
import type { File } from "@effect/platform/FileSystem"
import type { Path } from "@effect/platform/Path"
import { Effect } from "effect"
import type { Resolved, Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import { fromPlatformError } from "./platformError.js"
import { formatBytes, isBinary } from "./render.js"

/** Whether `candidate` is `root` or lies below it. Both must be absolute and normalized. */
export const isWithin = (path: Path, root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate)
  return relative === "" || !(relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
}

/** Characters kept free for a truncation marker when a result is cut to fit `maxOutputChars`. */
export const markerReserve = 100

export const stat = (fs: FileSystem, target: Resolved, action: string) =>
  fs.stat(target.absolute).pipe(Effect.mapError((error) => fromPlatformError(error, target.input, action)))

export const describeType = (type: File.Type): string => {
  switch (type) {
    case "File":
      return "a file"
    case "Directory":
      return "a directory"
    case "SymbolicLink":
      return "a symbolic link"
    case "BlockDevice":
    case "CharacterDevice":
      return "a device"
    case "FIFO":
      return "a named pipe"
    case "Socket":
      return "a socket"
    case "Unknown":
      return "not a regular file"
  }
}

/** Reads a regular file within the size limit through the workspace (race-free), refusing binary content. */
export const readText = (workspace: Workspace, input: string, action: string, maxBytes: number) =>
  Effect.gen(function*() {
    const read = yield* workspace.read(input, { maxBytes, action })
    if (isBinary(read.bytes)) {
      return yield* new WorkspaceError({
        reason: "Binary",
        path: input,
        message: `Cannot ${action} \`${read.resolved.relative}\`: it is a binary file (${
          formatBytes(read.bytes.length)
        }); this tool handles text only. Use shell (e.g. \`file\` or \`xxd | head\`) to inspect it.`
      })
    }
    return read
  })

export const requireDirectory = (fs: FileSystem, target: Resolved, action: string) =>
  Effect.gen(function*() {
    const info = yield* stat(fs, target, action)
    if (info.type !== "Directory") {
      return yield* new WorkspaceError({
        reason: "NotADirectory",
        path: target.input,
        message: `Cannot ${action} \`${target.relative}\`: it is ${describeType(info.type)}, not a directory.` +
          (info.type === "File" ? " Use read_file to read it." : "")
      })
    }
    return info
  })

/** The order paths and names are shown in: by UTF-16 code unit, as `sort()` without locale. */
export const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
