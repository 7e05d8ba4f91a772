/**
 * Rendering tool results as model-friendly text, and the truncation markers. Every cut is announced in the text
 * itself with `… [truncated: ...]` (or `[line truncated: ...]`) and says how to get the rest.
 */
import { AgentTool } from "@harness/agent"

const decoder = new TextDecoder("utf-8", { fatal: false })

/** Decodes UTF-8, replacing invalid sequences with U+FFFD. */
export const decodeUtf8 = (bytes: Uint8Array): string => decoder.decode(bytes)

/** How many leading bytes are inspected for a NUL byte (the heuristic of git and grep). */
const binaryProbeBytes = 8000

/** Whether `bytes` look binary: a NUL byte in the first 8000 bytes. */
export const isBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, binaryProbeBytes).includes(0)

/**
 * Splits text into lines: `\n` or `\r\n` end a line; a final line terminator does not start another line, so
 * `"a\nb\n"` has two lines and `""` has none.
 */
export const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line))
}

/** Cuts a line longer than `max` characters, with a marker that says how much was cut. */
export const cutLine = (line: string, max: number): string =>
  line.length <= max ? line : `${line.slice(0, max)} … [line truncated: ${line.length - max} more characters]`

/**
 * The last guard on any result (`AgentTool.capText`): at most `max` characters, marker included. Tools cut earlier
 * with better hints; this catches whatever they let through.
 */
export const capOutput = (text: string, max: number): string =>
  AgentTool.capText(text, max, (cut) => `\n… [truncated: ${cut} more characters of output; ask for less]`)

/** How many of `rows` (joined by newlines) fit in `budget` characters; at least one when there is one. */
export const fittingRows = (rows: ReadonlyArray<string>, budget: number): number => {
  let chars = 0
  for (let index = 0; index < rows.length; index++) {
    chars += (rows[index]?.length ?? 0) + 1
    if (chars > budget && index > 0) return index
  }
  return rows.length
}

/** A size in bytes for people: `512 B`, `1.5 KiB`, `12.0 MiB`. */
export const formatBytes = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
  return `${(bytes / (1024 * 1024 * 1024)).toFixed(1)} GiB`
}

/** `1 line`, `2 lines`; `many` for irregular plurals. */
export const plural = (count: number, one: string, many: string = `${one}s`): string =>
  `${count} ${count === 1 ? one : many}`

/** The 1-based line numbers at which each of `offsets` (character offsets into `text`) falls; `offsets` ascending. */
export const lineNumbersAt = (text: string, offsets: ReadonlyArray<number>): Array<number> => {
  const result: Array<number> = []
  let line = 1
  let position = 0
  for (const offset of offsets) {
    while (position < offset) {
      const next = text.indexOf("\n", position)
      if (next === -1 || next >= offset) break
      line++
      position = next + 1
    }
    result.push(line)
  }
  return result
}

/** Lists numbers, at most `max` of them, saying how many more there were. */
export const listNumbers = (numbers: ReadonlyArray<number>, max: number): string =>
  numbers.length <= max
    ? numbers.join(", ")
    : `${numbers.slice(0, max).join(", ")} and ${numbers.length - max} more`
