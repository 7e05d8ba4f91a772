/**
 * The file tools' handlers: `read_file`, `list_dir`, `find_files`, `grep`, `write_file`, `edit_file`. Every path
 * they touch comes out of `Workspace.resolve` (or, for glob results, is re-resolved through it), and every result
 * is rendered text with its truncations marked.
 */
import type { Tool } from "@effect/ai"
import { FileSystem } from "@effect/platform/FileSystem"
import type { File } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { Effect, Either } from "effect"
import { RE2JS } from "re2js"
import { glob } from "tinyglobby"
import type { Resolved, Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import type { EditFile, FindFiles, Grep, Limits, ListDir, ReadFile, WriteFile } from "../WorkspaceTools.js"
import { fromPlatformError } from "./platformError.js"
import {
  capOutput,
  cutLine,
  decodeUtf8,
  fittingRows,
  formatBytes,
  isBinary,
  lineNumbersAt,
  listNumbers,
  plural,
  splitLines
} from "./render.js"

/** Whether `candidate` is `root` or lies below it. Both must be absolute and normalized. */
const isWithin = (path: Path, root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate)
  return relative === "" || !(relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
}

/** Skipped by `find_files` and `grep` unless `includeIgnored`. */
const ignoredByDefault = ["**/.git/**", "**/node_modules/**"]

/** Characters kept free for a truncation marker when a result is cut to fit `maxOutputChars`. */
const markerReserve = 100

/** `grep`'s `maxMatches` when the call gives none (capped by `limits.maxGrepMatches`). */
const defaultGrepMatches = 100

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const stat = (fs: FileSystem, target: Resolved, action: string) =>
  fs.stat(target.absolute).pipe(Effect.mapError((error) => fromPlatformError(error, target.input, action)))

const describeType = (type: File.Type): string => {
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
const readText = (workspace: Workspace, input: string, action: string, maxBytes: number) =>
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

const requireDirectory = (fs: FileSystem, target: Resolved, action: string) =>
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

// ---------------------------------------------------------------------------------------------------------------
// find_files
// ---------------------------------------------------------------------------------------------------------------

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Refuses globs that could reach outside their base: absolute ones and any `..` segment. */
const checkGlob = (pattern: string) =>
  Effect.gen(function*() {
    if (pattern.trim() === "") {
      return yield* new WorkspaceError({
        reason: "InvalidPattern",
        message: "The glob pattern is empty; give one such as `**/*.ts`."
      })
    }
    if (pattern.startsWith("/") || /^[A-Za-z]:[\\/]/.test(pattern) || /(^|[/\\{,])\.\.($|[/\\},])/.test(pattern)) {
      return yield* new WorkspaceError({
        reason: "InvalidPattern",
        message: `The glob \`${pattern}\` is absolute or contains \`..\`; globs are relative to \`path\` and stay ` +
          "inside it. Set `path` to search a subdirectory."
      })
    }
  })

/** Paths of the files under `base` matching `pattern`, absolute, confined lexically to the root, sorted. */
const globFiles = (workspace: Workspace, base: Resolved, pattern: string, includeIgnored: boolean) =>
  Effect.gen(function*() {
    const path = yield* Path
    yield* checkGlob(pattern)
    const matches = yield* Effect.tryPromise({
      try: (signal) =>
        glob(pattern, {
          cwd: base.absolute,
          dot: true,
          onlyFiles: true,
          expandDirectories: false,
          // Never crawl through a link: a linked directory may lie outside the workspace.
          followSymbolicLinks: false,
          ignore: includeIgnored ? [] : ignoredByDefault,
          signal
        }),
      catch: (error) =>
        new WorkspaceError({
          reason: "Io",
          path: base.input,
          message: `Cannot search \`${base.relative}\` for \`${pattern}\`: ${String(error)}`
        })
    })
    return matches
      .map((match) => path.resolve(base.absolute, match))
      .filter((absolute) => isWithin(path, workspace.root, absolute))
      .sort(compareStrings)
  })

export const findFiles = Effect.fn("WorkspaceTools.findFiles")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof FindFiles>
) {
  const fs = yield* FileSystem
  const base = yield* workspace.resolve(params.path ?? ".")
  yield* requireDirectory(fs, base, "search")
  const all = yield* globFiles(workspace, base, params.pattern, params.includeIgnored === true)
  const limit = Math.min(params.limit ?? limits.maxFindResults, limits.maxFindResults)
  const shown: Array<string> = []
  let outside = 0
  let index = 0
  for (; index < all.length && shown.length < limit; index++) {
    // The crawl follows no links, but the tree may change under it: check each shown path again.
    const resolved = yield* Effect.either(workspace.resolve(all[index] ?? ""))
    if (Either.isLeft(resolved)) outside++
    else shown.push(workspace.display(all[index] ?? ""))
  }
  const fitting = fittingRows(shown, limits.maxOutputChars - markerReserve)
  const rest = all.length - index + (shown.length - fitting)
  if (shown.length === 0 && rest === 0) {
    return `No files match \`${params.pattern}\` under \`${base.relative}\`.` +
      (outside > 0 ? ` [skipped ${plural(outside, "symbolic link")} leading outside the workspace]` : "")
  }
  const rows = shown.slice(0, fitting)
  if (rest > 0) {
    rows.push(
      `… [truncated: ${plural(rest, "more match", "more matches")}; narrow the pattern or path, or raise limit ` +
        `(at most ${limits.maxFindResults})]`
    )
  }
  if (outside > 0) rows.push(`[skipped ${plural(outside, "symbolic link")} leading outside the workspace]`)
  return capOutput(rows.join("\n"), limits.maxOutputChars)
})

