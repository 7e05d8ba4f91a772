/**
 * The store over an `@effect/sql` client, shared by the SQLite and PostgreSQL backends: sessions, records and
 * snapshots in three tables (each backend's migration creates them with its own column types), a commit as one
 * transaction whose first statement writes the session's row (taking the lock that orders writers of a session and
 * checking contiguity in one step), and the figures `list` shows kept current in that row.
 *
 * The writer lease (ADR 0044) lives in the session's row too: its fencing token and its holder (pid, host, since,
 * last renewal). `lease` takes it in one write transaction; every write checks the token in the condition of its
 * first statement (no extra statement on the hot path) and, when that statement matches no row, tells `NotFound`,
 * `Busy` and `Conflict` apart.
 *
 * The parts: `migrations.ts`, `writer.ts` (one write transaction), `context.ts` (failures and the fence),
 * `records.ts` (create, append, truncate, load), `sessions.ts` (list, damaged, remove), `leases.ts`, `snapshots.ts`.
 */
import type { SessionStore } from "@harness/session"
import { Effect } from "effect"
import type { Dialect, Options } from "../SqlStore.js"
import * as Context from "./context.js"
import * as Leases from "./leases.js"
import * as Records from "./records.js"
import * as Sessions from "./sessions.js"
import * as Snapshots from "./snapshots.js"

export { migrations } from "./migrations.js"
export { sqlMessage, writer } from "./writer.js"

/** The store over the `SqlClient` of the context, with `dialect`'s writes and SQL; the schema must be migrated. */
export const make = (dialect: Dialect, options?: Options) =>
  Effect.gen(function*() {
    const ctx = yield* Context.make(dialect, options)
    const records = Records.make(ctx)
    const sessions = Sessions.make(ctx)
    const snapshots = Snapshots.make(ctx)
    const service: SessionStore.Service = {
      commitMode: "write-behind",
      create: records.create,
      append: records.append,
      load: records.load,
      header: records.header,
      truncate: records.truncate,
      list: sessions.list,
      damaged: sessions.damaged,
      lease: Leases.make(ctx),
      remove: sessions.remove,
      hasMessage: records.hasMessage,
      saveSnapshot: snapshots.saveSnapshot,
      loadSnapshot: snapshots.loadSnapshot
    }
    return service
  })
