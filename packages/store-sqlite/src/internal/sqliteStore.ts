/**
 * The SQLite dialect of `@harness/store-sql`: its column types and writes. Every write is one
 * transaction whose first statement writes (so it takes SQLite's write lock at once and never has to upgrade a
 * read lock), on the client's one connection, reserved for the write, which also guards the `synchronous` pragma
 * (`FULL` for a synced commit, `NORMAL` otherwise).
 */
import { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const dialect: SqlStore.Dialect = {
  name: "SQLite",
  columns: { serialKey: "INTEGER PRIMARY KEY", bigint: "INTEGER", smallint: "INTEGER" },
  /**
   * A write at `synchronous = FULL` when `sync` is asked for and `NORMAL` otherwise (the default). The pragma runs
   * only when a write asks for the other mode than the last one (a run of synced commits pays no toggle; W6), and
   * before the first write, whatever the connection was set to. Writes are serialised by the client's one
   * connection, which the writer reserves for the whole write, so the mode cannot change under a transaction.
   */
  writer: (sql) =>
    Effect.sync(() => {
      /** Whether the connection runs at `FULL` (`undefined`: not known yet). Read and changed with it reserved. */
      let full: boolean | undefined = undefined
      return SqlStore.writer(sql, {
        sync: false,
        // The write lock at once: another process's commit can then never invalidate what a write read first.
        begin: "BEGIN IMMEDIATE",
        beforeBegin: (run, sync) =>
          full === sync ? Effect.void : Effect.zipRight(
            run(sync ? sql`PRAGMA synchronous = FULL` : sql`PRAGMA synchronous = NORMAL`),
            Effect.sync(() => {
              full = sync
            })
          )
      })
    }),
  // SQLite's write lock covers the whole database: a transaction that wrote first holds it already.
  lockRow: "",
  droppedFigures: "count(*) FILTER (WHERE kind > 0) AS events, count(*) FILTER (WHERE kind = 2) AS turns, " +
    "coalesce(sum(length(CAST(text AS BLOB))), 0) AS bytes"
}
