/**
 * The writes of a session file: `create` (written aside, synced, linked into place), `append` (one commit: a
 * marker with the checksum of its lines, then one line per record) and `truncate` (a torn or dropped tail cut under
 * the lease). Every write happens under the session's writer lease (see `context.ts`).
 */
import { SessionStore } from "@harness/session"
import { Effect, Option, Random } from "effect"
import { type Context, mtimeOf, readAt } from "./context.js"
import * as Framing from "./framing.js"
import type { FramedRecord } from "./framing.js"
import * as ScanCache from "./scanCache.js"
import { type SessionState, withFigures } from "./sessionState.js"
import type * as SessionStates from "./sessionState.js"
import type * as Snapshots from "./snapshots.js"

type Service = SessionStore.Service

/** The writes over the store's context, its session states, snapshots and creation order. */
export const make = (
  ctx: Context,
  sessions: SessionStates.Reads,
  snapshots: Snapshots.Snapshots,
  takeOrder: Effect.Effect<number, SessionStore.SessionStoreError>
) => {
  const { directory, fail, fs, io, lock, maxRecordBytes, pathOf, statOf, writable } = ctx
  const { dropCacheFrom, loadState, locate, removeCache, setState, writing } = sessions
  const { dropSnapshotFrom } = snapshots

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

  const append: Service["append"] = (id, commit, options) =>
    writing(id, options?.lease, (state) =>
      Effect.gen(function*() {
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
      }))

  const truncate: Service["truncate"] = (id, position, options) => {
    const issue = SessionStore.positionIssue(position)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    return writing(id, options?.lease, (state) =>
      Effect.gen(function*() {
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
      }))
  }

  return { create, append, truncate }
}
