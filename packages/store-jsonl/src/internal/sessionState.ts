/**
 * What this process knows about one session file — its header, committed end, figures, message ids and a sparse
 * index of commit offsets — and how that knowledge is built: by a scan of the file (from a checked scan cache on,
 * ADR 0032), then kept up to date by this process's appends. A file whose size or mtime differs from what this
 * process last saw (another process wrote it) is scanned again.
 */
import { type Ids, Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Chunk, Effect, HashMap, Option, Ref, Schema, Stream } from "effect"
import { type Context, readAt } from "./context.js"
import * as Framing from "./framing.js"
import { Framer } from "./framing.js"
import * as ScanCache from "./scanCache.js"

type Service = SessionStore.Service

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
export interface SessionState {
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

/** Whether a state is still the file's: the same size and mtime as when this process last saw it. */
export const isCurrent = (state: SessionState, seen: { readonly size: number; readonly mtime: number }): boolean =>
  state.size === seen.size && state.mtime === seen.mtime

const decodeHeader = Schema.decodeUnknownEither(Store.SessionHeader)

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

/** The state after this process appended `records` (`written` bytes) to the file. */
export const withFigures = (
  state: SessionState,
  records: ReadonlyArray<SessionStore.EncodedRecord>,
  written: number,
  mtime: number
): SessionState => {
  for (const record of records) {
    if (record.messageId !== undefined) state.messageIds.add(record.messageId)
  }
  if (records.length > 0) indexCommit(state.index, state.records, state.bytes)
  // A state is its session's figures, `bytes` counting the file.
  const figures = SessionStore.addFigures(state, { ...SessionStore.figuresOf(records), bytes: written })
  return {
    ...state,
    bytes: figures.bytes,
    size: figures.bytes,
    mtime,
    records: figures.records,
    events: figures.events,
    turns: figures.turns,
    lastActivity: figures.lastActivity ?? state.lastActivity,
    firstPrompt: figures.firstPrompt
  }
}

/** The reads of {@link make}. */
export type Reads = Effect.Effect.Success<ReturnType<typeof make>>

/** Reads, scans and caches of session files over the store's context. */
export const make = (ctx: Context) =>
  Effect.gen(function*() {
    const states = yield* Ref.make(HashMap.empty<string, SessionState>())
    const {
      cachePathOfFile,
      error,
      fail,
      fs,
      io,
      isNotFound,
      maxRecordBytes,
      notFound,
      pathOf,
      readOptional,
      statOf,
      writeAside
    } = ctx

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

    /** Finds the record at `position` (with its framing), or none past the end. */
    const locate = (id: Ids.SessionId, state: SessionState, position: number) =>
      framed(pathOf(id), id, seek(state.index, position, state.checked)).pipe(
        Stream.filterMap(({ record }) =>
          record !== undefined && record.position === position ? Option.some(record) : Option.none()
        ),
        Stream.runHead
      )

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

    /**
     * Runs `write` on the session's current state, under the store's lock and the session's writer lease (see
     * `context.ts`): how every write to a stored session starts.
     */
    const writing = <A>(
      id: Ids.SessionId,
      lease: SessionStore.Lease | undefined,
      write: (state: SessionState) => Effect.Effect<A, SessionStore.SessionStoreError>
    ) => ctx.lock.withPermits(1)(ctx.leased(id, lease, Effect.flatMap(stateOf(id), write)))

    const header: Service["header"] = (id) => Effect.map(stateOf(id), (state) => state.header)

    const hasMessage: Service["hasMessage"] = (id, messageId) =>
      Effect.map(stateOf(id), (state) => state.messageIds.has(messageId))

    return {
      framed,
      loadState,
      writeCache,
      removeCache,
      dropCacheFrom,
      stateOf,
      setState,
      writing,
      locate,
      load,
      header,
      hasMessage,
      states
    }
  })
