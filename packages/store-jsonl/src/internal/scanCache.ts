/**
 * The scan cache (ADR 0032): what a scan of a session file computed, up to a commit boundary, kept beside the file
 * in `<name>.scan-cache.json` so that a later process scans only the bytes after that boundary. The file stays the
 * only truth: a cache is used only when it checks out against the file (the same file, at least as long, the same
 * header line, the same bytes just before the boundary); anything else means a full scan.
 */
import { createHash } from "node:crypto"

/** The cache's format; a file of another format is ignored (a full scan). */
export const format = 1

/** How many bytes before the boundary the cache's digest covers (fewer when the records are shorter). */
export const checkWindow = 4096

/** What a scan knows at a commit boundary: the figures, the indexes, and what identifies the bytes before it. */
export interface ScanCache {
  readonly format: typeof format
  /** The header line, without its newline. */
  readonly header: string
  /** The file's device and inode when the cache was written (inode `null` where the platform has none). */
  readonly dev: number
  readonly ino: number | null
  /** The boundary: the offset just past the last commit the cache covers, and how many records precede it. */
  readonly bytes: number
  readonly records: number
  readonly events: number
  readonly turns: number
  /** The last record time seen (`null`: none, the session's creation time stands). */
  readonly lastTime: number | null
  readonly firstPrompt: { readonly text: string; readonly position: number } | null
  /** The sparse index of commit starts (see `jsonlStore.ts`). */
  readonly positions: ReadonlyArray<number>
  readonly offsets: ReadonlyArray<number>
  /** SHA-256 (hex) of the bytes from `checkFrom` to the boundary. */
  readonly checkFrom: number
  readonly checkDigest: string
  readonly messageIds: ReadonlyArray<string>
}

export const digest = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const isNat = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const isNatArray = (value: unknown): value is ReadonlyArray<number> => Array.isArray(value) && value.every(isNat)

const isIncreasing = (values: ReadonlyArray<number>): boolean => {
  for (let i = 1; i < values.length; i++) if (values[i]! <= values[i - 1]!) return false
  return true
}

/**
 * Decodes a cache file's text; `undefined` when it is not a cache of this format or does not hold together (a
 * stale or damaged cache is never an error: the store scans the file instead). Checked by hand, field by field:
 * the id list can be long.
 */
export const decode = (text: string): ScanCache | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const c = parsed as Record<string, unknown>
  if (c.format !== format || typeof c.header !== "string" || !isNat(c.dev)) return undefined
  if (c.ino !== null && !isNat(c.ino)) return undefined
  if (!isNat(c.bytes) || !isNat(c.records) || !isNat(c.events) || !isNat(c.turns)) return undefined
  if (c.lastTime !== null && typeof c.lastTime !== "number") return undefined
  const firstPrompt = c.firstPrompt
  if (firstPrompt !== null) {
    if (typeof firstPrompt !== "object" || firstPrompt === undefined) return undefined
    const prompt = firstPrompt as Record<string, unknown>
    if (typeof prompt.text !== "string" || !isNat(prompt.position) || prompt.position >= c.records) return undefined
  }
  if (!isNatArray(c.positions) || !isNatArray(c.offsets) || c.positions.length !== c.offsets.length) return undefined
  if (!isIncreasing(c.positions) || !isIncreasing(c.offsets)) return undefined
  const { bytes, records } = c
  if (c.events > records || c.turns > c.events) return undefined
  if (c.positions.some((p) => p >= records) || c.offsets.some((o) => o >= bytes)) return undefined
  if (!isNat(c.checkFrom) || c.checkFrom > c.bytes || c.bytes - c.checkFrom > checkWindow) return undefined
  if (typeof c.checkDigest !== "string" || !Array.isArray(c.messageIds)) return undefined
  if (!c.messageIds.every((id) => typeof id === "string")) return undefined
  return c as unknown as ScanCache
}

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
