/**
 * What "always" means when the chat asks to approve a tool call, and what it shows before asking: `a` allows this
 * exact `shell` command (same command line or argv, same working directory), or writes (`write_file`, `edit_file`)
 * to files in this folder (not its subfolders) — never every call of the tool. Pure functions of the call's
 * decoded parameters.
 */
import * as path from "node:path"
import { visible } from "./output.js"

/** What an "always" answer allows from then on: `key` identifies the calls it covers, `words` say which. */
export interface Scope {
  readonly key: string
  readonly words: string
}

const field = (params: unknown, name: string): unknown =>
  typeof params === "object" && params !== null && name in params
    ? (params as { readonly [key: string]: unknown })[name] // an object, checked above
    : undefined

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** The folder of a workspace path, normalised (`.` for the workspace root). */
const folderOf = (file: string): string => path.posix.dirname(path.posix.normalize(file.replace(/\\/g, "/")))

/**
 * The scope of an "always" answer to a call of `name` with `params`. Contract: two calls share a key only when
 * the first one's approval should cover the second — the same shell command in the same directory, or a write to
 * the same folder; a tool the chat does not know is covered by its name.
 */
export const scopeOf = (name: string, params: unknown): Scope => {
  if (name === "shell") {
    const cwd = path.posix.normalize(text(field(params, "cwd")) ?? ".")
    const command = text(field(params, "command"))
    const argv = field(params, "argv")
    const line = command ?? (Array.isArray(argv) ? JSON.stringify(argv) : "")
    const where = cwd === "." ? "" : ` in ${cwd}`
    return {
      key: `shell\u0000${cwd}\u0000${command === undefined ? "argv" : "line"}\u0000${line}`,
      words: `this exact command${visible(where)}`
    }
  }
  if (name === "write_file" || name === "edit_file") {
    const file = text(field(params, "path"))
    if (file !== undefined) {
      const folder = folderOf(file)
      return {
        key: `write\u0000${folder}`,
        words: folder === "." ? "writes to files in the workspace root" : `writes to files in ${visible(folder)}/`
      }
    }
  }
  return { key: `tool\u0000${name}`, words: `every ${name} call in this session` }
}

/** The most lines a preview shows of each side. */
const previewLines = 12

const clipped = (lines: ReadonlyArray<string>, prefix: string): ReadonlyArray<string> => [
  ...lines.slice(0, previewLines).map((line) => `${prefix}${visible(line)}`),
  ...(lines.length > previewLines ? [`  … ${lines.length - previewLines} more lines`] : [])
]

/**
 * What a write would change, shown before its approval is asked: for `edit_file` the replaced text (`- `) and its
 * replacement (`+ `), for `write_file` the new content (`+ `); nothing for other tools. Control characters show
 * visibly.
 */
export const preview = (name: string, params: unknown): ReadonlyArray<string> => {
  const file = text(field(params, "path"))
  if (name === "write_file") {
    const content = text(field(params, "content")) ?? ""
    return [`  ${visible(file ?? "?")} (whole file):`, ...clipped(content.replace(/\n$/, "").split("\n"), "  + ")]
  }
  if (name === "edit_file") {
    const before = text(field(params, "oldString")) ?? ""
    const after = text(field(params, "newString")) ?? ""
    return [
      `  ${visible(file ?? "?")}${field(params, "replaceAll") === true ? " (every occurrence)" : ""}:`,
      ...clipped(before.split("\n"), "  - "),
      ...clipped(after.split("\n"), "  + ")
    ]
  }
  return []
}
