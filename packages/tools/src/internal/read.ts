/**
 * The reading tools' handlers: `read_file` (numbered lines, paged) and `list_dir`. Every path comes out of the
 * workspace's resolution, and every result is rendered text with its truncations marked.
 */
import type { Tool } from "@effect/ai"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { Effect, Either } from "effect"
import type { Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import type { Limits, ListDir, ReadFile } from "../WorkspaceTools.js"
import { compareStrings, describeType, markerReserve, readText, requireDirectory } from "./checks.js"
import { fromPlatformError } from "./platformError.js"
import { capOutput, cutLine, decodeUtf8, fittingRows, formatBytes, plural, splitLines } from "./render.js"

// ---------------------------------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------------------------------

export const readFile = Effect.fn("WorkspaceTools.readFile")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof ReadFile>
) {
  const { bytes, resolved: target } = yield* readText(workspace, params.path, "read", limits.maxFileBytes)
  const lines = splitLines(decodeUtf8(bytes))
  const total = lines.length
  if (total === 0) return `[\`${target.relative}\` is empty]`
  const offset = params.offset ?? 1
  if (offset > total) {
    return yield* new WorkspaceError({
      reason: "InvalidArgument",
      path: params.path,
      message: `offset=${offset} is past the end: \`${target.relative}\` has ${plural(total, "line")}.`
    })
  }
  const limit = Math.min(params.limit ?? limits.maxReadLines, limits.maxReadLines)
  const end = Math.min(total, offset - 1 + limit)
  const width = String(end).length
  const rows: Array<string> = []
  let chars = 0
  let last = offset - 1
  // Stop at a whole line before the output limit, leaving room for the marker (but show at least one line).
  const budget = limits.maxOutputChars - markerReserve
  for (let number = offset; number <= end; number++) {
    const row = `${String(number).padStart(width)}\t${cutLine(lines[number - 1] ?? "", limits.maxLineChars)}`
    if (rows.length > 0 && chars + row.length + 1 > budget) break
    rows.push(row)
    chars += row.length + 1
    last = number
  }
  if (last < total) {
    rows.push(`… [truncated: ${plural(total - last, "more line")} of ${total}; use offset=${last + 1} to read on]`)
  }
  return capOutput(rows.join("\n"), limits.maxOutputChars)
})

// ---------------------------------------------------------------------------------------------------------------
// list_dir
// ---------------------------------------------------------------------------------------------------------------

export const listDir = Effect.fn("WorkspaceTools.listDir")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof ListDir>
) {
  const fs = yield* FileSystem
  const path = yield* Path
  const target = yield* workspace.resolve(params.path ?? ".")
  yield* requireDirectory(fs, target, "list")
  const names = yield* fs.readDirectory(target.absolute).pipe(
    Effect.mapError((error) => fromPlatformError(error, target.input, "list"))
  )
  if (names.length === 0) return `[\`${target.relative}\` is empty]`
  const sorted = [...names].sort(compareStrings)
  const shown = sorted.slice(0, limits.maxListEntries)
  const rows = yield* Effect.forEach(shown, (name) => {
    const entry = path.join(target.absolute, name)
    return Effect.all([Effect.either(fs.readLink(entry)), Effect.either(fs.stat(entry))]).pipe(
      Effect.map(([link, info]) => {
        const suffix = Either.isRight(info) && info.right.type === "Directory" ? "/" : ""
        if (Either.isRight(link)) {
          return `${name} -> ${link.right}${suffix}${Either.isLeft(info) ? " (broken link)" : ""}`
        }
        if (Either.isLeft(info)) return `${name} (cannot stat)`
        if (info.right.type === "Directory") return `${name}/`
        if (info.right.type === "File") return `${name} (${formatBytes(Number(info.right.size))})`
        return `${name} (${describeType(info.right.type)})`
      })
    )
  }, { concurrency: 16 })
  const fitting = rows.slice(0, fittingRows(rows, limits.maxOutputChars - markerReserve))
  if (sorted.length > fitting.length) {
    fitting.push(
      `… [truncated: ${plural(sorted.length - fitting.length, "more entry", "more entries")}; ` +
        "use find_files with a pattern to narrow]"
    )
  }
  return capOutput(fitting.join("\n"), limits.maxOutputChars)
})
