/**
 * What every part of the JSONL store shares: the directory and its file names, the store's failures, the small file
 * operations, the per-process caches, and the guard every write runs under (the session's writer lease, ADR 0044).
 */
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Ids } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Duration, Effect, HashMap, Option, Random, Ref, Schema, Scope } from "effect"
import { createHash } from "node:crypto"
import * as Framing from "./framing.js"
import * as Leases from "./lease.js"

type ErrorReason = SessionStore.SessionStoreErrorReason

/** A file's mtime in epoch ms (0 where the platform has none). */
export const mtimeOf = (info: FileSystem.File.Info): number =>
  Option.match(info.mtime, { onNone: () => 0, onSome: (date) => date.getTime() })

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

const decodeSessionId = Schema.decodeUnknownOption(Ids.SessionId)

/**
 * The session id a file name stands for, when the name can be read back (see {@link fileName}; a name cut and
 * completed with a hash cannot).
 */
export const idOfFileName = (name: string): Ids.SessionId | undefined => {
  if (name.includes("~~")) return undefined
  const id = name.replace(/~([0-9a-f]{4})/g, (_, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
  return fileName(id) === name ? Option.getOrUndefined(decodeSessionId(id)) : undefined
}

export interface Options {
  readonly directory: string
  readonly maxRecordBytes?: number | undefined
  readonly leaseTime?: Duration.DurationInput | undefined
}

/** {@link make}'s record: the store's shared state and helpers. */
export type Context = Effect.Effect.Success<ReturnType<typeof make>>

/** Reads `length` bytes of `file` at `offset`; none when the file ends before. */
export const readAt = (file: FileSystem.File, offset: number, length: number) =>
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

/** The store's shared state and helpers over `options.directory`; dies on options that cannot work. */
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

    const readOptional = (id: Ids.SessionId, path: string, what: string) =>
      fs.readFileString(path).pipe(
        Effect.map(Option.some),
        Effect.catchIf(isNotFound, () => Effect.succeed(Option.none<string>())),
        Effect.mapError(io(id, `read ${what}`))
      )

    /** Writes a file aside, then renames it into place. */
    const writeAside = (id: Ids.SessionId, path: string, content: string) =>
      Effect.flatMap(Random.nextInt, (n) => {
        const tmp = `${path}.${n.toString(16)}.tmp`
        return fs.writeFileString(tmp, content).pipe(
          Effect.zipRight(fs.rename(tmp, path)),
          Effect.mapError(io(id, `write ${path}`))
        )
      })

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

    return {
      fs,
      directory,
      maxRecordBytes,
      lock,
      leases,
      pathOf,
      snapshotPathOf,
      snapshotBodyPathOf,
      lockPathOf,
      cachePathOfFile,
      error,
      fail,
      notFound,
      io,
      isNotFound,
      statOf,
      readOptional,
      writeAside,
      leased,
      writable
    }
  })
