/**
 * The PostgreSQL dialect of `@harness/store-sql`: the schema (one migration) and writes. Every write is one
 * transaction; an append's first statement updates (and so locks) the session's row, which orders concurrent
 * writers of one session. A commit without `sync` is written with `synchronous_commit = off` (the server has it, so
 * a crash of this process cannot lose it; a crash of the server may lose the last ones), a synced one with the
 * server's default (`on`: flushed to the WAL on disk).
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const migrations = Migrator.fromRecord({
  "1_sessions": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE sessions (
      key SERIAL PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      header TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      records INTEGER NOT NULL,
      events INTEGER NOT NULL,
      turns INTEGER NOT NULL,
      last_activity BIGINT NOT NULL,
      bytes BIGINT NOT NULL,
      first_prompt TEXT,
      first_prompt_position INTEGER
    )`
    yield* sql`CREATE TABLE records (
      session INTEGER NOT NULL,
      position INTEGER NOT NULL,
      kind SMALLINT NOT NULL,
      time BIGINT NOT NULL,
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
  name: "PostgreSQL",
  migrations,
  /** A write: one transaction; without `sync`, committed without waiting for the WAL flush. */
  writer: (sql) =>
    Effect.succeed((effect, sync = true) =>
      sql.withTransaction(sync ? effect : Effect.zipRight(sql`SET LOCAL synchronous_commit = off`, effect))
    ),
  lockRow: "FOR UPDATE",
  droppedFigures:
    "(count(*) FILTER (WHERE kind > 0))::int AS events, (count(*) FILTER (WHERE kind = 2))::int AS turns, " +
    "coalesce(sum(octet_length(text)), 0)::bigint AS bytes"
}
