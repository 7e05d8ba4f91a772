/**
 * The JSONL file format, byte by byte: a header line, then records, one per line. A commit of more than one record
 * is preceded by a marker line `{"commit":k}` (possibly padded with spaces after a truncation) and counts only
 * when all its k lines are complete; a single-record commit is its one line. So a commit torn by a crash (a
 * group cut short, or a last line without its newline) is never read as committed: the reader stops at the
 * committed end, and the writer truncates the torn bytes before it writes again.
 *
 * `Framer` is the incremental reader both the load stream and the state scan use: feed it chunks, it returns the
 * header and the committed records, with their byte offsets.
 */

/** One committed record, with where it sits in the file. */
export interface FramedRecord {
  readonly position: number
  readonly text: string
  /** Offset of the record's line. */
  readonly start: number
  /** Offset just past its newline. */
  readonly end: number
  /** For a record of a multi-record commit: the marker line's offset and length, and the record's index in it. */
  readonly group: { readonly start: number; readonly length: number; readonly index: number } | undefined
}

export const markerPrefix = "{\"commit\":"

const newline = 0x0a

/** The marker line that opens a commit of `count` records (without its newline). */
export const marker = (count: number): string => `${markerPrefix}${count}}`

/** The marker of `count` records padded with spaces to `length` characters (a marker rewritten in place). */
export const paddedMarker = (count: number, length: number): string => marker(count).padEnd(length, " ")

const parseMarker = (text: string): number | undefined => {
  if (!text.startsWith(markerPrefix)) return undefined
  const count = Number(text.slice(markerPrefix.length, text.indexOf("}")))
  return Number.isSafeInteger(count) && count > 0 ? count : undefined
}

interface PendingLine {
  readonly text: string
  readonly start: number
  readonly end: number
}

/**
 * Reads a JSONL session file incrementally. Not thread-safe and not reusable: one framer per read.
 */
export class Framer {
  /**
   * A framer for the whole file (from its header line), or for the rest of it from `from`: the offset of a commit's
   * first line (a marker line or a single record's line) and the position of its first record.
   */
  constructor(from?: { readonly offset: number; readonly position: number }) {
    if (from !== undefined) {
      this.sawHeader = true
      this.offset = from.offset
      this.leftoverStart = from.offset
      this.records = from.position
      this.committedEnd = from.offset
    }
  }

  private leftover: Buffer = Buffer.alloc(0)
  private leftoverStart = 0
  private offset = 0
  private sawHeader = false
  private group: { start: number; length: number; count: number; lines: Array<PendingLine> } | undefined = undefined
  /** The header line, once read. */
  header: string | undefined = undefined
  /** Records committed so far. */
  records = 0
  /** Offset just past the last committed line (the header's, when there is no record). */
  committedEnd = 0

  /** The offset just past the bytes fed so far (the file's size once the whole file was fed). */
  get fed(): number {
    return this.offset
  }

  /** Feeds the next chunk; returns the records it completes. */
  push(chunk: Uint8Array): Array<FramedRecord> {
    const out: Array<FramedRecord> = []
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const base = this.offset
    this.offset += bytes.length
    let from = 0
    if (this.leftover.length > 0) {
      // Only the line the last chunk left open is joined (not the whole chunk copied behind it).
      const at = bytes.indexOf(newline)
      if (at === -1) {
        this.leftover = Buffer.concat([this.leftover, bytes])
        return out
      }
      const line = Buffer.concat([this.leftover, bytes.subarray(0, at)])
      this.line(line.toString("utf8"), this.leftoverStart, base + at + 1, out)
      from = at + 1
    }
    for (;;) {
      const at = bytes.indexOf(newline, from)
      if (at === -1) break
      this.line(bytes.toString("utf8", from, at), base + from, base + at + 1, out)
      from = at + 1
    }
    this.leftover = from === bytes.length ? Buffer.alloc(0) : Buffer.from(bytes.subarray(from))
    this.leftoverStart = base + from
    return out
  }

  private line(text: string, start: number, end: number, out: Array<FramedRecord>): void {
    if (!this.sawHeader) {
      this.sawHeader = true
      this.header = text
      this.committedEnd = end
      return
    }
    if (this.group !== undefined) {
      const group = this.group
      group.lines.push({ text, start, end })
      if (group.lines.length === group.count) {
        for (const [index, line] of group.lines.entries()) {
          out.push({
            position: this.records++,
            text: line.text,
            start: line.start,
            end: line.end,
            group: { start: group.start, length: group.length, index }
          })
        }
        this.committedEnd = end
        this.group = undefined
      }
      return
    }
    const count = parseMarker(text)
    if (count !== undefined) {
      this.group = { start, length: end - start - 1, count, lines: [] }
      return
    }
    out.push({ position: this.records++, text, start, end, group: undefined })
    this.committedEnd = end
  }
}
