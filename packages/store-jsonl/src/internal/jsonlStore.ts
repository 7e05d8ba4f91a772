/**
 * The JSONL backend. One file per session (`<name>.jsonl`, see `framing.ts`) plus, when the session has one, its
 * snapshot: the head in `<name>.snapshot.json`, the body in `<name>.snapshot-body` (ADR 0027), and while a writer
 * holds it, its lock `<name>.lock` (the writer lease, see `lease.ts`, ADR 0044). The file is the only truth: the
 * summary figures, the message-id index and a sparse index of commit offsets are rebuilt lazily, once per process
 * and session, by one scan of the file, then kept up to date by this process's appends; a file whose size or mtime
 * differs from what this process last saw (another process wrote it) is scanned again. A scan starts from the scan
 * cache `<name>.scan-cache.json` (written with each snapshot, see `scanCache.ts`, ADR 0032) when it checks out
 * against the file, and reads only the bytes after it.
 *
 * Every write happens under the session's writer lease: the caller's (checked by the fence), or, for a write made
 * without one, a lease taken for that write alone (refused with `Busy` while another writer holds the session). So
 * bytes past the committed end (a torn commit) are cut only by the lease holder, never under a live writer.
 */
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Ids, Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Chunk, Duration, Effect, HashMap, Option, Random, Ref, Schema, Scope, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Framing from "./framing.js"
import { type FramedRecord, Framer } from "./framing.js"
import * as Leases from "./lease.js"
import * as ScanCache from "./scanCache.js"

type Service = SessionStore.Service
type ErrorReason = SessionStore.SessionStoreErrorReason

/**
 * Where some commits start, so a load from a position seeks instead of reading the file from its start: the
 * position of a commit's first record and the byte offset of the commit's first line, at least `indexEvery` records
 * apart, in order. Append-only while the file only grows (entries are added in place by this process's appends; a
 * truncate or another process's write rebuilds the state and its index).
 */
interface Index {
  readonly positions: Array<number>
  readonly offsets: Array<number>
}

const indexEvery = 1024

/** Adds a commit start to the index when it is far enough from the last one. */
const indexCommit = (index: Index, position: number, offset: number): void => {
  const last = index.positions.length === 0 ? 0 : index.positions[index.positions.length - 1]!
  if (position - last >= indexEvery) {
    index.positions.push(position)
    index.offsets.push(offset)
  }
}

/** Where to start reading for the records from `position` on: the last indexed commit at or before it, if any. */
const seek = (
  index: Index,
  position: number,
  checked: boolean
): Framing.From | undefined => {
  let low = 0
  let high = index.positions.length - 1
  let found = -1
  while (low <= high) {
    const mid = (low + high) >> 1
    if (index.positions[mid]! <= position) {
      found = mid
      low = mid + 1
    } else {
      high = mid - 1
    }
  }
  return found < 0 ? undefined : { offset: index.offsets[found]!, position: index.positions[found]!, checked }
}

/** What this process knows about one session file, as of `bytes`. */
interface SessionState {
  readonly header: Store.SessionHeader
  /** The header line as stored, without its newline. */
  readonly headerLine: string
  /** Whether the file's commits carry checksums (its header says so, see `framing.ts`). */
  readonly checked: boolean
  readonly order: number
  /** The committed end: the file's size when no torn tail follows. */
  readonly bytes: number
  /** The file's size when this process last saw it (past `bytes` when a torn tail follows). */
  readonly size: number
  /** The file's mtime (epoch ms) when this process last saw it: with `size`, how a write by another process shows. */
  readonly mtime: number
  readonly index: Index
  readonly records: number
  readonly events: number
  readonly turns: number
  readonly lastActivity: number
  readonly firstPrompt: { readonly text: string; readonly position: number } | undefined
  /**
   * Shared with the session's earlier states and added to in place by this process's appends: only the newest state
   * is read, and a rescan builds a new set.
   */
  readonly messageIds: ScanCache.MessageIds
}

/** A file's mtime in epoch ms (0 where the platform has none). */
const mtimeOf = (info: FileSystem.File.Info): number =>
  Option.match(info.mtime, { onNone: () => 0, onSome: (date) => date.getTime() })

/** Whether a state is still the file's: the same size and mtime as when this process last saw it. */
const isCurrent = (state: SessionState, seen: { readonly size: number; readonly mtime: number }): boolean =>
  state.size === seen.size && state.mtime === seen.mtime

const safeChar = /[a-z0-9_-]/

/**
 * The file name of a session: lower-case letters, digits, `_` and `-` as they are, every other UTF-16 code unit as
 * `~xxxx` (so names are unique even on case-insensitive file systems and never `.` or `..`); a name that would
 * exceed 200 characters is cut and completed with a hash of the id.
 */
export const fileName = (id: string): string => {
  let name = ""
  for (let i = 0; i < id.length; i++) {
    const ch = id[i]!
    name += safeChar.test(ch) ? ch : `~${id.charCodeAt(i).toString(16).padStart(4, "0")}`
  }
  if (name.length <= 200) return name
  return `${name.slice(0, 120)}~~${createHash("sha256").update(JSON.stringify(id)).digest("hex").slice(0, 40)}`
}

const decodeHeader = Schema.decodeUnknownEither(Store.SessionHeader)
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())
/** The head file: where the snapshot ends and its head (ADR 0027). */
const SnapshotHeadFile = Schema.Struct({ seq: NonNegativeInt, position: NonNegativeInt, head: Schema.String })
const decodeSnapshotHead = Schema.decodeUnknownEither(Schema.parseJson(SnapshotHeadFile))
/** A head file of the first format (head and body in one `text`): ignored, the log replays (ADR 0027). */
const decodeFirstFormat = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Struct({ seq: NonNegativeInt, position: NonNegativeInt, text: Schema.String }))
)

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether UTF-8 keeps a string exactly (no lone surrogate): `String.prototype.isWellFormed` where it exists. */
const isWellFormed = (text: string): boolean => {
  const native = (text as unknown as { readonly isWellFormed?: () => boolean }).isWellFormed
  return native === undefined ? !loneSurrogate.test(text) : native.call(text)
}

