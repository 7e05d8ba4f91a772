/**
 * Maps `@effect/platform` failures into `WorkspaceError`s with messages the model can act on.
 */
import type { PlatformError } from "@effect/platform/Error"
import { Predicate } from "effect"
import { WorkspaceError } from "../WorkspaceError.js"

/** The errno code (`ENOENT`, `ELOOP`, ...) behind a platform error, when there is one. */
export const errnoCode = (error: PlatformError): string | undefined => {
  if (error._tag !== "SystemError") return undefined
  const cause: unknown = error.cause
  return Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined
}

/** Converts a platform failure on `path` (as the model named it) while doing `action` (e.g. "read"). */
export const fromPlatformError = (error: PlatformError, path: string, action: string): WorkspaceError => {
  const code = errnoCode(error)
  if (code === "ENOENT" || (error._tag === "SystemError" && error.reason === "NotFound")) {
    return new WorkspaceError({
      reason: "NotFound",
      path,
      message: `Cannot ${action} \`${path}\`: it does not exist. Use list_dir or find_files to see what is there.`
    })
  }
  if (code === "ENOTDIR") {
    return new WorkspaceError({
      reason: "NotADirectory",
      path,
      message: `Cannot ${action} \`${path}\`: a parent of it is a file, not a directory.`
    })
  }
  if (code === "EISDIR") {
    return new WorkspaceError({
      reason: "NotAFile",
      path,
      message: `Cannot ${action} \`${path}\`: it is a directory. Use list_dir to see its entries.`
    })
  }
  if (code === "ELOOP") {
    return new WorkspaceError({
      reason: "SymlinkLoop",
      path,
      message: `Cannot ${action} \`${path}\`: its symbolic links form a loop.`
    })
  }
  if (code === "EACCES" || code === "EPERM") {
    return new WorkspaceError({
      reason: "Io",
      path,
      message: `Cannot ${action} \`${path}\`: permission denied.`
    })
  }
  const detail = error._tag === "SystemError" ? (error.description ?? error.reason) : (error.description ?? "")
  return new WorkspaceError({
    reason: "Io",
    path,
    message: `Cannot ${action} \`${path}\`: ${code !== undefined ? `${code} ` : ""}${detail}`.trim()
  })
}
