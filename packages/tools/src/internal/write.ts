/**
 * The writing tools' handlers: `write_file` (atomic, through the workspace) and `edit_file` (one exact, unique
 * replacement in a strictly decoded UTF-8 file).
 */
import type { Tool } from "@effect/ai"
import { Effect } from "effect"
import type { Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import type { EditFile, Limits, WriteFile } from "../WorkspaceTools.js"
import { readText } from "./checks.js"
import { formatBytes, lineNumbersAt, listNumbers, plural, splitLines } from "./render.js"

// ---------------------------------------------------------------------------------------------------------------
// write_file, edit_file
// ---------------------------------------------------------------------------------------------------------------

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const encoder = new TextEncoder()

export const writeFile = Effect.fn("WorkspaceTools.writeFile")(function*(
  workspace: Workspace,
  _limits: Limits,
  params: Tool.Parameters<typeof WriteFile>
) {
  const data = encoder.encode(params.content)
  const { replaced, resolved } = yield* workspace.write(params.path, data)
  const lines = splitLines(params.content).length
  return `Wrote ${plural(lines, "line")} (${formatBytes(data.length)}) to \`${resolved.relative}\`` +
    (replaced ? " (replaced its previous content)." : " (new file).")
})

/** The start offsets of the non-overlapping occurrences of `needle` in `text`. */
const occurrences = (text: string, needle: string): Array<number> => {
  const found: Array<number> = []
  let from = 0
  while (true) {
    const at = text.indexOf(needle, from)
    if (at === -1) return found
    found.push(at)
    from = at + needle.length
  }
}

export const editFile = Effect.fn("WorkspaceTools.editFile")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof EditFile>
) {
  if (params.oldString === "") {
    return yield* new WorkspaceError({
      reason: "InvalidArgument",
      path: params.path,
      message: "oldString is empty. Give the exact text to replace; to create or overwrite a file use write_file."
    })
  }
  if (params.oldString === params.newString) {
    return yield* new WorkspaceError({
      reason: "InvalidArgument",
      path: params.path,
      message: "oldString and newString are identical: there is nothing to change."
    })
  }
  const { bytes, resolved: target } = yield* readText(workspace, params.path, "edit", limits.maxFileBytes)
  const text = yield* Effect.try({
    try: () => strictDecoder.decode(bytes),
    catch: () =>
      new WorkspaceError({
        reason: "InvalidArgument",
        path: params.path,
        message: `Cannot edit \`${target.relative}\`: it is not valid UTF-8, and editing it as text would ` +
          "corrupt it. Use shell to change it."
      })
  })
  const found = occurrences(text, params.oldString)
  if (found.length === 0) {
    const crlf = text.includes("\r\n") && params.oldString.includes("\n") && !params.oldString.includes("\r\n")
    return yield* new WorkspaceError({
      reason: "NoMatch",
      path: params.path,
      message: `oldString was not found in \`${target.relative}\` (0 matches). It must match the file exactly, ` +
        "including whitespace and indentation; read the file again and copy the text." +
        (crlf ? " Note: the file uses CRLF (\\r\\n) line endings." : "")
    })
  }
  const lines = lineNumbersAt(text, found)
  if (found.length > 1 && params.replaceAll !== true) {
    return yield* new WorkspaceError({
      reason: "Ambiguous",
      path: params.path,
      message: `oldString occurs ${found.length} times in \`${target.relative}\` (lines ${
        listNumbers(lines, 20)
      }). Include more surrounding text to make it unique, or set replaceAll: true to replace every occurrence.`
    })
  }
  const first = found[0] ?? 0
  const updated = params.replaceAll === true
    ? text.split(params.oldString).join(params.newString)
    : text.slice(0, first) + params.newString + text.slice(first + params.oldString.length)
  yield* workspace.write(params.path, encoder.encode(updated))
  return `Edited \`${target.relative}\`: replaced ${plural(found.length, "occurrence")} (line${
    lines.length === 1 ? "" : "s"
  } ${listNumbers(lines, 20)}).`
})
