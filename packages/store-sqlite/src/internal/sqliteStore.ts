/**
 * The SQLite dialect of `@harness/store-sql`: its column types and writes. Every write is one
 * transaction whose first statement writes (so it takes SQLite's write lock at once and never has to upgrade a
 * read lock), serialised by a one-permit lock that also guards the `synchronous` pragma a synced commit raises.
 */
import type { SqlStore } from "@harness/store-sql"
import { Effect } from "effect"

export const dialect: SqlStore.Dialect = {
  name: "SQLite",
  columns: { serialKey: "INTEGER PRIMARY KEY", bigint: "INTEGER", smallint: "INTEGER" },
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