// ---------------------------------------------------------------------------------------------------------------
// grep
// ---------------------------------------------------------------------------------------------------------------

/**
 * Compiles a `grep` pattern with RE2 (`re2js`): matching takes time linear in the input, so no pattern can
 * freeze the process (ADR 0012). RE2 has no backreferences and no lookaround.
 */
const compileRegex = (pattern: string, ignoreCase: boolean) =>
  Effect.try({
    try: () => RE2JS.compile(pattern, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0),
    catch: (error) =>
      new WorkspaceError({
        reason: "InvalidPattern",
        message:
          `\`${pattern}\` is not a valid regular expression in RE2 syntax (${
            error instanceof Error ? error.message : String(error)
          }). grep uses RE2 syntax, like ripgrep: no backreferences (\\1) and no lookaround ((?=, (?<=). Escape ` +
          "special characters such as ( [ { . * + ? with \\ to match them literally."
      })
  })

export const grep = Effect.fn("WorkspaceTools.grep")(function*(
  workspace: Workspace,
  limits: Limits,
  params: Tool.Parameters<typeof Grep>
) {
  const fs = yield* FileSystem
  const regex = yield* compileRegex(params.pattern, params.ignoreCase === true)
  const maxMatches = Math.min(params.maxMatches ?? defaultGrepMatches, limits.maxGrepMatches)
  const base = yield* workspace.resolve(params.path ?? ".")
  const info = yield* stat(fs, base, "search")
  const files = info.type === "Directory"
    ? yield* globFiles(workspace, base, params.glob ?? "**/*", params.includeIgnored === true)
    : info.type === "File"
    ? [base.absolute]
    : yield* new WorkspaceError({
      reason: "NotAFile",
      path: base.input,
      message: `Cannot search \`${base.relative}\`: it is ${describeType(info.type)}.`
    })
  const searched = files.slice(0, limits.maxGrepFiles)
  const matches: Array<string> = []
  const budget = limits.maxOutputChars - 3 * markerReserve
  let chars = 0
  let more: "maxMatches" | "output" | undefined
  let binary = 0
  let large = 0
  let outside = 0
  let linked = 0
  let unreadable = 0
  scan: for (const file of searched) {
    const read = yield* Effect.either(workspace.read(file, { maxBytes: limits.maxGrepFileBytes, action: "search" }))
    if (Either.isLeft(read)) {
      switch (read.left.reason) {
        case "PathEscape":
        case "SymlinkLoop":
          outside++
          break
        case "TooLarge":
          large++
          break
        case "HardLink":
          linked++
          break
        default:
          unreadable++
      }
      continue
    }
    if (isBinary(read.right.bytes)) {
      binary++
      continue
    }
    const lines = splitLines(decodeUtf8(read.right.bytes))
    const shown = workspace.display(file)
    for (let index = 0; index < lines.length; index++) {
      const line = lines[index] ?? ""
      if (!regex.test(line)) continue
      if (matches.length === maxMatches) {
        more = "maxMatches"
        break scan
      }
      const match = `${shown}:${index + 1}: ${cutLine(line, limits.maxLineChars)}`
      if (matches.length > 0 && chars + match.length + 1 > budget) {
        more = "output"
        break scan
      }
      matches.push(match)
      chars += match.length + 1
    }
  }
  const notes: Array<string> = []
  if (more === "maxMatches") {
    notes.push(
      `… [truncated: stopped at ${maxMatches} matches and more exist; narrow the pattern, path or ` +
        `glob, or raise maxMatches (at most ${limits.maxGrepMatches})]`
    )
  } else if (more === "output") {
    notes.push(
      `… [truncated: stopped after ${matches.length} matches at the output limit and more exist; ` +
        "narrow the pattern, path or glob]"
    )
  }
  if (files.length > searched.length) {
    notes.push(
      `… [truncated: searched only the first ${searched.length} of ${files.length} files in path ` +
        "order; narrow path or glob]"
    )
  }
  if (binary > 0) notes.push(`[skipped ${plural(binary, "binary file")}]`)
  if (large > 0) notes.push(`[skipped ${plural(large, "file")} over ${formatBytes(limits.maxGrepFileBytes)}]`)
  if (outside > 0) notes.push(`[skipped ${plural(outside, "symbolic link")} leading outside the workspace]`)
  if (linked > 0) notes.push(`[skipped ${plural(linked, "hard-linked file")}: they may be linked from outside]`)
  if (unreadable > 0) notes.push(`[skipped ${plural(unreadable, "unreadable file")}]`)
  const head = matches.length > 0
    ? matches
    : [`No matches for /${params.pattern}/ in ${plural(searched.length, "file")} under \`${base.relative}\`.`]
  return capOutput([...head, ...notes].join("\n"), limits.maxOutputChars)
})

// ---------------------------------------------------------------------------------------------------------------
// write_file, edit_file
// ---------------------------------------------------------------------------------------------------------------

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
