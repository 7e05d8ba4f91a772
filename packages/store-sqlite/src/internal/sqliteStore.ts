/**
 * The SQLite dialect of `@harness/store-sql`: its column types and writes. Every write is one
 * transaction whose first statement writes (so it takes SQLite's write lock at once and never has to upgrade a
 * read lock), serialised by a one-permit lock that also guards the `synchronous` pragma (`FULL` for a synced commit,
 * `NORMAL` otherwise).
 */
import type { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const dialect: SqlStore.Dialect = {
  name: "SQLite",
  columns: { serialKey: "INTEGER PRIMARY KEY", bigint: "INTEGER", smallint: "INTEGER" },
  /**
   * A write: serialised, in one transaction, at `synchronous = FULL` when `sync` is asked for and `NORMAL`
   * otherwise. The pragma is run only when a commit asks for the other mode than the last one (a run of synced
   * commits pays no toggle; W6), and before the first commit, whatever the connection was set to.
   */
  writer: (sql) =>
    Effect.map(Effect.makeSemaphore(1), (writeLock): SqlStore.Writer => {
      /** Whether the connection runs at `FULL` (`undefined`: not known yet). Read and changed under the lock. */
      let full: boolean | undefined = undefined
      const mode = (sync: boolean) =>
        full === sync ? Effect.void : Effect.zipRight(
          sync ? sql`PRAGMA synchronous = FULL` : sql`PRAGMA synchronous = NORMAL`,
          Effect.sync(() => {
            full = sync
          })
        )
      return (effect, sync = false) =>
        writeLock.withPermits(1)(Effect.zipRight(mode(sync), sql.withTransaction(effect)))
    }),
  // SQLite's write lock covers the whole database: a transaction that wrote first holds it already.
  lockRow: "",
  droppedFigures: "count(*) FILTER (WHERE kind > 0) AS events, count(*) FILTER (WHERE kind = 2) AS turns, " +
    "coalesce(sum(length(CAST(text AS BLOB))), 0) AS bytes"
}
