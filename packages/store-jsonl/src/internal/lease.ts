/**
 * The JSONL store's writer lease (ADR 0044): a lock file `<name>.lock` beside a session's file, holding JSON
 * `{token, pid, host, since, start}` (`start`: when the holder's process started, so a later process that got the
 * same pid is not taken for it). The lock is made whole aside and linked into place (a link never replaces a file:
 * exclusive across processes, and never seen half written). The holder keeps the file open (so its inode cannot be
 * reused while it holds it) and renews its mtime every third of the lease time.
 *
 * A holder is gone when it ran on this host and its process no longer runs (or another process now has its pid),
 * when its lock was not renewed within the lease time, or when its lock does not decode (no writer's); its lock is then taken over: renamed aside to a unique
 * name, checked to be the very file judged gone (inode, mtime and content), deleted, and the lock made anew. Two
 * takers never both win: one rename succeeds, and what the other renames (the winner's new lock) fails the check
 * and is linked back.
 *
 * The fence: a write under a lease checks that this store still holds it (in-process) and that the lock file is
 * still the one it made (one `stat`: same device and inode).
 */
import type { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { type Ids, Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Clock, Duration, Effect, Exit, Fiber, HashMap, Option, Random, Ref, Schema, Scope } from "effect"
import * as os from "node:os"
import { performance } from "node:perf_hooks"

/** What a lock file holds. */
const LockContent = Schema.Struct({
  token: Schema.Int,
  pid: Schema.NonNegativeInt,
  host: Schema.String,
  since: Schema.NonNegativeInt,
  /** When the holder's process started (epoch ms); absent in a lock of another writer of this format. */
  start: Schema.optional(Schema.Number)
})
type LockContent = typeof LockContent.Type
const decodeLock = Schema.decodeUnknownOption(Schema.parseJson(LockContent))

/** This process as a lock names it. */
interface Self {
  readonly pid: number
  readonly host: string
  /** When this process started: a constant of the process, not a reading of the clock. */
  readonly start: number
}

/** This process. */
const self: Effect.Effect<Self> = Effect.sync(() => ({
  pid: process.pid,
  host: os.hostname(),
  start: Math.round(performance.timeOrigin)
}))

/** Whether a process runs on this host: `kill(pid, 0)` fails with `ESRCH` only when none has this pid. */
const runs = (pid: number): Effect.Effect<boolean> =>
  Effect.sync(() => {
    if (pid <= 0) return true
    try {
      process.kill(pid, 0)
      return true
    } catch (e) {
      return !(typeof e === "object" && e !== null && "code" in e && e.code === "ESRCH")
    }
  })

/** A lock file as read: its bytes, identity and age, and its content when it decodes. */
interface Seen {
  readonly text: string
  readonly dev: number
  readonly ino: number | null
  readonly mtime: number
  readonly content: LockContent | undefined
}

/** A lease this store holds. */
interface Held {
  readonly lease: SessionStore.Lease
  readonly path: string
  readonly dev: number
  readonly ino: number | null
  /** Owns the open lock file. */
  readonly scope: Scope.CloseableScope
  readonly renewal: Fiber.RuntimeFiber<void> | undefined
}

/** How a take treats a lock this very process holds. */
type Mode =
  /** `lease`: take it over (the earlier lease is fenced). */
  | "takeover"
  /** A write made without a lease: refuse it (`Busy`), the session is leased. */
  | "refuse"

export interface Options {
  readonly leaseTime: Duration.Duration
}

export interface Leases {
  /** Takes the lease of the session whose lock is `path`: renewed until released when `renew`. */
  readonly take: (
    id: Ids.SessionId,
    path: string,
    mode: Mode,
    renew: boolean
  ) => Effect.Effect<SessionStore.Lease, SessionStore.SessionStoreError>
  /** The fence: fails with `Busy` unless `lease` is this store's current lease of the session at `path`. */
  readonly check: (
    id: Ids.SessionId,
    path: string,
    lease: SessionStore.Lease
  ) => Effect.Effect<void, SessionStore.SessionStoreError>
  /**
   * The scope `lease` lives in while it is this store's current lease of `path` (closed when it ends: released,
   * taken over, fenced); none otherwise. What a writer keeps open for a lease's sake belongs there.
   */
  readonly lifetime: (path: string, lease: SessionStore.Lease) => Effect.Effect<Option.Option<Scope.Scope>>
  /** Forgets every lease of `path` this store holds (its session was removed): they are fenced. */
  readonly forget: (path: string) => Effect.Effect<void>
}

const isSystem = (reason: string) => (e: PlatformError) => e._tag === "SystemError" && e.reason === reason

/**
 * The leases of one store. Renewals run in the scope, and closing it gives up every lease still held (the process
 * is ending: the next writer need not wait for the lease time).
 */
export const make = (fs: FileSystem.FileSystem, options: Options): Effect.Effect<Leases, never, Scope.Scope> =>
  Effect.gen(function*() {
    const me = yield* self
    const storeScope = yield* Effect.scope
    const held = yield* Ref.make(HashMap.empty<string, Held>())
    const tokens = yield* Ref.make(0)
    const leaseMillis = Duration.toMillis(options.leaseTime)
    const renewEvery = Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))

    const busy = (id: Ids.SessionId, message: string, holder?: Store.LeaseHolder) =>
      new SessionStore.SessionStoreError(
        holder === undefined ? { reason: "Busy", message, id } : { reason: "Busy", message, id, holder }
      )
    const io = (id: Ids.SessionId, what: string) => (e: PlatformError) =>
      new SessionStore.SessionStoreError({ reason: "Io", message: `cannot ${what}: ${e.message}`, id })

    const holderOf = (seen: Seen): Store.LeaseHolder =>
      seen.content === undefined
        ? { pid: 0, host: "unknown", since: Math.max(0, Math.floor(seen.mtime)) }
        : { pid: seen.content.pid, host: seen.content.host, since: seen.content.since }

    const leasedBy = (id: Ids.SessionId, seen: Seen) => {
      const holder = holderOf(seen)
      return busy(id, `session ${JSON.stringify(id)} is being written by ${Store.describeHolder(holder)}`, holder)
    }

    /** Reads a lock file through one descriptor (its bytes and identity agree); none when there is none. */
    const read = (path: string) =>
      Effect.scoped(Effect.gen(function*() {
        const file = yield* fs.open(path, { flag: "r" })
        const info = yield* file.stat
        const bytes = yield* file.readAlloc(info.size)
        const text = Option.match(bytes, { onNone: () => "", onSome: (b) => Buffer.from(b).toString("utf8") })
        const seen: Seen = {
          text,
          dev: info.dev,
          ino: Option.getOrNull(info.ino),
          mtime: Option.match(info.mtime, { onNone: () => 0, onSome: (d) => d.getTime() }),
          content: Option.getOrUndefined(decodeLock(text))
        }
        return Option.some(seen)
      })).pipe(Effect.catchIf(isSystem("NotFound"), () => Effect.succeed(Option.none<Seen>())))

    /** Whether the lock's holder is this process, another live writer, or gone. */
    const judge = (seen: Seen) =>
      Effect.gen(function*() {
        const content = seen.content
        // Every writer links its lock into place whole: one that does not decode is no writer's.
        if (content === undefined) return "gone" as const
        if (content.host === me.host) {
          if (content.pid === me.pid) return content.start === me.start ? "self" as const : "gone" as const
          if (!(yield* runs(content.pid))) return "gone" as const
        }
        const now = yield* Clock.currentTimeMillis
        return now - seen.mtime > leaseMillis ? "gone" as const : "live" as const
      })

    const unique = (path: string, suffix: string) =>
      Effect.map(Random.nextInt, (n) => `${path}.${me.pid}-${(n >>> 0).toString(16)}.${suffix}`)

    const contentOf = (token: number, since: number): string =>
      JSON.stringify({ token, pid: me.pid, host: me.host, since, start: me.start })

    /**
     * Writes a lock aside and puts it at `path`: linked (fails when a lock is there: none) or renamed over it (the
     * lock this process holds, replaced whole). The file stays open in `scope`.
     */
    const place = (path: string, text: string, scope: Scope.CloseableScope, replace: boolean) =>
      Effect.gen(function*() {
        const tmp = yield* unique(path, "tmp")
        const file = yield* Scope.extend(fs.open(tmp, { flag: "wx" }), scope)
        const placed = yield* Effect.gen(function*() {
          yield* file.writeAll(Buffer.from(text, "utf8"))
          if (replace) {
            yield* fs.rename(tmp, path)
            return true
          }
          return yield* fs.link(tmp, path).pipe(
            Effect.as(true),
            Effect.catchIf(isSystem("AlreadyExists"), () => Effect.succeed(false))
          )
        }).pipe(Effect.ensuring(Effect.ignore(fs.remove(tmp))))
        if (!placed) return Option.none()
        const info = yield* file.stat
        return Option.some({ dev: info.dev, ino: Option.getOrNull(info.ino) })
      })

    /**
     * Takes a gone holder's lock away: renames it aside, checks it is the file judged gone, deletes it. A lock that
     * changed meanwhile (renewed, or already replaced by another taker) is linked back.
     */
    const steal = (path: string, seen: Seen) =>
      Effect.gen(function*() {
        const aside = yield* unique(path, "stale")
        const moved = yield* fs.rename(path, aside).pipe(
          Effect.as(true),
          Effect.catchIf(isSystem("NotFound"), () => Effect.succeed(false))
        )
        if (!moved) return
        const now = yield* read(aside)
        const same = Option.isSome(now) && now.value.text === seen.text && now.value.ino === seen.ino &&
          now.value.dev === seen.dev && now.value.mtime === seen.mtime
        if (!same) yield* Effect.ignore(fs.link(aside, path))
        yield* Effect.ignore(fs.remove(aside))
      })

    /** Stops a held lease: its renewal, its open lock file. */
    const stop = (h: Held) =>
      Effect.zipRight(
        h.renewal === undefined ? Effect.void : Fiber.interrupt(h.renewal),
        Scope.close(h.scope, Exit.void)
      )

    /** Whether the lock file at `path` is still the one `h` made. */
    const stillOurs = (h: Held) =>
      fs.stat(h.path).pipe(
        Effect.map((info) => info.dev === h.dev && Option.getOrNull(info.ino) === h.ino),
        Effect.catchIf(isSystem("NotFound"), () => Effect.succeed(false))
      )

    /** Renews the lock's mtime every third of the lease time, while it is this lease's and its file is ours. */
    const renewal = (path: string, lease: SessionStore.Lease) => {
      const once = Effect.gen(function*() {
        const current = HashMap.get(yield* Ref.get(held), path)
        if (Option.isNone(current) || current.value.lease !== lease || !(yield* stillOurs(current.value))) return false
        const now = yield* Clock.currentTimeMillis
        yield* Effect.ignore(fs.utimes(path, new Date(now), new Date(now)))
        return true
      }).pipe(Effect.orElseSucceed(() => true))
      return Effect.asVoid(Effect.repeat(Effect.delay(once, renewEvery), { while: (go) => go }))
    }

    /** Gives a lease up: its lock file is deleted if it is still this lease's. Never fails. */
    const release = (path: string, lease: SessionStore.Lease) =>
      Effect.gen(function*() {
        const mine = yield* Ref.modify(held, (map) => {
          const h = HashMap.get(map, path)
          return Option.isSome(h) && h.value.lease === lease
            ? [h, HashMap.remove(map, path)] as const
            : [Option.none<Held>(), map] as const
        })
        if (Option.isNone(mine)) return
        if (yield* stillOurs(mine.value)) yield* Effect.ignore(fs.remove(path))
        yield* stop(mine.value)
      }).pipe(Effect.catchAll(() => Effect.void))

    const take: Leases["take"] = (id, path, mode, renew) =>
      Effect.gen(function*() {
        let last: Seen | undefined
        let floor = 0
        // A few rounds: a lock can vanish or change hands between reading and taking it.
        for (let attempt = 0; attempt < 4; attempt++) {
          const seen = yield* read(path)
          let replace = false
          if (Option.isSome(seen)) {
            last = seen.value
            const verdict = yield* judge(seen.value)
            if (verdict === "live") return yield* Effect.fail(leasedBy(id, seen.value))
            if (verdict === "self" && mode === "refuse") {
              return yield* Effect.fail(
                busy(
                  id,
                  `session ${JSON.stringify(id)} is leased by a writer of this process: a write must carry its lease`,
                  holderOf(seen.value)
                )
              )
            }
            floor = Math.max(floor, seen.value.content?.token ?? 0)
            if (verdict === "gone") {
              yield* steal(path, seen.value)
              continue
            }
            replace = true
          }
          const now = yield* Clock.currentTimeMillis
          const since = Math.max(0, Math.floor(now))
          const token = yield* Ref.modify(tokens, (n) => {
            const next = Math.max(n, floor) + 1
            return [next, next] as const
          })
          const scope = yield* Scope.make()
          const placed = yield* place(path, contentOf(token, since), scope, replace).pipe(
            Effect.tapErrorCause(() => Scope.close(scope, Exit.void))
          )
          if (Option.isNone(placed)) {
            yield* Scope.close(scope, Exit.void)
            continue
          }
          // Its release and renewal compare identities: the lease refers to itself.
          const lease: SessionStore.Lease = {
            id,
            token,
            holder: { pid: me.pid, host: me.host, since },
            release: Effect.suspend(() => release(path, lease))
          }
          const fiber = renew ? yield* Effect.forkIn(renewal(path, lease), storeScope) : undefined
          const earlier = yield* Ref.modify(held, (map) => {
            const h: Held = { lease, path, dev: placed.value.dev, ino: placed.value.ino, scope, renewal: fiber }
            return [HashMap.get(map, path), HashMap.set(map, path, h)] as const
          })
          if (Option.isSome(earlier)) yield* stop(earlier.value)
          return lease
        }
        return yield* Effect.fail(
          last === undefined
            ? busy(id, `session ${JSON.stringify(id)}: its writer lease changed hands while it was being taken`)
            : leasedBy(id, last)
        )
      }).pipe(
        Effect.catchTags({
          SystemError: (e) => Effect.fail(io(id, `take the writer lease ${path}`)(e)),
          BadArgument: (e) => Effect.fail(io(id, `take the writer lease ${path}`)(e))
        })
      )

    const check: Leases["check"] = (id, path, lease) =>
      Effect.gen(function*() {
        const current = HashMap.get(yield* Ref.get(held), path)
        if (Option.isNone(current) || current.value.lease !== lease || lease.id !== id) {
          return yield* Effect.fail(
            busy(id, `the writer lease of session ${JSON.stringify(id)} was released or taken over by a later writer`)
          )
        }
        if (yield* stillOurs(current.value)) return
        // Taken over by another process (this one was judged gone): fenced for good.
        yield* Ref.update(
          held,
          (map) => Option.exists(HashMap.get(map, path), (h) => h === current.value) ? HashMap.remove(map, path) : map
        )
        yield* stop(current.value)
        const now = yield* read(path)
        const taken = `the writer lease of session ${JSON.stringify(id)} was taken over`
        return yield* Effect.fail(
          Option.match(now, {
            onNone: () => busy(id, taken),
            onSome: (seen) => {
              const holder = holderOf(seen)
              return busy(id, `${taken} by ${Store.describeHolder(holder)}`, holder)
            }
          })
        )
      }).pipe(Effect.catchTags({
        SystemError: (e) => Effect.fail(io(id, `check the writer lease ${path}`)(e)),
        BadArgument: (e) => Effect.fail(io(id, `check the writer lease ${path}`)(e))
      }))

    const lifetime: Leases["lifetime"] = (path, lease) =>
      Effect.map(
        Ref.get(held),
        (map) =>
          Option.map(Option.filter(HashMap.get(map, path), (h) => h.lease === lease), (h): Scope.Scope => h.scope)
      )

    const forget: Leases["forget"] = (path) =>
      Effect.flatMap(
        Ref.modify(held, (map) => [HashMap.get(map, path), HashMap.remove(map, path)] as const),
        Option.match({ onNone: () => Effect.void, onSome: stop })
      )

    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(held), (map) => Effect.forEach(HashMap.values(map), (h) => h.lease.release))
    )

    return { take, check, lifetime, forget }
  })
