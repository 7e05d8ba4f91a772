/**
 * A `SessionStore` over any `@effect/sql` client: the shared core of `@harness/store-sqlite` and
 * `@harness/store-postgres`. A backend supplies its schema migration and a {@link Dialect} (how a write
 * transaction is made durable or not, and the few SQL fragments that differ); this module migrates and serves the
 * whole store contract over it.
 *
 * @since 0.0.0
 */
import * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { SessionStore } from "@harness/session"
import { Effect } from "effect"
import * as internal from "./internal/sqlStore.js"

/**
 * Runs one write transaction. `sync: true` asks for a commit that is on disk when it returns; `false` or absent is
 * the backend's cheaper default, which still survives a crash of this process.
 *
 * @since 0.0.0
 * @category models
 */
export type Writer = <A, E, R>(effect: Effect.Effect<A, E, R>, sync?: boolean) => Effect.Effect<A, E | SqlError, R>

/**
 * What differs between engines.
 *
 * @since 0.0.0
 * @category models
 */
export interface Dialect {
  /** The engine's name, in every failure message (`SQLite failed to …`). */
  readonly name: string
  /**
   * The engine's column types for the schema (tables `sessions`, `records`, `snapshots`): an auto-numbered integer
   * primary key, a 64-bit integer (times, byte counts) and a small integer (a record's kind).
   */
  readonly columns: { readonly serialKey: string; readonly bigint: string; readonly smallint: string }
  /** Builds the writer over the client (once per store). */
  readonly writer: (sql: SqlClient.SqlClient) => Effect.Effect<Writer>
  /** Appended to the SELECT of a session's row inside a write (`FOR UPDATE` where rows must be locked). */
  readonly lockRow: string
  /** The select list of `events`, `turns` and `bytes` (UTF-8 bytes of `text`) over the records a truncate drops. */
  readonly droppedFigures: string
}

/**
 * The table that records which migrations ran.
 *
 * @since 0.0.0
 * @category constants
 */
export const migrationsTable = "harness_migrations"

/**
 * A SQL failure's message with its cause's, which says what the engine refused.
 *
 * @since 0.0.0
 * @category utils
 */
export const sqlMessage: (e: SqlError) => string = internal.sqlMessage

const setupError = (message: string) => new SessionStore.SessionStoreError({ reason: "Io", message })

/**
 * The store over the `SqlClient` of the context: migrates the schema, then serves.
 *
 * Contract: the `SessionStore` conformance suite. A commit is one transaction; one session has one writer at a
 * time. Fails with `Io` when the schema cannot be applied; every later SQL failure is `Io` naming the operation.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  dialect: Dialect
): Effect.Effect<SessionStore.Service, SessionStore.SessionStoreError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* Migrator.make({})({ loader: internal.migrations(dialect), table: migrationsTable })
    return yield* internal.make(dialect)
  }).pipe(
    Effect.catchTags({
      SqlError: (e: SqlError) => Effect.fail(setupError(`cannot prepare the ${dialect.name} store: ${sqlMessage(e)}`)),
      MigrationError: (e) => Effect.fail(setupError(`cannot migrate the ${dialect.name} store: ${e.message}`))
    })
  )
