/**
 * The JSONL file format, byte by byte: a header line, then records, one per line. A commit is preceded by a marker
 * line `{"commit":k,"crc":"xxxxxxxx"}` (possibly padded with spaces after a truncation) and counts only when all its
 * k lines are complete and their CRC-32 (over the k lines, newlines included) is the marker's. So a commit torn by a
 * crash (a group cut short, or a last line without its newline) is never read as committed: the reader stops at
 * the committed end, and the writer truncates the torn bytes before it writes again. Anything else that does not
 * fit the framing before the committed end (a checksum that does not match, a marker inside a commit, a line
 * outside any commit, a line longer than the maximum record size) is corruption, never a torn tail.
 *
 * Files written before checksums (their header line has no `"framing":"crc32"`) keep loading as they were written:
 * a marker without a checksum and a single-record commit without a marker are accepted there.
 *
 * `Framer` is the incremental reader both the load stream and the state scan use: feed it chunks, it returns the
 * header and the committed records, with their byte offsets. Its work is linear in the bytes fed: the open line is
 * kept as a list of chunks and joined once, when its newline arrives.
 */
import * as zlib from "node:zlib"

/** One committed record, with where it sits in the file. */
export interface FramedRecord {
  readonly position: number
  readonly text: string
  /** Offset of the record's line. */
  readonly start: number
  /** Offset just past its newline. */
  readonly end: number
  /**
   * For a record of a commit opened by a marker: the marker line's offset and length, the record's index in the
   * commit, and whether the marker carries a checksum.
   */
  readonly group:
    | { readonly start: number; readonly length: number; readonly index: number; readonly checked: boolean }
    | undefined
}

/** What is wrong with a file, and where: the byte offset, and the line number when the read started at line 1. */
export interface Problem {
  readonly offset: number
  readonly line: number | undefined
  readonly message: string
}

const markerPrefix = "{\"commit\":"

/** The header's mark of a file whose every commit has a marker with a checksum. */
export const framing = "crc32"

/** The default maximum size of one line (a record), in bytes. */
export const defaultMaxRecordBytes = 64 * 1024 * 1024

const newline = 0x0a

/** CRC-32 of `bytes`, continuing from `previous`. */
export const crc32 = (bytes: Uint8Array, previous = 0): number => zlib.crc32(bytes, previous)

const hex = (crc: number): string => crc.toString(16).padStart(8, "0")

/** The marker line that opens a commit of `count` records whose lines have checksum `crc` (without its newline). */
export const marker = (count: number, crc: number): string => `${markerPrefix}${count},"crc":"${hex(crc)}"}`

/** A marker of the format before checksums (only ever rewritten in place, in a file of that format). */
export const uncheckedMarker = (count: number): string => `${markerPrefix}${count}}`

/** A marker padded with spaces to `length` characters (a marker rewritten in place). */
export const padded = (text: string, length: number): string => text.padEnd(length, " ")

/** Whether a header line marks a file whose commits all carry checksums. */
export const isChecked = (headerLine: string | undefined): boolean => {
  if (headerLine === undefined) return false
  try {
    const parsed: unknown = JSON.parse(headerLine)
    return typeof parsed === "object" && parsed !== null && "framing" in parsed && parsed.framing === framing
  } catch {
    return false
  }
}

const checkedMarker = /^\{"commit":([1-9][0-9]{0,14}),"crc":"([0-9a-f]{8})"\} *$/
const anyMarker = /^\{"commit":([1-9][0-9]{0,14})(?:,"crc":"([0-9a-f]{8})")?\} *$/

interface ParsedMarker {
  readonly count: number
  readonly crc: number | undefined
}

/**
 * A marker line: its count and checksum; `"invalid"` when the line starts like a marker but is not one of this
 * file's format; `undefined` when it is a record line. In a file without checksums a line that does not parse is a
 * record, as the reader of that format read it.
 */
const parseMarker = (text: string, checked: boolean): ParsedMarker | "invalid" | undefined => {
  if (!text.startsWith(markerPrefix)) return undefined
  const match = (checked ? checkedMarker : anyMarker).exec(text)
  if (match !== null) {
    return { count: Number(match[1]), crc: match[2] === undefined ? undefined : Number.parseInt(match[2], 16) }
  }
  if (checked) return "invalid"
  const count = Number(text.slice(markerPrefix.length, text.indexOf("}")))
  return Number.isSafeInteger(count) && count > 0 ? { count, crc: undefined } : undefined
}

interface PendingLine {
  readonly text: string
  readonly start: number
  readonly end: number
}

interface OpenGroup {
  readonly start: number
  readonly length: number
  readonly count: number
  readonly crc: number | undefined
  running: number
  readonly lines: Array<PendingLine>
}

/** Where a framer starts when it does not start at the header: a commit's first line. */
export interface From {
  /** The offset of a commit's first line (its marker, or a single record's line). */
  readonly offset: number
  /** The position of the commit's first record. */
  readonly position: number
  /** Whether the file's header marks it as checked (see {@link isChecked}). */
  readonly checked: boolean
}

/**
 * Reads a JSONL session file incrementally. Not thread-safe and not reusable: one framer per read. Once it finds a
 * problem it stops (returns no more records) and keeps it in `problem`.
 */
export class Framer {
  /** A framer for the whole file (from its header line), or for the rest of it from a commit's start. */
  constructor(maxRecordBytes: number, from?: From) {
    this.max = maxRecordBytes
    if (from !== undefined) {
      this.sawHeader = true
      this.checked = from.checked
      this.offset = from.offset
      this.openStart = from.offset
      this.records = from.position
      this.committedEnd = from.offset
      this.lineNumber = undefined
    }
  }

