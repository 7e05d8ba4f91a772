/**
 * One live agent per session, opened on first use from the session store and kept until the server's scope closes
 * (or the session is removed). Each agent lives in its own child scope of the server's, which holds the session's
 * writer lease (ADR 0044) and disposes the agent, then closes its log, when it ends. A pool in front of runners
 * (`agents`) opens no log: it takes each session's agent from elsewhere and only creates and removes sessions in the
 * store (R247).
 */
import type { LanguageModel } from "@effect/ai"
import { Agent } from "@harness/agent"
import { Ids } from "@harness/domain"
import type { Goals } from "@harness/goal"
import { SessionLog, SessionStore } from "@harness/session"
import type { SessionLogError } from "@harness/session"
import { Clock, Effect, ExecutionStrategy, Exit, Option, Scope, SynchronizedRef } from "effect"
import { SessionConflict, SessionNotFound, StoreUnavailable } from "../ServerError.js"

/** An agent and, when it has one, its goal service (the goal routes need it). */
export interface Hosted {
  readonly agent: Agent.Service
  readonly goals?: Goals.Service | undefined
}

/** How the server builds an agent over an opened session log: the agent, or the agent with its goals. */
export type MakeAgent<R> = (
  log: SessionLog.Service
) => Effect.Effect<Agent.Service | Hosted, unknown, R | Scope.Scope>

/** How a server in front of runners takes a session's agent (the runners host it; nothing here opens its log). */
export type Agents<R> = (id: Ids.SessionId) => Effect.Effect<Agent.Service | Hosted, unknown, R | Scope.Scope>

/** Where the pool's agents come from: built here over each session's log, or taken from elsewhere. */
export type Source<R> = { readonly makeAgent: MakeAgent<R> } | { readonly agents: Agents<R> }

/** The default: a plain agent over the log (the model comes from the context). */
export const defaultAgent: MakeAgent<LanguageModel.LanguageModel> = (log) => Agent.make({ session: log })

interface Entry {
  readonly agent: Agent.Service
  readonly goals: Goals.Service | undefined
  readonly scope: Scope.CloseableScope
}

/** The pool's failures. */
type PoolError = SessionNotFound | SessionConflict | StoreUnavailable

export interface Pool {
  /** The session's live agent, opened from the store on first use. */
  readonly get: (id: Ids.SessionId) => Effect.Effect<Agent.Service, PoolError>
  /** The goal service of the session's agent (`undefined` when this server's agents have none). */
  readonly goals: (id: Ids.SessionId) => Effect.Effect<Goals.Service | undefined, PoolError>
  /** Creates a session (and its agent); `exists` when the id is taken. */
  readonly create: (
    options: { readonly id?: Ids.SessionId | undefined; readonly title?: string | undefined }
  ) => Effect.Effect<Ids.SessionId, PoolError>
  /** Disposes the session's agent (if open) and deletes the session from the store. */
  readonly remove: (id: Ids.SessionId) => Effect.Effect<void, PoolError>
}

const logError = (id: Ids.SessionId, what: string) => (e: SessionLogError.SessionLogError): PoolError =>
  e.reason === "busy"
    ? new SessionConflict({ id, reason: "busy", message: `session ${id} is written by another process: ${e.message}` })
    : new StoreUnavailable({ message: `cannot ${what} session ${id}: ${e.message}` })

const storeError = (id: Ids.SessionId, what: string) => (e: SessionStore.SessionStoreError): PoolError => {
  switch (e.reason) {
    case "NotFound":
      return new SessionNotFound({ id, message: `no session ${id} is stored` })
    case "AlreadyExists":
      return new SessionConflict({ id, reason: "exists", message: `session ${id} exists already` })
    case "Busy":
      return new SessionConflict({ id, reason: "busy", message: `session ${id} is written by another process` })
    default:
      return new StoreUnavailable({ message: `cannot ${what} session ${id}: ${e.message}` })
  }
}

