/**
 * The scan cache (ADR 0032): what a scan of a session file computed, up to a commit boundary, kept beside the file
 * in `<name>.scan-cache.json` so that a later process scans only the bytes after that boundary. The file stays the
 * only truth: a cache is used only when it checks out against the file (the same file, at least as long, the same
 * header line, the same bytes just before the boundary); anything else means a full scan.
 */
import { Option, Schema } from "effect"
import { createHash } from "node:crypto"

/** The cache's format; a file of another format is ignored (a full scan). */
export const format = 1

/** How many bytes before the boundary the cache's digest covers (fewer when the records are shorter). */
export const checkWindow = 4096

const Nat = Schema.NonNegativeInt

/**
 * A list of strings, checked in one loop: the schema of the cache's message ids, which can be tens of thousands
 * long (`Schema.Array(Schema.String)` runs a parser step per element: ≈ 30 ms for 70 000 ids in a fresh process).
 */
const Strings = Schema.declare(
  (value: unknown): value is ReadonlyArray<string> =>
    Array.isArray(value) && value.every((item) => typeof item === "string"),
  { identifier: "Strings", description: "an array of strings" }
)

const isIncreasing = (values: ReadonlyArray<number>): boolean => {
  for (let i = 1; i < values.length; i++) if (values[i]! <= values[i - 1]!) return false
  return true
}

/** What a scan knows at a commit boundary: the figures, the indexes, and what identifies the bytes before it. */
export const ScanCache = Schema.Struct({
  format: Schema.Literal(format),
  /** The header line, without its newline. */
  header: Schema.String,
  /** The file's device and inode when the cache was written (inode `null` where the platform has none). */
  dev: Nat,
  ino: Schema.NullOr(Nat),
  /** The boundary: the offset just past the last commit the cache covers, and how many records precede it. */
  bytes: Nat,
  records: Nat,
  events: Nat,
  turns: Nat,
  /** The last record time seen (`null`: none, the session's creation time stands). */
  lastTime: Schema.NullOr(Schema.Number),
  firstPrompt: Schema.NullOr(Schema.Struct({ text: Schema.String, position: Nat })),
  /** The sparse index of commit starts (see `jsonlStore.ts`). */
  positions: Schema.Array(Nat),
  offsets: Schema.Array(Nat),
  /** SHA-256 (hex) of the bytes from `checkFrom` to the boundary. */
  checkFrom: Nat,
  checkDigest: Schema.String,
  messageIds: Strings
}).pipe(
  // What holds together: counts within counts, the index within the boundary and increasing, the digest's window.
  Schema.filter((c) =>
    c.events <= c.records && c.turns <= c.events &&
    (c.firstPrompt === null || c.firstPrompt.position < c.records) &&
    c.positions.length === c.offsets.length && isIncreasing(c.positions) && isIncreasing(c.offsets) &&
    c.positions.every((p) => p < c.records) && c.offsets.every((o) => o < c.bytes) &&
    c.checkFrom <= c.bytes && c.bytes - c.checkFrom <= checkWindow
  )
)
export type ScanCache = typeof ScanCache.Type

export const digest = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const decodeText = Schema.decodeUnknownOption(Schema.parseJson(ScanCache))

/**
 * Decodes a cache file's text; `undefined` when it is not a cache of this format or does not hold together (a
 * stale or damaged cache is never an error: the store scans the file instead).
 */
export const decode = (text: string): ScanCache | undefined => Option.getOrUndefined(decodeText(text))

export const encode = (cache: ScanCache): string => JSON.stringify(cache)

/**
 * A session's message-id index: the ids a cache holds, put into the set only when first asked (opening a session
 * does not ask), and the ids scanned or appended since. Added to in place (see `SessionState`).
 */
export class MessageIds {
  private readonly set = new Set<string>()
  private pending: ReadonlyArray<string> | undefined

  constructor(cached?: ReadonlyArray<string>) {
    this.pending = cached === undefined || cached.length === 0 ? undefined : cached
  }

  private get all(): Set<string> {
    if (this.pending !== undefined) {
      for (const id of this.pending) this.set.add(id)
      this.pending = undefined
    }
    return this.set
  }

  add(id: string): void {
    this.set.add(id)
  }

  has(id: string): boolean {
    return this.set.has(id) || this.all.has(id)
  }

  /** Every id, for the next cache. */
  toArray(): Array<string> {
    return [...this.all]
  }
}
