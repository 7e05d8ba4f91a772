/**
 * The searching tools' handlers: `find_files` (globs confined to their base) and `grep` (RE2 regular expressions,
 * linear time). Glob results are re-resolved through the workspace, so a link cannot lead a search outside it.
 */
import type { Tool } from "@effect/ai"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { Effect, Either } from "effect"
import { RE2JS } from "re2js"
import { glob } from "tinyglobby"
import type { Resolved, Workspace } from "../Workspace.js"
import { WorkspaceError } from "../WorkspaceError.js"
import type { FindFiles, Grep, Limits } from "../WorkspaceTools.js"
import { compareStrings, describeType, isWithin, markerReserve, requireDirectory, stat } from "./checks.js"
import { capOutput, cutLine, decodeUtf8, fittingRows, formatBytes, isBinary, plural, splitLines } from "./render.js"

/** Skipped by `find_files` and `grep` unless `includeIgnored`. */
const ignoredByDefault = ["**/.git/**", "**/node_modules/**"]

/** `grep`'s `maxMatches` when the call gives none (capped by `limits.maxGrepMatches`). */
const defaultGrepMatches = 100

// ---------------------------------------------------------------------------------------------------------------
// find_files
// ---------------------------------------------------------------------------------------------------------------

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
