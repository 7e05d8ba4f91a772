/**
 * The directory as a whole: every session file's state in creation order and the files that cannot be read as
 * sessions, the next creation order, and the operations on a whole session (`lease`, `remove`).
 */
import { Ids, type Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Effect, HashMap, Option, Ref, Schema } from "effect"
import { type Context, fileName, idOfFileName } from "./context.js"
import * as SessionState from "./sessionState.js"
import type * as Snapshots from "./snapshots.js"

type Service = SessionStore.Service

/** A session file this process could not read, as of its size and mtime. */
interface Damage {
  readonly size: number
  readonly mtime: number
  readonly damaged: Store.DamagedSession
}

const decodeSessionId = Schema.decodeUnknownOption(Ids.SessionId)

/** The directory's listing over the store's context, its session states and snapshots. */
export const make = (ctx: Context, sessions: SessionState.Reads, snapshots: Snapshots.Snapshots) =>
  Effect.gen(function*() {
    const { directory, fs, io, isNotFound, leases, lock, lockPathOf, notFound, pathOf, statOf } = ctx
    const damages = yield* Ref.make(HashMap.empty<string, Damage>())
    const nextOrder = yield* Ref.make(Option.none<number>())
    const { states } = sessions
    const { loadState, removeCache } = sessions
    const { removeSnapshot } = snapshots

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
      const all: Array<SessionState.SessionState> = []
      const bad: Array<Store.DamagedSession> = []
      for (const name of names.filter((n) => n.endsWith(".jsonl")).sort()) {
        const path = `${directory}/${name}`
        const seen = yield* statOf(path, undefined)
        if (Option.isNone(seen)) continue
        const cached = HashMap.get(yield* Ref.get(states), path)
        if (Option.isSome(cached) && SessionState.isCurrent(cached.value, seen.value)) {
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
            Effect.flatMap(
              statOf(path, undefined),
              (gone) => Option.isNone(gone) ? Effect.succeed(undefined) : Effect.fail(e)
            )
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
        states: all.sort((a, b) => a.order - b.order || a.header.createdAt - b.header.createdAt),
        damaged: bad
      }
    })

    const list: Service["list"] = Effect.map(
      listStates,
      ({ states: all }) => all.map((state) => SessionStore.summaryOf(state.header, state, state.bytes))
    )

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

    return { list, damaged, lease, remove, takeOrder }
  })
