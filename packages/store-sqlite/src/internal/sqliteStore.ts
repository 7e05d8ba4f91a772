/**
 * The SQLite dialect of `@harness/store-sql`: the schema (one migration) and writes. Every write is one
 * transaction whose first statement writes (so it takes SQLite's write lock at once and never has to upgrade a
 * read lock), serialised by a one-permit lock that also guards the `synchronous` pragma a synced commit raises.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const migrations = Migrator.fromRecord({
  "1_sessions": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE sessions (
      key INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      header TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      records INTEGER NOT NULL,
      events INTEGER NOT NULL,
      turns INTEGER NOT NULL,
      last_activity INTEGER NOT NULL,
      bytes INTEGER NOT NULL,
      first_prompt TEXT,
      first_prompt_position INTEGER
    )`
    yield* sql`CREATE TABLE records (
      session INTEGER NOT NULL,
      position INTEGER NOT NULL,
      kind INTEGER NOT NULL,
      time INTEGER NOT NULL,
      message_id TEXT,
      text TEXT NOT NULL,
      PRIMARY KEY (session, position)
    )`
    yield* sql`CREATE INDEX records_message_id ON records (session, message_id) WHERE message_id IS NOT NULL`
    yield* sql`CREATE TABLE snapshots (
      session INTEGER PRIMARY KEY,
      seq INTEGER NOT NULL,
      position INTEGER NOT NULL,
      text TEXT NOT NULL
    )`
  })
})

export const dialect: SqlStore.Dialect = {
  name: "SQLite",
  migrations,
  /** A write: serialised, in one transaction, with `synchronous = FULL` around it when `sync` is asked for. */
  writer: (sql) =>
    Effect.map(Effect.makeSemaphore(1), (writeLock): SqlStore.Writer => (effect, sync = false) => {
      const transaction = sql.withTransaction(effect)
      const synced = sync
        ? Effect.acquireUseRelease(
          sql`PRAGMA synchronous = FULL`,
          () => transaction,
          () => Effect.orDie(sql`PRAGMA synchronous = NORMAL`)
        )
        : transaction
      return writeLock.withPermits(1)(synced)
    }),
  // SQLite's write lock covers the whole database: a transaction that wrote first holds it already.
  lockRow: "",
  droppedFigures: "count(*) FILTER (WHERE kind > 0) AS events, count(*) FILTER (WHERE kind = 2) AS turns, " +
    "coalesce(sum(length(CAST(text AS BLOB))), 0) AS bytes"
}
