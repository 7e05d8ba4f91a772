/**
 * The store's schema: sessions, records and snapshots in their tables, the writer lease in the session's row
 * (ADR 0044), each migration with the dialect's column types.
 */
import * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlClient as SqlClientTag } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { Dialect } from "../SqlStore.js"

/** A snapshot table (`table`): one row per session, the seq and record position it was taken at, and `column`. */
const snapshotTable = (sql: SqlClient.SqlClient, table: string, column: string) =>
  sql`CREATE TABLE ${sql.literal(table)} (
      session INTEGER PRIMARY KEY,
      seq INTEGER NOT NULL,
      position INTEGER NOT NULL,
      ${sql.literal(column)} TEXT NOT NULL
    )`

/** The schema, one migration, with the dialect's column types. */
export const migrations = (dialect: Dialect) => {
  const { bigint, serialKey, smallint } = dialect.columns
  return Migrator.fromRecord({
    "1_sessions": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`CREATE TABLE sessions (
      key ${sql.literal(serialKey)},
      id TEXT NOT NULL UNIQUE,
      header TEXT NOT NULL,
      created_at ${sql.literal(bigint)} NOT NULL,
      records INTEGER NOT NULL,
      events INTEGER NOT NULL,
      turns INTEGER NOT NULL,
      last_activity ${sql.literal(bigint)} NOT NULL,
      bytes ${sql.literal(bigint)} NOT NULL,
      first_prompt TEXT,
      first_prompt_position INTEGER
    )`
      yield* sql`CREATE TABLE records (
      session INTEGER NOT NULL,
      position INTEGER NOT NULL,
      kind ${sql.literal(smallint)} NOT NULL,
      time ${sql.literal(bigint)} NOT NULL,
      message_id TEXT,
      text TEXT NOT NULL,
      PRIMARY KEY (session, position)
    )`
      yield* sql`CREATE INDEX records_message_id ON records (session, message_id) WHERE message_id IS NOT NULL`
      yield* snapshotTable(sql, "snapshots", "text")
    }),
    // ADR 0027: a snapshot's head apart from its body, so `open` reads a few hundred bytes instead of the history
    // (SQLite reads a row's whole value to return any part of it). Snapshots of the first schema are dropped, not
    // converted: the log replays such a session once at its next `open` and saves a new snapshot.
    "2_snapshot_heads": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`DROP TABLE snapshots`
      yield* snapshotTable(sql, "snapshot_heads", "head")
      yield* snapshotTable(sql, "snapshot_bodies", "body")
    }),
    // ADR 0044: the writer lease in the session's row, and the store's last fencing token (tokens grow across the
    // store, so a lease never matches a later session of the same id).
    "3_leases": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_token ${sql.literal(bigint)}`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_pid INTEGER`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_host TEXT`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_since ${sql.literal(bigint)}`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_renewed ${sql.literal(bigint)}`
      yield* sql`CREATE TABLE lease_tokens (
      id INTEGER PRIMARY KEY,
      last ${sql.literal(bigint)} NOT NULL
    )`
      yield* sql`INSERT INTO lease_tokens (id, last) VALUES (1, 0)`
    })
  })
}
