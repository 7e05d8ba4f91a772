/**
 * Effect-side helpers of the CLI tests: a scoped workspace, a session written by a real agent into a SQLite file, its
 * stored events, `harness` on one store.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Agent } from "@harness/agent"
import { type Ids, Message } from "@harness/domain"
import { SessionLog, type SessionStore } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as OfflineModel from "../src/OfflineModel.js"
import { harness, tempDir } from "./support.js"

/** A fresh temporary directory, removed when the scope closes. */
export const scopedDir: Effect.Effect<string, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(Effect.sync(tempDir), ([, cleanup]) => Effect.sync(cleanup)),
  ([dir]) => dir
)

/**
 * The events of session `id` in the SQLite file `filename`. Contract: the log is opened read only, so the test
 * process holds no lease that a later command of the CLI (`sessions rm`) would be refused by; `open` checks the id
 * (one the CLI printed, say).
 */
export const storedEvents = (filename: string, id: string) =>
  Effect.gen(function*() {
    const log = yield* SessionLog.open(id as Ids.SessionId, { readOnly: true })
    return yield* log.events
  }).pipe(Effect.provide(SqliteStore.layer({ filename })))

/** `harness <command> <subcommand> --store <store> …rest` in `dir`: a command of two words over one store. */
export const onStore = (store: string, dir: string) => (...args: ReadonlyArray<string>) =>
  Effect.promise(() => harness([...args.slice(0, 2), "--store", store, ...args.slice(2)], { cwd: dir }))

/**
 * Writes a new session into the SQLite file `filename`: an agent on the offline model (no pace) answers each of
 * `prompts`, one turn each, awaited to idle. Contract: the log is closed before `after` runs with the store (a live
 * log fences other writes), so `after` may append to the session directly. Returns the session's id.
 */
export const writeOfflineSession = <E = never>(
  filename: string,
  prompts: ReadonlyArray<string>,
  after: (id: Ids.SessionId) => Effect.Effect<void, E, SessionStore.SessionStore> = () => Effect.void
) =>
  Effect.gen(function*() {
    const log = yield* SessionLog.make()
    const agent = yield* Agent.make({ session: log })
    for (const prompt of prompts) {
      yield* agent.followup(Message.make(prompt))
      yield* agent.whenIdle
    }
    yield* log.close
    yield* after(log.id)
    return log.id
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(SqliteStore.layer({ filename }), OfflineModel.layer({ pace: 0 }), NodeContext.layer))
  )
