/**
 * Shared pieces of the runner-process tests: the sharding timings they run with (short, so a failover takes seconds),
 * this process as a client-only node over PostgreSQL, a free port, and polling with a deadline.
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { PostgresStore } from "@harness/store-postgres"
import { Effect, Layer, Redacted, Schedule } from "effect"
import * as net from "node:net"

/**
 * The sharding settings of the PostgreSQL tests: shard locks in a table with an expiry (an advisory lock would be held
 * by a frozen runner's open connection), a runner that stops heartbeating is gone after 3 s, its shards are taken
 * within the next refresh, and messages are polled every 200 ms.
 */
export const sharding = {
  shardsPerGroup: 12,
  shardLockDisableAdvisory: true,
  shardLockExpiration: "3 seconds",
  shardLockRefreshInterval: "1 second",
  refreshAssignmentsInterval: "300 millis",
  entityMessagePollInterval: "200 millis",
  entityReplyPollInterval: "100 millis",
  runnerHealthCheckInterval: "1 second",
  entityTerminationTimeout: "5 seconds",
  sendRetryInterval: "100 millis"
} as const

/** Polls `read` until `done` holds of its value; the deadline only bounds a failure. */
export const until = <A, E, R>(
  what: string,
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  deadline: number = 30_000
) =>
  read.pipe(
    Effect.filterOrFail(done, () => new Error(`not yet: ${what}`)),
    Effect.retry({
      schedule: Schedule.spaced("50 millis"),
      while: (e) => e instanceof Error && e.message.startsWith("not yet")
    }),
    Effect.timeoutFail({ duration: deadline, onTimeout: () => new Error(`no ${what} in time`) })
  )

/** A free loopback port. */
export const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * This process as a client-only node over the database at `url` (built in the scope), with the session store for
 * reading logs, and how many runners hold all the shards' locks between them (0 while some shard is unheld).
 */
export const clientLayer = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: sharding }).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(url) })),
        Layer.merge(PostgresStore.layer({ url: Redacted.make(url) }))
      )
    )
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const shardOwners = sql<{ readonly shards: string; readonly owners: string }>`
      SELECT COUNT(*) AS shards, COUNT(DISTINCT address) AS owners FROM cluster_locks
      WHERE acquired_at > NOW() - INTERVAL '3 seconds'`.pipe(
      Effect.map((rows) => Number(rows[0]?.shards) === sharding.shardsPerGroup ? Number(rows[0]?.owners) : 0),
      Effect.orElseSucceed(() => 0)
    )
    return { context, sql, shardOwners }
  })