/** Builds the pool in the current scope; closing it disposes every agent and gives every lease up. */
export const make = <R>(
  source: Source<R>
): Effect.Effect<Pool, never, Scope.Scope | SessionStore.SessionStore | R> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const store = yield* SessionStore.SessionStore
    const context = yield* Effect.context<SessionStore.SessionStore | R>()
    const entries = yield* SynchronizedRef.make(new Map<Ids.SessionId, Entry>())
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(
        SynchronizedRef.get(entries),
        (map) => Effect.forEach(map.values(), (entry) => Scope.close(entry.scope, Exit.void), { discard: true })
      )
    )

    /**
     * Opens `log` and its agent in a new child scope (or, in front of runners, takes the agent: `log` is not run);
     * on failure the child is closed again.
     */
    const start = (
      id: Ids.SessionId,
      log: Effect.Effect<SessionLog.Service, PoolError, SessionStore.SessionStore>
    ): Effect.Effect<Entry, PoolError> =>
      Effect.gen(function*() {
        const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
        const hosted = yield* Effect.gen(function*() {
          const failed = Effect.mapError((e: unknown) =>
            new StoreUnavailable({ message: `cannot start the agent of session ${id}: ${String(e)}` })
          )
          if ("agents" in source) return yield* failed(source.agents(id))
          const opened = yield* Effect.acquireRelease(log, (l) => Effect.ignore(l.close))
          return yield* failed(source.makeAgent(opened))
        }).pipe(
          Scope.extend(child),
          Effect.onExit((exit) => Exit.isFailure(exit) ? Scope.close(child, exit) : Effect.void)
        )
        return "agent" in hosted
          ? { agent: hosted.agent, goals: hosted.goals, scope: child }
          : { agent: hosted, goals: undefined, scope: child }
      }).pipe(Effect.provide(context))

    const entry = (id: Ids.SessionId): Effect.Effect<Entry, PoolError> =>
      Effect.flatMap(SynchronizedRef.get(entries), (map) => {
        const found = map.get(id)
        if (found !== undefined) return Effect.succeed(found)
        return SynchronizedRef.modifyEffect(entries, (map) => {
          const again = map.get(id)
          if (again !== undefined) return Effect.succeed([again, map] as const)
          return store.header(id).pipe(
            Effect.mapError(storeError(id, "open")),
            Effect.zipRight(start(id, Effect.mapError(SessionLog.open(id), logError(id, "open")))),
            Effect.map((entry) => [entry, new Map(map).set(id, entry)] as const)
          )
        })
      })
    const get = (id: Ids.SessionId) => Effect.map(entry(id), (e) => e.agent)
    const goals = (id: Ids.SessionId) => Effect.map(entry(id), (e) => e.goals)

    const create: Pool["create"] = (options) =>
      SynchronizedRef.modifyEffect(entries, (map) =>
        Effect.gen(function*() {
          const id = options.id ?? (yield* Ids.randomUuid(Ids.SessionId))
          if ("agents" in source) {
            // In front of runners the session is only stored here; its host opens it on its first message.
            const createdAt = yield* Clock.currentTimeMillis
            yield* store.create({
              id,
              version: 1,
              createdAt,
              ...(options.title === undefined ? {} : { title: options.title })
            }).pipe(Effect.mapError(storeError(id, "create")))
          }
          const log = SessionLog.make({ id, title: options.title }).pipe(
            Effect.mapError((e) =>
              /AlreadyExists/.test(e.message)
                ? new SessionConflict({ id, reason: "exists", message: `session ${id} exists already` })
                : logError(id, "create")(e)
            )
          )
          const entry = yield* start(id, log)
          return [entry.agent.id, new Map(map).set(entry.agent.id, entry)] as const
        }))

    const remove: Pool["remove"] = (id) =>
      SynchronizedRef.updateEffect(entries, (map) =>
        Effect.gen(function*() {
          const entry = Option.fromNullable(map.get(id))
          if (Option.isSome(entry)) yield* Scope.close(entry.value.scope, Exit.void)
          yield* store.remove(id).pipe(Effect.mapError(storeError(id, "remove")))
          const next = new Map(map)
          next.delete(id)
          return next
        }))

    return { get, goals, create, remove }
  })