/** The facts of one stored line, for figures and the index (a line that is not a record counts as an event). */
const factsOf = (text: string) => {
  try {
    // Untrusted: the cast only lets the helpers look; anything they do not expect throws or gives nothing.
    const record = JSON.parse(text) as Store.StoreRecord
    return {
      kind: Store.isInboxRecord(record)
        ? "inbox" as const
        : record.type === "turn/start"
        ? "turn" as const
        : "event" as const,
      time: typeof record.time === "number" ? record.time : undefined,
      messageId: typeof record === "object" && record !== null ? safe(() => Store.messageIdOf(record)) : undefined,
      preview: safe(() => Store.promptPreviewOf(record))
    }
  } catch {
    return { kind: "event" as const, time: undefined, messageId: undefined, preview: undefined }
  }
}

/**
 * Whether a line is an event that adds nothing but a count to the facts (not an inbox record, not a `turn/start`, no
 * message id, no prompt), known without parsing it: a line with no escape in it cannot spell any of these record
 * types without the text itself, and every record that has facts names its type. Most of a session's lines are such
 * events (chunks, steps, tool calls and results, assistant messages), so the scan skips their parse. Their `time`
 * only matters for the last record, which is parsed at the end of the scan.
 */
const isPlainEvent = (text: string): boolean =>
  !text.includes("\\") && !text.includes("inbox/") && !text.includes("user/message") &&
  !text.includes("steering/message") && !text.includes("turn/start")

/** Facts from untrusted JSON: a shape the helpers do not expect gives nothing. */
const safe = <A>(f: () => A): A | undefined => {
  try {
    const value = f()
    return typeof value === "string" ? value : undefined
  } catch {
    return undefined
  }
}

const decodeSessionId = Schema.decodeUnknownOption(Ids.SessionId)

/**
 * The session id a file name stands for, when the name can be read back (see {@link fileName}; a name cut and
 * completed with a hash cannot).
 */
