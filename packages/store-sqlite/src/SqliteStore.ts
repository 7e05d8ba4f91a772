/**
 * A `SessionStore` on SQLite: every session in one database file, the embedded default (no server). The schema is
 * applied by `@effect/sql`'s `Migrator`; the database runs in WAL mode with `synchronous = NORMAL`, so a commit
 * survives a crash of the process as soon as `append` returns, and a commit appended with `sync: true` is raised
 * to `synchronous = FULL` (the WAL is fsynced) so that it survives power loss too.
 *
 * Tables (see ADR 0010): `sessions` (the header's JSON and the summary figures, kept up to date in each commit's
 * transaction), `records` (one row per event or inbox record: `(session, position)` key, kind, time, indexed
 * message id, the record's JSON text) and `snapshots` (the latest one per session).
 *
 * @since 0.0.0
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SessionStore } from "@harness/session"
import { SqlStore } from "@harness/store-sql"
import { Effect, Layer } from "effect"
import * as internal from "./internal/sqliteStore.js"

/**
 * Where the database lives, and the store's options (`SqlStore.Options`: the lease time).
 *
 * @since 0.0.0
 * @category models
 */
export interface Options extends SqlStore.Options {
  /** The database file (created if missing). `":memory:"` works too (a private database, without WAL). */
  readonly filename: string
}

/**
 * The store over the `SqlClient` of the context (a SQLite client), with the store's options (the lease time, see
 * `SqlStore.Options`): migrates the schema, then serves.
 *
 * Contract: the `SessionStore` conformance suite. Writes are serialised within the process; other processes may
 * write the same file (SQLite's lock orders the transactions; a waiting one gives up after the client's busy
 * timeout with `Io`). One session has one writer at a time, across processes: the writer lease (ADR 0044); a
 * second writer gets `Busy` naming the holder at once. Readers never wait. Fails with `Io` when the schema cannot
 * be applied.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options?: SqlStore.Options
): Effect.Effect<SessionStore.Service, SessionStore.SessionStoreError, SqlClient.SqlClient> =>
  SqlStore.make(internal.dialect, options)

/**
 * The store on the database file `options.filename`, with its own SQLite client (closed with the layer).
 *
 * Contract: fails with `Io` when the file cannot be opened or migrated.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError> =>
  Layer.effect(
    SessionStore.SessionStore,
    Effect.zipRight(
      Effect.flatMap(SqliteClient.SqliteClient, (sql) => sql`PRAGMA synchronous = NORMAL`),
      make(options)
    ).pipe(
      Effect.catchTag(
        "SqlError",
        (e) => Effect.fail(SqlStore.setupError(`cannot configure SQLite: ${SqlStore.sqlMessage(e)}`))
      )
    )
  ).pipe(
    Layer.provide(
      SqliteClient.layer({ filename: options.filename }).pipe(
        // better-sqlite3 throws when it cannot open the file: that is a setup failure, not a defect.
        Layer.catchAllCause((cause) =>
          Layer.fail(
            SqlStore.setupError(
              `cannot open the SQLite database ${JSON.stringify(options.filename)}: ${cause.toString()}`
            )
          )
        )
      )
    )
  )
