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
import type * as Statement from "@effect/sql/Statement"
import { SessionStore } from "@harness/session"
import { type Duration, Effect } from "effect"
import * as internal from "./internal/sqlStore.js"

/**
 * Runs one statement on a write's connection: compiled by the client, executed without a span or a connection
 * acquisition of its own (the write holds the connection and has the span).
 *
 * @since 0.0.0
 * @category models
 */
export type Run = <A extends object>(statement: Statement.Statement<A>) => Effect.Effect<ReadonlyArray<A>, SqlError>

/**
 * Runs one write transaction: `use` gets the {@link Run} of the transaction's connection, and every statement of
 * the write goes through it. `sync: true` asks for a commit that is on disk when it returns; `false` is the
 * cheaper mode, which still survives a crash of this process; absent is the dialect's default.
 *
 * @since 0.0.0
 * @category models
 */
export type Writer = <A, E, R>(
  use: (run: Run) => Effect.Effect<A, E, R>,
  sync?: boolean
) => Effect.Effect<A, E | SqlError, R>

/**
 * How a dialect makes a write's transaction durable or not.
 *
 * @since 0.0.0
 * @category models
 */
export interface Durability {
  /** The durability of a write that does not ask for one. */
  readonly sync: boolean
  /**
   * The statement that opens a write's transaction (default `BEGIN`). SQLite's `BEGIN IMMEDIATE` takes the write
   * lock at once, so a write whose first statement reads never has to upgrade a read snapshot another process
   * has since overtaken (which fails at once instead of waiting).
   */
  readonly begin?: string
  /** Run on the write's connection before `BEGIN` (a setting that cannot change inside a transaction). */
  readonly beforeBegin?: (run: Run, sync: boolean) => Effect.Effect<void, SqlError>
  /** Run right after `BEGIN` (a setting local to the transaction). */
  readonly afterBegin?: (run: Run, sync: boolean) => Effect.Effect<void, SqlError>
}

/**
 * The writer over `sql`: each write reserves a connection (`SqlClient.reserve`, which also orders it against the
 * client's other statements where the engine has one connection), runs `BEGIN`, `use` and `COMMIT` on it in one
 * `SqlStore.write` span, and rolls back when `use` fails or is interrupted (ADR 0029: `@effect/sql`'s own
 * transactions cost a span, a scope and a connection acquisition per statement, a third of a commit's CPU).
 *
 * @since 0.0.0
 * @category constructors
 */
export const writer: (sql: SqlClient.SqlClient, durability: Durability) => Writer = internal.writer

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
  /** Builds the writer over the client (once per store; usually {@link writer} with the engine's durability). */
  readonly writer: (sql: SqlClient.SqlClient) => Effect.Effect<Writer>
  /** Appended to the SELECT of a session's row inside a write (`FOR UPDATE` where rows must be locked). */
  readonly lockRow: string
  /** The select list of `events`, `turns` and `bytes` (UTF-8 bytes of `text`) over the records a truncate drops. */
  readonly droppedFigures: string
}

/**
 * Options of the store.
 *
 * - `leaseTime`: how long a writer lease lives without renewal (default 30 seconds). A holder renews its lease
 *   every third of it; a lease not renewed for longer is taken over, as is one whose holder no longer runs on this
 *   host (ADR 0044).
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  readonly leaseTime?: Duration.DurationInput | undefined
}

/**
 * The table that records which migrations ran.
 *
 * @public
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

/**
 * The failure of a store that cannot be set up (connected, opened, configured or migrated): `Io` with `message`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const setupError = (message: string): SessionStore.SessionStoreError =>
  new SessionStore.SessionStoreError({ reason: "Io", message })

/**
 * The store over the `SqlClient` of the context: migrates the schema, then serves.
 *
 * Contract: the `SessionStore` conformance suite. A commit is one transaction; one session has one writer at a
 * time, across processes and hosts: its writer lease (pid, host, since, last renewal and a fencing token in the
 * session's row, ADR 0044) is taken in one write transaction, renewed while held, and checked by the first
 * statement of every write. A second writer gets `Busy` naming the holder at once; readers never wait for a lease.
 * Fails with `Io` when the schema cannot be applied; every later SQL failure is `Io` naming the operation, or
 * `Closed` once the client's connection is closed for good.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  dialect: Dialect,
  options?: Options
): Effect.Effect<SessionStore.Service, SessionStore.SessionStoreError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* Migrator.make({})({ loader: internal.migrations(dialect), table: migrationsTable })
    return yield* internal.make(dialect, options)
  }).pipe(
    Effect.catchTags({
      SqlError: (e: SqlError) => Effect.fail(setupError(`cannot prepare the ${dialect.name} store: ${sqlMessage(e)}`)),
      MigrationError: (e) => Effect.fail(setupError(`cannot migrate the ${dialect.name} store: ${e.message}`))
    })
  )
