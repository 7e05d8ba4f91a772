/**
 * The PostgreSQL dialect of `@harness/store-sql`: its column types and writes. Every write is one
 * transaction; an append's first statement updates (and so locks) the session's row, which orders concurrent
 * writers of one session. A commit without `sync` is written with `synchronous_commit = off` (the server has it, so
 * a crash of this process cannot lose it; a crash of the server may lose the last ones), a synced one with the
 * server's default (`on`: flushed to the WAL on disk).
 */
import { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const dialect: SqlStore.Dialect = {
  name: "PostgreSQL",
  columns: { serialKey: "SERIAL PRIMARY KEY", bigint: "BIGINT", smallint: "SMALLINT" },
  /** A write: one transaction; without `sync`, committed without waiting for the WAL flush. */
  writer: (sql) =>
    Effect.succeed(SqlStore.writer(sql, {
      sync: true,
      afterBegin: (run, sync) => sync ? Effect.void : Effect.asVoid(run(sql`SET LOCAL synchronous_commit = off`))
    })),
  lockRow: "FOR UPDATE",
  droppedFigures:
    "(count(*) FILTER (WHERE kind > 0))::int AS events, (count(*) FILTER (WHERE kind = 2))::int AS turns, " +
    "coalesce(sum(octet_length(text)), 0)::bigint AS bytes"
}
