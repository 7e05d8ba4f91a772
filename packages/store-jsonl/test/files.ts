/**
 * Helpers for tests that edit session files by hand: the commit markers' checksums, recomputed after an edit, so a
 * test can change a record's bytes and still have a file whose framing holds (what a writer with a bug, not a flipped
 * bit, would leave).
 */
import * as zlib from "node:zlib"

const checkedMarker = /^\{"commit":([1-9][0-9]*),"crc":"[0-9a-f]{8}"\}( *)$/

/** The CRC-32 of some lines, each followed by its newline (what a commit marker carries). */
const crcOf = (lines: ReadonlyArray<string>): string =>
  zlib.crc32(Buffer.from(lines.map((line) => `${line}\n`).join(""), "utf8")).toString(16).padStart(8, "0")

/** A commit marker of `count` records over `lines`. */
export const markerOf = (count: number, lines: ReadonlyArray<string>): string =>
  `{"commit":${count},"crc":"${crcOf(lines)}"}`

/** The file's bytes with every checksummed marker's checksum recomputed over the lines after it. */
export const reframe = (bytes: Buffer): Buffer => {
  const lines = bytes.toString("utf8").split("\n")
  for (let i = 0; i < lines.length; i++) {
    const match = checkedMarker.exec(lines[i]!)
    if (match === null) continue
    const count = Number(match[1])
    // a commit whose lines are not all complete (each followed by its newline) is a torn tail: left as it is
    if (i + count >= lines.length - 1) continue
    const group = lines.slice(i + 1, i + 1 + count)
    lines[i] = `${markerOf(count, group)}${match[2]}`
    i += count
  }
  return Buffer.from(lines.join("\n"), "utf8")
}

/** Changes `from` to `to` at its first occurrence in `bytes` (same length, or the offsets after it move). */
export const replaceFirst = (bytes: Buffer, from: string, to: string): Buffer => {
  const at = bytes.indexOf(from)
  if (at < 0) throw new Error(`${JSON.stringify(from)} is not in the file`)
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(to, "utf8"), bytes.subarray(at + Buffer.byteLength(from))])
}