  private readonly max: number
  /** The open line: the chunks of it fed so far (joined once, at its newline). */
  private open: Array<Buffer> = []
  private openLength = 0
  private openStart = 0
  private offset = 0
  private sawHeader = false
  private checked = false
  /** Lines completed so far (unknown when the read did not start at the header). */
  private lineNumber: number | undefined = 0
  private group: OpenGroup | undefined = undefined
  /** The header line, once read. */
  header: string | undefined = undefined
  /** Records committed so far. */
  records = 0
  /** Offset just past the last committed line (the header's, when there is no record). */
  committedEnd = 0
  /** What is wrong with the file, once found: nothing after it is read. */
  problem: Problem | undefined = undefined
  /** Bytes copied to assemble lines that span chunks (the framer's work beyond one pass over the input). */
  copied = 0

  /** The offset just past the bytes fed so far (the file's size once the whole file was fed). */
  get fed(): number {
    return this.offset
  }

  /** Feeds the next chunk; returns the records it completes. */
  push(chunk: Uint8Array): Array<FramedRecord> {
    const out: Array<FramedRecord> = []
    if (this.problem !== undefined) return out
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const base = this.offset
    this.offset += bytes.length
    let from = 0
    if (this.openLength > 0) {
      const at = bytes.indexOf(newline)
      const length = this.openLength + (at === -1 ? bytes.length : at)
      if (length > this.max) {
        this.tooLong(this.openStart)
        return out
      }
      if (at === -1) {
        this.open.push(Buffer.from(bytes))
        this.openLength += bytes.length
        this.copied += bytes.length
        return out
      }
      // The open line is joined once, with its newline (the checksum covers it).
      this.open.push(bytes.subarray(0, at + 1))
      const line = Buffer.concat(this.open, this.openLength + at + 1)
      this.copied += line.length
      this.open = []
      this.openLength = 0
      this.line(line, 0, line.length - 1, this.openStart, out)
      from = at + 1
    }
    while (this.problem === undefined) {
      const at = bytes.indexOf(newline, from)
      if (at === -1) break
      if (at - from > this.max) {
        this.tooLong(base + from)
        return out
      }
      this.line(bytes, from, at, base + from, out)
      from = at + 1
    }
    if (this.problem !== undefined || from === bytes.length) return out
    if (bytes.length - from > this.max) {
      this.tooLong(base + from)
      return out
    }
    this.open = [Buffer.from(bytes.subarray(from))]
    this.openLength = bytes.length - from
    this.copied += this.openLength
    this.openStart = base + from
    return out
  }

  /**
   * Called once the whole file was fed. A commit left open at the end is a torn tail, unless all the lines it has
   * are complete and match its checksum: then its marker announced more records than were ever written for it
   * (a damaged marker), and the commit was acknowledged.
   */
  finish(): void {
    const group = this.group
    if (this.problem !== undefined || group === undefined || group.crc === undefined) return
    if (this.openLength === 0 && group.lines.length > 0 && group.running === group.crc) {
      this.fail(
        group.start,
        this.lineNumber === undefined ? undefined : this.lineNumber - group.lines.length,
        `the commit marker announces ${group.count} records, but its checksum matches the ${group.lines.length} lines after it`
      )
    }
  }

  private fail(offset: number, line: number | undefined, message: string): void {
    this.problem = { offset, line, message }
    this.group = undefined
    this.open = []
    this.openLength = 0
  }

  private tooLong(start: number): void {
    this.fail(
      start,
      this.lineNumber === undefined ? undefined : this.lineNumber + 1,
      `a line longer than the maximum record size (${this.max} bytes)`
    )
  }

  /** One complete line: `bytes[from, at)`, its newline at `at`; `start` is its offset in the file. */
  private line(bytes: Buffer, from: number, at: number, start: number, out: Array<FramedRecord>): void {
    const end = start + (at - from) + 1
    const number = this.lineNumber === undefined ? undefined : ++this.lineNumber
    const text = bytes.toString("utf8", from, at)
    if (!this.sawHeader) {
      this.sawHeader = true
      this.header = text
      this.checked = isChecked(text)
      this.committedEnd = end
      return
    }
    const group = this.group
    if (group !== undefined) {
      if (text.startsWith(markerPrefix)) {
        return this.fail(
          start,
          number,
          `a commit marker inside the commit of ${group.count} records opened at byte ${group.start} (it has ${group.lines.length})`
        )
      }
      if (group.crc !== undefined) group.running = crc32(bytes.subarray(from, at + 1), group.running)
      group.lines.push({ text, start, end })
      if (group.lines.length < group.count) return
      if (group.crc !== undefined && group.running !== group.crc) {
        return this.fail(
          group.start,
          number === undefined ? undefined : number - group.count,
          `the checksum of the commit of ${group.count} records does not match its bytes`
        )
      }
      const checked = group.crc !== undefined
      for (const [index, line] of group.lines.entries()) {
        out.push({
          position: this.records++,
          text: line.text,
          start: line.start,
          end: line.end,
          group: { start: group.start, length: group.length, index, checked }
        })
      }
      this.committedEnd = end
      this.group = undefined
      return
    }
    const parsed = parseMarker(text, this.checked)
    if (parsed === "invalid") return this.fail(start, number, "a commit marker without a valid checksum")
    if (parsed !== undefined) {
      this.group = { start, length: end - start - 1, count: parsed.count, crc: parsed.crc, running: 0, lines: [] }
      return
    }
    if (this.checked) return this.fail(start, number, "a line outside any commit (no commit marker before it)")
    out.push({ position: this.records++, text, start, end, group: undefined })
    this.committedEnd = end
  }
}
