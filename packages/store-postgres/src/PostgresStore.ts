/**
 * A `SessionStore` on PostgreSQL, for deployments that outgrow one machine: every session in one database, any
 * number of processes and hosts, one writer per session at a time (the writer lease, ADR 0044). The schema is applied by `@effect/sql`'s `Migrator` (it locks its table, so processes that
 * start together migrate once).
 *
 * Tables (see ADR 0010): `sessions` (the header's JSON and the summary figures, kept up to date in each commit's
 * transaction), `records` (one row per event or inbox record: `(session, position)` key, kind, time, indexed
 * message id, the record's JSON text) and `snapshots` (the latest one per session).
 *
 * @since 0.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SessionStore } from "@harness/session"
import { SqlStore } from "@harness/store-sql"
import { Config, Effect, Layer, type Redacted } from "effect"
import * as internal from "./internal/postgresStore.js"

/**
 * Where the database is, and the store's options (`SqlStore.Options`: the lease time).
 *
 * @since 0.0.0
 * @category models
 */
export interface Options extends SqlStore.Options {
  /** A connection URL, `postgres://user:password@host:port/database`. */
  readonly url: Redacted.Redacted
}

/**
 * The store over the `SqlClient` of the context (a PostgreSQL client), with the store's options (the lease time, see
 * `SqlStore.Options`): migrates the schema, then serves.
 *
 * Contract: the `SessionStore` conformance suite. One session has one writer at a time, across processes and
 * hosts: the writer lease (ADR 0044), taken under the row lock of the session's row; a second writer gets `Busy`
 * naming the holder at once, and readers never wait. Every write locks its session's row for its transaction and
 * checks the lease there (the fence); `sync: false` commits with
 * `synchronous_commit = off`, `sync: true` waits for the server's WAL flush. Fails with `Io` when the schema
 * cannot be applied.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options?: SqlStore.Options
): Effect.Effect<SessionStore.Service, SessionStore.SessionStoreError, SqlClient.SqlClient> =>
  SqlStore.make(internal.dialect, options)

/**
 * The store on the database at `options.url`, with its own connection pool (closed with the layer).
 *
 * Contract: fails with `Io` when the server cannot be reached or the schema cannot be applied.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError> =>
  Layer.effect(SessionStore.SessionStore, make(options)).pipe(
    Layer.provide(
      PgClient.layer({ url: options.url, applicationName: "harness" }).pipe(
        Layer.catchAll((e) =>
          Layer.fail(SqlStore.setupError(`cannot connect to PostgreSQL: ${SqlStore.sqlMessage(e)}`))
        )
      )
    )
  )

/**
 * {@link layer} with the URL from `Config` (default: the redacted `HARNESS_POSTGRES_URL`).
 *
 * @since 0.0.0
 * @category layers
 */
export const layerConfig = (
  url: Config.Config<Redacted.Redacted> = Config.redacted("HARNESS_POSTGRES_URL")
): Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.mapError(url, (e) =>
        SqlStore.setupError(`cannot read the PostgreSQL store's configuration: ${e.toString()}`)),
      (value) =>
        layer({ url: value })
    )
  )