const idOfFileName = (name: string): Ids.SessionId | undefined => {
  if (name.includes("~~")) return undefined
  const id = name.replace(/~([0-9a-f]{4})/g, (_, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
  return fileName(id) === name ? Option.getOrUndefined(decodeSessionId(id)) : undefined
}

export interface Options {
  readonly directory: string
  readonly maxRecordBytes?: number | undefined
  readonly leaseTime?: Duration.DurationInput | undefined
}

/** A session file this process could not read, as of its size and mtime. */
interface Damage {
  readonly size: number
  readonly mtime: number
  readonly damaged: Store.DamagedSession
}

export const make = (options: Options) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const directory = options.directory
    const maxRecordBytes = options.maxRecordBytes ?? Framing.defaultMaxRecordBytes
    if (!Number.isSafeInteger(maxRecordBytes) || maxRecordBytes < 1) {
      return yield* Effect.dieMessage(`JsonlStore: maxRecordBytes must be a positive integer, got ${maxRecordBytes}`)
    }
    const leaseTime = Duration.decode(options.leaseTime ?? Duration.seconds(30))
    if (!Duration.greaterThan(leaseTime, Duration.zero) || !Duration.isFinite(leaseTime)) {
      return yield* Effect.dieMessage(`JsonlStore: leaseTime must be a positive, finite duration`)
    }
    const states = yield* Ref.make(HashMap.empty<string, SessionState>())
    const damages = yield* Ref.make(HashMap.empty<string, Damage>())
    const nextOrder = yield* Ref.make(Option.none<number>())
    const lock = yield* Effect.makeSemaphore(1)
    const leases = yield* Leases.make(fs, { leaseTime })
    /** Session files kept open for writing, each for the lease it was opened under (closed and forgotten when it ends). */
    const writers = yield* Ref.make(
      HashMap.empty<string, { readonly lease: SessionStore.Lease; readonly file: FileSystem.File }>()
    )

    const pathOf = (id: string) => `${directory}/${fileName(id)}.jsonl`
    const snapshotPathOf = (id: string) => `${directory}/${fileName(id)}.snapshot.json`
    const snapshotBodyPathOf = (id: string) => `${directory}/${fileName(id)}.snapshot-body`
    const lockPathOf = (id: string) => `${directory}/${fileName(id)}.lock`
    /** The scan cache of the session file at `path` (ADR 0032). */
    const cachePathOfFile = (path: string) => `${path.slice(0, -".jsonl".length)}.scan-cache.json`

    const error = (id: Ids.SessionId | undefined, reason: ErrorReason, message: string) =>
      new SessionStore.SessionStoreError(id === undefined ? { reason, message } : { reason, message, id })
    const fail = (id: Ids.SessionId | undefined, reason: ErrorReason, message: string) =>
      Effect.fail(error(id, reason, message))
    const notFound = (id: Ids.SessionId) => fail(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)
    const io = (id: Ids.SessionId | undefined, what: string) => (e: PlatformError) =>
      error(id, "Io", `cannot ${what}: ${e.message}`)
    const isNotFound = (e: PlatformError) => e._tag === "SystemError" && e.reason === "NotFound"

    /** The file's size and mtime, or none when it does not exist. */
    const statOf = (path: string, id: Ids.SessionId | undefined) =>
      fs.stat(path).pipe(
        Effect.map((info) => Option.some({ size: Number(info.size), mtime: mtimeOf(info) })),
        Effect.catchIf(isNotFound, () => Effect.succeed(Option.none<{ size: number; mtime: number }>())),
        Effect.mapError(io(id, `read ${path}`))
      )

    /** Parses a header line: `{"type":"session","order":n, …SessionHeader}`. */
    const parseHeader = (id: Ids.SessionId | undefined, path: string, line: string | undefined) => {
      let parsed: unknown
      try {
        parsed = line === undefined ? undefined : JSON.parse(line)
      } catch {
        parsed = undefined
      }
      if (typeof parsed !== "object" || parsed === null || !("type" in parsed) || parsed.type !== "session") {
        return fail(id, "Corrupt", `${path} does not start with a session header line`)
      }
      const order = "order" in parsed && typeof parsed.order === "number" ? parsed.order : 0
      const header = decodeHeader(parsed)
      if (header._tag === "Left") return fail(id, "Corrupt", `the header of ${path} is invalid: ${header.left.message}`)
      if (id !== undefined && header.right.id !== id) {
        return fail(
          id,
          "Corrupt",
          `${path} holds session ${JSON.stringify(header.right.id)}, not ${JSON.stringify(id)}`
        )
      }
      return Effect.succeed({ header: header.right, order })
    }

    /** The `Corrupt` error of a framing problem: the file, the byte offset and line, what is wrong. */
    const damagedAt = (id: Ids.SessionId | undefined, path: string, problem: Framing.Problem) =>
      error(
        id,
        "Corrupt",
        `${path} is damaged at byte ${problem.offset}${
          problem.line === undefined ? "" : ` (line ${problem.line})`
        }: ${problem.message}`
      )

    /**
     * Reads a session file's committed records through the framer: all of them, or from a commit's start on. Fails
     * with `Corrupt` where the framing does not hold (see `framing.ts`).
     */
    const framed = (path: string, id: Ids.SessionId | undefined, from?: Framing.From) =>
      Stream.suspend(() => {
        const framer = new Framer(maxRecordBytes, from)
        return fs.stream(path, { chunkSize: 256 * 1024, ...(from === undefined ? {} : { offset: from.offset }) }).pipe(
          Stream.mapError((e) =>
            isNotFound(e) && id !== undefined
              ? error(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)
              : io(id, `read ${path}`)(e)
          ),
          Stream.mapChunksEffect((chunks) => {
            const records = Chunk.flatMap(chunks, (chunk) => Chunk.unsafeFromArray(framer.push(chunk)))
            return framer.problem === undefined
              ? Effect.succeed(records)
              : Effect.fail(damagedAt(id, path, framer.problem))
          }),
          // the header line, then the records, then the framer's final figures
          (records) =>
            Stream.concat(
              records.pipe(Stream.map((record) => ({ record, framer }))),
              Stream.suspend(() => {
                framer.finish()
                return framer.problem === undefined
                  ? Stream.make({ record: undefined, framer })
                  : Stream.fail(damagedAt(id, path, framer.problem))
              })
            )
        )
      })

    /** Scans a file into its state: the whole file, or from a checked cache's boundary on. */
    const scan = (path: string, id: Ids.SessionId | undefined, mtime: number, cache?: ScanCache.ScanCache) =>
      Effect.gen(function*() {
        let events = cache?.events ?? 0
        let turns = cache?.turns ?? 0
        let lastTime: number | undefined = cache?.lastTime ?? undefined
        let firstPrompt: SessionState["firstPrompt"] = cache?.firstPrompt ?? undefined
        const messageIds = new ScanCache.MessageIds(cache?.messageIds)
        let framer: Framer | undefined
        const index: Index = cache === undefined
          ? { positions: [], offsets: [] }
          : { positions: [...cache.positions], offsets: [...cache.offsets] }
        /** The last record when the scan skipped its parse (its time is the session's last activity). */
        let lastPlain: string | undefined
        const from = cache === undefined
          ? undefined
          : { offset: cache.bytes, position: cache.records, checked: Framing.isChecked(cache.header) }
        // One plain loop per chunk: a stream step per record would cost more than the scan's own work (W7).
        yield* Stream.runForEachChunk(framed(path, id, from), (chunk) =>
          Effect.sync(() => {
            for (const item of chunk) {
              framer = item.framer
              const record = item.record
              if (record === undefined) continue
              const group = record.group
              if (group === undefined) indexCommit(index, record.position, record.start)
              else if (group.index === 0) indexCommit(index, record.position, group.start)
              if (isPlainEvent(record.text)) {
                events++
                lastPlain = record.text
                continue
              }
              lastPlain = undefined
              const facts = factsOf(record.text)
              if (facts.kind !== "inbox") events++
              if (facts.kind === "turn") turns++
              if (facts.time !== undefined) lastTime = facts.time
              if (facts.messageId !== undefined) messageIds.add(facts.messageId)
              if (firstPrompt === undefined && facts.preview !== undefined) {
                firstPrompt = { text: facts.preview, position: record.position }
              }
            }
          }))
        if (lastPlain !== undefined) lastTime = factsOf(lastPlain).time ?? lastTime
        const headerLine = cache?.header ?? framer?.header
        const { header, order } = yield* parseHeader(id, path, headerLine)
        const state: SessionState = {
          header,
          headerLine: headerLine!,
          checked: Framing.isChecked(headerLine),
          order,
          bytes: framer!.committedEnd,
          // What was read: a file that grew meanwhile is scanned again at its next use.
          size: framer!.fed,
          mtime,
          index,
          records: framer!.records,
          events,
          turns,
          lastActivity: lastTime ?? header.createdAt,
          firstPrompt,
          messageIds
        }
        return state
      })

    /** Reads `length` bytes of `file` at `offset`; none when the file ends before. */
    const readAt = (file: FileSystem.File, offset: number, length: number) =>
      Effect.gen(function*() {
        const buffer = Buffer.alloc(length)
        yield* file.seek(offset, "start")
        let done = 0
        while (done < length) {
          const read = Number(yield* file.read(buffer.subarray(done)))
          if (read === 0) return Option.none<Buffer>()
          done += read
        }
        return Option.some(buffer)
      })

    /**
     * The scan cache of the file at `path`, when it checks out against the file: the same file (device and inode),
     * at least as long as the cache's boundary, the same header line, and the same bytes just before the boundary
     * (their digest). Anything missing, unreadable or different gives none (a full scan), never an error.
     */
    const checkedCache = (path: string) =>
      Effect.gen(function*() {
        const cache = ScanCache.decode(yield* fs.readFileString(cachePathOfFile(path)))
        if (cache === undefined) return undefined
        const headerBytes = Buffer.from(`${cache.header}\n`, "utf8")
        if (cache.bytes < headerBytes.length || cache.checkFrom < headerBytes.length) return undefined
        return yield* Effect.scoped(Effect.gen(function*() {
          const file = yield* fs.open(path, { flag: "r" })
          const info = yield* file.stat
          if (Number(info.size) < cache.bytes || info.dev !== cache.dev) return undefined
          if (Option.getOrNull(info.ino) !== cache.ino) return undefined
          const head = yield* readAt(file, 0, headerBytes.length)
          if (Option.isNone(head) || !head.value.equals(headerBytes)) return undefined
          const tail = yield* readAt(file, cache.checkFrom, cache.bytes - cache.checkFrom)
          if (Option.isNone(tail) || ScanCache.digest(tail.value) !== cache.checkDigest) return undefined
          return cache
        }))
      }).pipe(Effect.orElseSucceed(() => undefined))

    /**
     * Builds a file's state: from its checked scan cache on, or by a scan of the whole file. The mtime is taken
     * before the read: a file written meanwhile shows as changed at its next use.
     */
    const loadState = (path: string, id: Ids.SessionId | undefined) =>
      Effect.gen(function*() {
        const seen = yield* statOf(path, id)
        if (Option.isNone(seen)) {
          return yield* id === undefined ? fail(id, "NotFound", `${path} is gone`) : notFound(id)
        }
        return yield* scan(path, id, seen.value.mtime, yield* checkedCache(path))
      })

    /**
     * Writes the scan cache of a session's state (ADR 0032): its figures and indexes up to its committed end, the
     * file's identity and a digest of the bytes just before that end, read back from the file.
     */
    const writeCache = (id: Ids.SessionId, state: SessionState) =>
      Effect.scoped(Effect.gen(function*() {
        const path = pathOf(id)
        const file = yield* fs.open(path, { flag: "r" })
        const info = yield* file.stat
        const headerEnd = Buffer.byteLength(state.headerLine) + 1
        const checkFrom = Math.max(headerEnd, state.bytes - ScanCache.checkWindow)
        const tail = yield* readAt(file, checkFrom, state.bytes - checkFrom)
        if (Option.isNone(tail)) return
        const cache: ScanCache.ScanCache = {
          format: ScanCache.format,
          header: state.headerLine,
          dev: info.dev,
          ino: Option.getOrNull(info.ino),
          bytes: state.bytes,
          records: state.records,
          events: state.events,
          turns: state.turns,
          lastTime: state.lastActivity,
          firstPrompt: state.firstPrompt ?? null,
          positions: state.index.positions,
          offsets: state.index.offsets,
          checkFrom,
          checkDigest: ScanCache.digest(tail.value),
          messageIds: state.messageIds.toArray()
        }
        yield* writeAside(id, cachePathOfFile(path), ScanCache.encode(cache))
      }))

    /** Removes a session's scan cache, if any. */
    const removeCache = (id: Ids.SessionId) =>
      fs.remove(cachePathOfFile(pathOf(id))).pipe(
        Effect.catchIf(isNotFound, () => Effect.void),
        Effect.mapError(io(id, "remove the scan cache"))
      )

    /** Removes a session's scan cache unless it ends at or before `offset` (the bytes from `offset` on change). */
    const dropCacheFrom = (id: Ids.SessionId, offset: number) =>
      Effect.gen(function*() {
        const text = yield* readOptional(id, cachePathOfFile(pathOf(id)), "the scan cache").pipe(
          Effect.orElseSucceed(() => Option.some(""))
        )
        if (Option.isNone(text)) return
        const cache = ScanCache.decode(text.value)
        if (cache === undefined || cache.bytes > offset) yield* removeCache(id)
      })

    /** The current state of a session: cached while the file's size and mtime are what this process last saw. */
    const stateOf = (id: Ids.SessionId) =>
      Effect.gen(function*() {
        const path = pathOf(id)
        const seen = yield* statOf(path, id)
        if (Option.isNone(seen)) {
          yield* Ref.update(states, HashMap.remove(path))
          return yield* notFound(id)
        }
        const cached = HashMap.get(yield* Ref.get(states), path)
        if (Option.isSome(cached) && isCurrent(cached.value, seen.value)) return cached.value
        const state = yield* loadState(path, id)
        yield* Ref.update(states, HashMap.set(path, state))
        return state
      })

    const setState = (id: Ids.SessionId, state: SessionState) => Ref.update(states, HashMap.set(pathOf(id), state))

    /** The next creation order: one more than any in the directory (read once per process). */
    const takeOrder = Effect.gen(function*() {
      const known = yield* Ref.get(nextOrder)
      let next: number
      if (Option.isSome(known)) next = known.value
      else {
        const summaries = (yield* listStates).states
        next = summaries.reduce((max, s) => Math.max(max, s.order + 1), 0)
      }
      yield* Ref.set(nextOrder, Option.some(next + 1))
      return next
    })

    /** The bytes of a commit: its marker (with the checksum of its lines), then one line per record. */
    const linesOf = (records: ReadonlyArray<SessionStore.EncodedRecord>): Buffer => {
      if (records.length === 0) return Buffer.alloc(0)
      const body = Buffer.from(records.map((r) => `${r.text}\n`).join(""), "utf8")
      const head = Buffer.from(`${Framing.marker(records.length, Framing.crc32(body))}\n`, "utf8")
      return Buffer.concat([head, body], head.length + body.length)
    }

    /** A record the store could not read back (longer than the maximum record size): a `Conflict`, nothing written. */
    const sizeIssue = (records: ReadonlyArray<SessionStore.EncodedRecord>): string | undefined => {
      const big = records.find((r) => r.bytes > maxRecordBytes)
      return big === undefined
        ? undefined
        : `the record at position ${big.position} is ${big.bytes} bytes, over the store's maximum record size (${maxRecordBytes} bytes)`
    }

    const withFigures = (
      state: SessionState,
      records: ReadonlyArray<SessionStore.EncodedRecord>,
      written: number,
      mtime: number
    ): SessionState => {
      const figures = SessionStore.figuresOf(records)
      for (const record of records) {
        if (record.messageId !== undefined) state.messageIds.add(record.messageId)
      }
      if (records.length > 0) indexCommit(state.index, state.records, state.bytes)
      return {
        ...state,
        bytes: state.bytes + written,
        size: state.bytes + written,
        mtime,
        records: state.records + figures.records,
        events: state.events + figures.events,
        turns: state.turns + figures.turns,
        lastActivity: figures.lastActivity ?? state.lastActivity,
        firstPrompt: state.firstPrompt ?? figures.firstPrompt
      }
    }

    const create: Service["create"] = (header, commit) => {
      const id = header.id
      const empty = { events: [], inbox: [] }
      const issue = SessionStore.contiguityIssue(0, commit ?? empty)
      if (issue !== undefined) return fail(id, "Conflict", issue)
      const records = SessionStore.encodeCommit(commit ?? empty, 0)
      const tooBig = sizeIssue(records)
      if (tooBig !== undefined) return fail(id, "Conflict", tooBig)
      const path = pathOf(id)
      return lock.withPermits(1)(Effect.gen(function*() {
        yield* fs.makeDirectory(directory, { recursive: true }).pipe(Effect.mapError(io(id, `create ${directory}`)))
        if (Option.isSome(yield* statOf(path, id))) {
          return yield* fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`)
        }
        const order = yield* takeOrder
        const headerText = JSON.stringify({ type: "session", order, framing: Framing.framing, ...header })
        const headerLine = `${headerText}\n`
        if (Buffer.byteLength(headerText) > maxRecordBytes) {
          return yield* fail(
            id,
            "Conflict",
            `the header is over the store's maximum record size (${maxRecordBytes} bytes)`
          )
        }
        const lines = linesOf(records)
        const content = Buffer.concat([Buffer.from(headerLine, "utf8"), lines])
        // A scan cache left by a file removed behind the store's back is not this file's.
        yield* removeCache(id)
        // Written aside, synced, then linked into place: the session appears whole or not at all, and a link
        // never replaces an existing file (another process's create of the same id loses with AlreadyExists).
        const tmp = `${path}.${(yield* Random.nextInt).toString(16)}.tmp`
        yield* Effect.scoped(Effect.gen(function*() {
          const file = yield* fs.open(tmp, { flag: "wx" })
          yield* file.writeAll(content)
          yield* file.sync
        })).pipe(Effect.mapError(io(id, `write ${tmp}`)))
        const linked = yield* fs.link(tmp, path).pipe(
          Effect.as(true),
          Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "AlreadyExists", () => Effect.succeed(false)),
          Effect.ensuring(Effect.ignore(fs.remove(tmp))),
          Effect.mapError(io(id, `create ${path}`))
        )
        if (!linked) return yield* fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`)
        const made = yield* statOf(path, id)
        const initial: SessionState = {
          header,
          headerLine: headerText,
          checked: true,
          order,
          bytes: Buffer.byteLength(headerLine),
          size: Buffer.byteLength(headerLine),
          mtime: Option.match(made, { onNone: () => 0, onSome: (seen) => seen.mtime }),
          index: { positions: [], offsets: [] },
          records: 0,
          events: 0,
          turns: 0,
          lastActivity: header.createdAt,
          firstPrompt: undefined,
          messageIds: new ScanCache.MessageIds()
        }
        yield* setState(id, withFigures(initial, records, lines.length, initial.mtime))
      }))
    }

    /**
     * Runs a write under the session's writer lease: the caller's, checked by the fence; or, for a write made
     * without one, a lease taken for this write alone (`Busy` while another writer, in this process or another,
     * holds the session). `lock` is held by the caller.
     */
    const leased = <A>(
      id: Ids.SessionId,
      lease: SessionStore.Lease | undefined,
      write: Effect.Effect<A, SessionStore.SessionStoreError>
    ) =>
      lease !== undefined
        ? Effect.zipRight(leases.check(id, lockPathOf(id), lease), write)
        : Effect.flatMap(statOf(pathOf(id), id), (found) =>
          Option.isNone(found)
            ? notFound(id)
            : Effect.acquireUseRelease(
              leases.take(id, lockPathOf(id), "refuse", false),
              () => write,
              (transient) => transient.release
            ))

    /**
     * The file of session `id` open for writing: under a lease, the descriptor kept open for the lease's lifetime
     * (no open and close per commit); without one, opened in the caller's scope. The fence ran first, so a lease
     * here is this store's current one. The session file is never replaced while it exists (only appended, cut and
     * removed under the lease), so the descriptor stays the file's.
     */
    const writable = (
      id: Ids.SessionId,
      lease: SessionStore.Lease | undefined
    ): Effect.Effect<FileSystem.File, PlatformError, Scope.Scope> => {
      const path = pathOf(id)
      return lease === undefined ? fs.open(path, { flag: "r+" }) : Effect.gen(function*() {
        const kept = HashMap.get(yield* Ref.get(writers), path)
        if (Option.isSome(kept) && kept.value.lease === lease) return kept.value.file
        const lifetime = yield* leases.lifetime(lockPathOf(id), lease)
        if (Option.isNone(lifetime)) return yield* fs.open(path, { flag: "r+" })
        const file = yield* Scope.extend(fs.open(path, { flag: "r+" }), lifetime.value)
        yield* Ref.update(writers, HashMap.set(path, { lease, file }))
        // Forgotten when the lease ends, with its descriptor.
        yield* Scope.addFinalizer(
          lifetime.value,
          Ref.update(writers, (map) =>
            Option.exists(HashMap.get(map, path), (kept) => kept.lease === lease)
              ? HashMap.remove(map, path)
              : map)
        )
        return file
      })
    }

    const append: Service["append"] = (id, commit, options) =>
      lock.withPermits(1)(leased(
        id,
        options?.lease,
        Effect.gen(function*() {
          const state = yield* stateOf(id)
          const issue = SessionStore.contiguityIssue(state.events, commit)
          if (issue !== undefined) return yield* fail(id, "Conflict", issue)
          const records = SessionStore.encodeCommit(commit, state.records)
          const tooBig = sizeIssue(records)
          if (tooBig !== undefined) return yield* fail(id, "Conflict", tooBig)
          if (records.length === 0) {
            // A barrier over commits already written unsynced: fsync the file.
            if (options?.sync === true) {
              const path = pathOf(id)
              yield* Effect.scoped(Effect.flatMap(writable(id, options.lease), (file) => file.sync)).pipe(
                Effect.mapError(io(id, `sync ${path}`))
              )
            }
            return
          }
          const content = linesOf(records)
          const path = pathOf(id)
          const mtime = yield* Effect.scoped(Effect.gen(function*() {
            const file = yield* writable(id, options?.lease)
            // Bytes past the committed end are a commit torn by a crash (never acknowledged; `stateOf` saw the
            // file's size): cut them first. Only the lease holder gets here, so no other writer is committing them.
            if (state.size !== state.bytes) yield* file.truncate(state.bytes)
            yield* file.seek(state.bytes, "start")
            yield* file.writeAll(content)
            if (options?.sync === true) yield* file.sync
            return mtimeOf(yield* file.stat)
          })).pipe(Effect.mapError(io(id, `append to ${path}`)))
          yield* setState(id, withFigures(state, records, content.length, mtime))
        })
      ))

    const load: Service["load"] = (id, options) => {
      const after = options?.after ?? -1
      const path = pathOf(id)
      const records = (from?: Framing.From) =>
        framed(path, id, from).pipe(
          Stream.filterMap(({ record }) =>
            record !== undefined && record.position > after
              ? Option.some({ position: record.position, text: record.text })
              : Option.none()
          )
        )
      // From a position far into the file, the state's index (kept from the scan that built it) says where to seek:
      // `open` from a snapshot reads the records after it, not the file again (ADR 0027).
      if (after + 1 < indexEvery) return records()
      return Stream.unwrap(Effect.map(stateOf(id), (state) => records(seek(state.index, after + 1, state.checked))))
    }

    const header: Service["header"] = (id) => Effect.map(stateOf(id), (state) => state.header)

    /** Finds the record at `position` (with its framing), or none past the end. */
    const locate = (id: Ids.SessionId, state: SessionState, position: number) =>
      framed(pathOf(id), id, seek(state.index, position, state.checked)).pipe(
        Stream.filterMap(({ record }) =>
          record !== undefined && record.position === position ? Option.some(record) : Option.none()
        ),
        Stream.runHead
      )

    const truncate: Service["truncate"] = (id, position, options) => {
      const issue = SessionStore.positionIssue(position)
      if (issue !== undefined) return fail(id, "Conflict", issue)
      return lock.withPermits(1)(leased(
        id,
        options?.lease,
        Effect.gen(function*() {
          const state = yield* stateOf(id)
          const path = pathOf(id)
          if (position >= state.records) {
            // Nothing committed to drop; bytes past the committed end are a commit a crash tore: cut them now
            // (under the lease: no other writer is committing them).
            const mtime = yield* Effect.scoped(Effect.gen(function*() {
              const file = yield* fs.open(path, { flag: "r+" })
              const info = yield* file.stat
              if (Number(info.size) === state.bytes) return mtimeOf(info)
              yield* file.truncate(state.bytes)
              yield* file.sync
              return mtimeOf(yield* file.stat)
            })).pipe(Effect.mapError(io(id, `truncate ${path}`)))
            if (state.size !== state.bytes || state.mtime !== mtime) {
              yield* setState(id, { ...state, size: state.bytes, mtime })
            }
            return
          }
          const found: Option.Option<FramedRecord> = yield* locate(id, state, position)
          if (Option.isNone(found)) return
          const record = found.value
          // The first byte the cut changes (a marker rewritten in place, or the first line dropped): a scan cache
          // past it goes first, so no crash leaves a cache that covers bytes the file no longer holds.
          yield* dropCacheFrom(id, record.group === undefined ? record.start : record.group.start)
          yield* Effect.scoped(Effect.gen(function*() {
            const file = yield* fs.open(path, { flag: "r+" })
            const group = record.group
            if (group !== undefined && group.index > 0) {
              // Keep the first `index` records of the commit: rewrite its marker in place, padded to its length,
              // with the checksum of the lines it keeps (a marker of the format before checksums stays one).
              const first = group.start + group.length + 1
              const kept = group.checked ? yield* readAt(file, first, record.start - first) : Option.none<Buffer>()
              const text = Option.match(kept, {
                onNone: () => Framing.uncheckedMarker(group.index),
                onSome: (bytes) => Framing.marker(group.index, Framing.crc32(bytes))
              })
              yield* file.seek(group.start, "start")
              yield* file.writeAll(Buffer.from(Framing.padded(text, group.length), "utf8"))
              yield* file.truncate(record.start)
            } else {
              yield* file.truncate(group === undefined ? record.start : group.start)
            }
            yield* file.sync
          })).pipe(Effect.mapError(io(id, `truncate ${path}`)))
          yield* setState(id, yield* loadState(path, id))
          yield* dropSnapshotFrom(id, position)
        })
      ))
    }

    const dropSnapshotFrom = (id: Ids.SessionId, position: number) =>
      Effect.gen(function*() {
        const snapshot = yield* readSnapshot(id)
        if (Option.isSome(snapshot) && snapshot.value.position >= position) yield* removeSnapshot(id)
      })

    /**
     * The id a damaged file stands for: the id its header names when that is this file's, else its name read back
     * (see {@link idOfFileName}), else the name itself (a hashed name whose header is unreadable).
     */
    const idOfDamaged = (path: string, name: string) =>
      Effect.gen(function*() {
        const first = yield* Effect.scoped(
          Effect.flatMap(fs.open(path, { flag: "r" }), (file) => file.readAlloc(64 * 1024))
        ).pipe(Effect.orElseSucceed(() => Option.none<Uint8Array>()))
        const named = Option.flatMap(first, (bytes) => {
          const text = Buffer.from(bytes).toString("utf8")
          const line = text.slice(0, text.includes("\n") ? text.indexOf("\n") : text.length)
          try {
            const parsed: unknown = JSON.parse(line)
            return typeof parsed === "object" && parsed !== null && "id" in parsed
              ? decodeSessionId(parsed.id)
              : Option.none()
          } catch {
            return Option.none()
          }
        })
        if (Option.isSome(named) && fileName(named.value) === name) return named.value
        return idOfFileName(name) ?? Ids.SessionId.make(name)
      })

    /**
     * Every session file's state, sorted by creation order, and the files that cannot be read as sessions (a
     * header that does not decode, a file not of this format, damaged framing), each with its problem.
     */
    const listStates = Effect.gen(function*() {
      const names = yield* fs.readDirectory(directory).pipe(
        Effect.catchIf(isNotFound, () => Effect.succeed<Array<string>>([])),
        Effect.mapError(io(undefined, `read ${directory}`))
      )
      const all: Array<SessionState> = []
      const bad: Array<Store.DamagedSession> = []
      for (const name of names.filter((n) => n.endsWith(".jsonl")).sort()) {
        const path = `${directory}/${name}`
        const seen = yield* statOf(path, undefined)
        if (Option.isNone(seen)) continue
        const cached = HashMap.get(yield* Ref.get(states), path)
        if (Option.isSome(cached) && isCurrent(cached.value, seen.value)) {
          all.push(cached.value)
          continue
        }
        const known = HashMap.get(yield* Ref.get(damages), path)
        if (Option.isSome(known) && known.value.size === seen.value.size && known.value.mtime === seen.value.mtime) {
          bad.push(known.value.damaged)
          continue
        }
        const found = yield* loadState(path, undefined).pipe(
          Effect.map((state) => ({ state, problem: undefined })),
          Effect.catchIf(
            (e) => e.reason === "Corrupt",
            (e) => Effect.succeed({ state: undefined, problem: e.message })
          ),
          // a session removed while listing is simply not listed
          Effect.catchAll((e) =>
            Effect.flatMap(statOf(path, undefined), (gone) =>
              Option.isNone(gone) ? Effect.succeed(undefined) : Effect.fail(e))
          )
        )
        if (found === undefined) {
          continue
        }
        const state = found.state
        const problem = state === undefined
          ? found.problem
          : fileName(state.header.id) === name.slice(0, -".jsonl".length)
          ? undefined
          : `${path} holds session ${JSON.stringify(state.header.id)}, whose file is not this one`
        if (state !== undefined && problem === undefined) {
          yield* Ref.update(states, HashMap.set(path, state))
          all.push(state)
          continue
        }
        const damaged: Store.DamagedSession = {
          id: yield* idOfDamaged(path, name.slice(0, -".jsonl".length)),
          problem: problem ?? `${path} cannot be read`
        }
        yield* Ref.update(damages, HashMap.set(path, { ...seen.value, damaged }))
        bad.push(damaged)
      }
      return {
        states: all.sort((a, b) =>
          a.order - b.order || a.header.createdAt - b.header.createdAt
        ),
        damaged: bad
      }
    })

    const list: Service["list"] = Effect.map(listStates, ({ states: all }) =>
      all.map((state): Store.SessionSummary => ({
        header: state.header,
        events: state.events,
        turns: state.turns,
        lastActivity: state.lastActivity,
        bytes: state.bytes,
        ...(state.firstPrompt === undefined ? {} : { firstPrompt: state.firstPrompt.text })
      })))

    const damaged: Service["damaged"] = Effect.map(listStates, (found) => found.damaged)

    const lease: Service["lease"] = (id) =>
      lock.withPermits(1)(Effect.gen(function*() {
        if (Option.isNone(yield* statOf(pathOf(id), id))) return yield* notFound(id)
        return yield* leases.take(id, lockPathOf(id), "takeover", true)
      }))

    /**
     * Deletes the session's files (snapshot, scan cache, the file, then its lock), under its lease: the caller's,
     * or one taken for the removal (a lease of this process is taken over; another live writer's is `Busy`). Works
     * on a damaged session: nothing is read but the lock.
     */
    const remove: Service["remove"] = (id, options) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const path = pathOf(id)
        const lockPath = lockPathOf(id)
        if (Option.isNone(yield* statOf(path, id))) return yield* notFound(id)
        const removal = Effect.gen(function*() {
          yield* removeSnapshot(id)
          yield* removeCache(id)
          yield* fs.remove(path).pipe(Effect.mapError(io(id, `remove ${path}`)))
          yield* Ref.update(states, HashMap.remove(path))
          yield* Ref.update(damages, HashMap.remove(path))
          // Every lease of this store on the session is fenced; the lock goes last.
          yield* leases.forget(lockPath)
          yield* fs.remove(lockPath).pipe(
            Effect.catchIf(isNotFound, () => Effect.void),
            Effect.mapError(io(id, `remove ${lockPath}`))
          )
        })
        const lease = options?.lease
        return yield* lease !== undefined
          ? Effect.zipRight(leases.check(id, lockPath, lease), removal)
          : Effect.acquireUseRelease(
            leases.take(id, lockPath, "takeover", false),
            () => removal,
            (transient) => transient.release
          )
      }))

    const hasMessage: Service["hasMessage"] = (id, messageId) =>
      Effect.map(stateOf(id), (state) => state.messageIds.has(messageId))

    /** Removes the snapshot's head, then its body (a body without its head is never read). */
    const removeSnapshot = (id: Ids.SessionId) =>
      Effect.forEach([snapshotPathOf(id), snapshotBodyPathOf(id)], (path) =>
        fs.remove(path).pipe(
          Effect.catchIf(isNotFound, () => Effect.void),
          Effect.mapError(io(id, "remove the snapshot"))
        ), { discard: true })

    const readOptional = (id: Ids.SessionId, path: string, what: string) =>
      fs.readFileString(path).pipe(
        Effect.map(Option.some),
        Effect.catchIf(isNotFound, () => Effect.succeed(Option.none<string>())),
        Effect.mapError(io(id, `read ${what}`))
      )

    /** The snapshot's head file, decoded; none when there is none or it is of the first format. */
    const readSnapshot = (id: Ids.SessionId) =>
      readOptional(id, snapshotPathOf(id), "the snapshot").pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeed(Option.none<typeof SnapshotHeadFile.Type>()),
          onSome: (text) => {
            const decoded = decodeSnapshotHead(text)
            if (decoded._tag === "Right") return Effect.succeed(Option.some(decoded.right))
            if (decodeFirstFormat(text)._tag === "Right") {
              return Effect.succeed(Option.none<typeof SnapshotHeadFile.Type>())
            }
            return fail(
              id,
              "Corrupt",
              `the snapshot of session ${JSON.stringify(id)} is invalid: ${decoded.left.message}`
            )
          }
        }))
      )

    /**
     * The body file starts with a line naming the head it was saved with (its head file's JSON, and whether the body
     * follows as it is or as its JSON text), then the body: a body saved for another head (a crash between the two
     * renames of a save) reads as none. The body is written as it is when UTF-8 keeps it exactly (well-formed: every
     * text `JSON.stringify` makes, so every body the log writes), else as its JSON text.
     */
    const bodyLine = (saved: typeof SnapshotHeadFile.Type, json: boolean) =>
      `${JSON.stringify(json ? { ...saved, json } : saved)}\n`

    const bodyFile = (saved: typeof SnapshotHeadFile.Type, body: string) =>
      isWellFormed(body) ? bodyLine(saved, false) + body : bodyLine(saved, true) + JSON.stringify(body)

    const readBody = (id: Ids.SessionId, saved: typeof SnapshotHeadFile.Type) =>
      Effect.map(readOptional(id, snapshotBodyPathOf(id), "the snapshot's body"), (found) => {
        if (Option.isNone(found)) return found
        const text = found.value
        const raw = bodyLine(saved, false)
        if (text.startsWith(raw)) return Option.some(text.slice(raw.length))
        const json = bodyLine(saved, true)
        if (!text.startsWith(json)) return Option.none<string>()
        try {
          const parsed: unknown = JSON.parse(text.slice(json.length))
          return typeof parsed === "string" ? Option.some(parsed) : Option.none<string>()
        } catch {
          return Option.none<string>()
        }
      })

    /** Writes a file aside, then renames it into place. */
    const writeAside = (id: Ids.SessionId, path: string, content: string) =>
      Effect.flatMap(Random.nextInt, (n) => {
        const tmp = `${path}.${n.toString(16)}.tmp`
        return fs.writeFileString(tmp, content).pipe(
          Effect.zipRight(fs.rename(tmp, path)),
          Effect.mapError(io(id, `write ${path}`))
        )
      })

    const saveSnapshot: Service["saveSnapshot"] = (id, snapshot, options) => {
      const issue = SessionStore.snapshotIssue(snapshot)
      if (issue !== undefined) return fail(id, "Conflict", issue)
      return lock.withPermits(1)(leased(
        id,
        options?.lease,
        Effect.gen(function*() {
          const state = yield* stateOf(id)
          if (snapshot.position >= state.records) {
            return yield* fail(
              id,
              "Conflict",
              `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${state.records})`
            )
          }
          const { body, head, position, seq } = snapshot
          const saved = { seq, position, head }
          // The body first, then the head: a crash in between leaves the old head, whose body now reads as none.
          yield* writeAside(id, snapshotBodyPathOf(id), bodyFile(saved, body))
          yield* writeAside(id, snapshotPathOf(id), JSON.stringify(saved))
          // Then the scan cache, while a snapshot is written anyway (never on an append). It only saves later
          // processes a scan: a failure leaves the previous cache, which is checked before any use.
          yield* Effect.ignore(writeCache(id, state))
        })
      ))
    }

    const loadSnapshot: Service["loadSnapshot"] = (id) =>
      Effect.zipRight(
        stateOf(id),
        Effect.map(readSnapshot(id), (found) =>
          Option.map(found, (saved): SessionStore.SnapshotHead => ({
            ...saved,
            body: lock.withPermits(1)(readBody(id, saved))
          })))
      )

    const service: Service = {
      commitMode: "write-behind",
      create,
      append,
      load,
      header,
      truncate,
      list,
      damaged,
      lease,
      remove,
      hasMessage,
      saveSnapshot,
      loadSnapshot
    }
    return service
  })
