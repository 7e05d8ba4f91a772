/**
 * Retention of the cluster's message tables (R218), on SQLite and on PostgreSQL, with the agent entity on
 * `SingleRunner` in this process: processed messages older than the age go with their replies, unprocessed ones stay
 * however old, and a send repeated after its message was deleted is answered from the session log without being
 * accepted twice (R184). The age is passed by a clock set ahead under the cleanup only; the scheduled cleanup runs
 * as a cluster singleton with its settings from `HARNESS_CLUSTER_RETENTION*`.
 */
import type { Sharding } from "@effect/cluster"
import { SingleRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { Operations, Store } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import type { Scope } from "effect"
import { Clock, ConfigProvider, Duration, Effect, Layer, Option, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentEntity, RemoteAgent, Retention } from "../src/index.js"
import { mid, prompt, sessionId, storedEvents, storedRecords, turnEnds } from "./fixtures.js"
import * as Postgres from "./postgres.js"
import { until } from "./runners.js"

const sharding = { entityMessagePollInterval: "50 millis", entityReplyPollInterval: "20 millis" } as const

/** The cluster's tables on each backend: a SQLite file in `dir`, or a fresh PostgreSQL database. */
const backends: ReadonlyArray<{
  readonly name: string
  readonly sql: (dir: string) => Effect.Effect<Layer.Layer<SqlClient.SqlClient>, never, Scope.Scope>
}> = [
  {
    name: "SQLite",
    sql: (dir) => Effect.succeed(Layer.orDie(SqliteClient.layer({ filename: join(dir, "cluster.db") })))
  },
  {
    name: "PostgreSQL",
    sql: () => Effect.map(Postgres.database, (url) => Layer.orDie(PgClient.layer({ url: Redacted.make(url) })))
  }
]

/** Every row of the messages table, and how many replies have no message. */
const tables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const messages = yield* sql<{ readonly message_id: string | null; readonly processed: unknown }>`
    SELECT message_id, processed FROM cluster_messages`
  const orphans = yield* sql<{ readonly n: unknown }>`
    SELECT COUNT(*) AS n FROM cluster_replies r
    WHERE NOT EXISTS (SELECT 1 FROM cluster_messages m WHERE m.id = r.request_id)`
  return {
    // A persisted message's key is `<entity type>/<entity id>/<tag>/<primary key>`: the message id is the last part.
    ids: messages.flatMap((row) => row.message_id === null ? [] : [row.message_id.split("/").pop()!]).sort(),
    processed: messages.filter((row) => Number(row.processed) === 1).length,
    orphans: Number(orphans[0]?.n ?? 0)
  }
}).pipe(Effect.orDie)

/** One pass of the cleanup as if it ran at `at` (epoch ms): a clock stopped at `at` under the pass only. */
const purgeAt = (at: number) => {
  const live = Clock.make()
  const stopped: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => at,
    currentTimeMillis: Effect.succeed(at),
    unsafeCurrentTimeNanos: () => BigInt(at) * 1_000_000n,
    currentTimeNanos: Effect.succeed(BigInt(at) * 1_000_000n),
    sleep: (duration) => live.sleep(duration)
  }
  return Retention.purge({ olderThan: "7 days" }).pipe(Effect.withClock(stopped), Effect.orDie)
}

describe.each(backends)("Retention on $name", ({ sql }) => {
  it.live(
    "R218: old processed messages go with their replies, pending ones stay; a repeat after the cleanup is answered from the log",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "harness-retention-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const clusterSql = yield* sql(dir)
        const sessions = SqliteStore.layer({ filename: join(dir, "sessions.db") })
        const runner = (
          replies: ReadonlyArray<S.Reply>,
          more: Layer.Layer<never, never, Sharding.Sharding | SqlClient.SqlClient> = Layer.empty
        ) =>
          Layer.merge(AgentEntity.layer(), more).pipe(
            Layer.provideMerge(SingleRunner.layer({ runnerStorage: "memory", shardingConfig: sharding })),
            Layer.provideMerge(clusterSql),
            Layer.provideMerge(sessions),
            Layer.provideMerge(S.layer(replies))
          )

        // 1. A runner processes two sends.
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(runner([S.textResponse("one"), S.textResponse("two")]))
          const agent = yield* Effect.provide(RemoteAgent.make(sessionId), context)
          yield* agent.followup(prompt("one"), { id: mid("m-1") })
          yield* agent.followup(prompt("two"), { id: mid("m-2") })
          yield* agent.whenIdle
        }))

        // 2. With no runner, a client-only node stores a third send, which stays pending.
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(
            SingleRunner.layer({
              runnerStorage: "memory",
              shardingConfig: { ...sharding, runnerAddress: Option.none() }
            })
              .pipe(Layer.provide(clusterSql))
          )
          const entity = yield* Effect.provide(AgentEntity.AgentEntity.client, context)
          yield* entity(sessionId).Followup(
            { id: mid("m-3"), operation: new Operations.Followup({ message: prompt("three") }) },
            { discard: true }
          )
        }))

        // 3. Cleanups: now (nothing is old enough), then eight days later (the processed ones are).
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(clusterSql)
          const before = yield* Effect.provide(tables, context)
          assert.deepStrictEqual(before.ids, [mid("m-1"), mid("m-2"), mid("m-3")].sort())
          assert.isAbove(before.processed, 0)
          const now = yield* Clock.currentTimeMillis
          assert.deepStrictEqual(yield* Effect.provide(purgeAt(now), context), { messages: 0, replies: 0 })
          assert.deepStrictEqual(yield* Effect.provide(tables, context), before)
          const later = yield* Effect.provide(purgeAt(now + Duration.toMillis("8 days")), context)
          assert.isAbove(later.messages, 1)
          assert.isAbove(later.replies, 1)
          const after = yield* Effect.provide(tables, context)
          assert.deepStrictEqual(after.ids, [mid("m-3")], "only the pending send's message is left")
          assert.strictEqual(after.processed, 0)
          assert.strictEqual(after.orphans, 0)
        }))

        // 4. A runner with the scheduled cleanup (a short age, yet longer than a sender takes to read its reply: a
        //    reply deleted before it is read is never answered) delivers the pending send; m-1 sent again, its stored
        //    message gone, is answered from the session log and not accepted again.
        yield* Effect.scoped(Effect.gen(function*() {
          const retention = Retention.layerConfig.pipe(
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
              new Map([["HARNESS_CLUSTER_RETENTION", "0 millis"], [
                "HARNESS_CLUSTER_RETENTION_INTERVAL",
                "100 millis"
              ]]),
              { pathDelim: "_" }
            ))),
            Layer.orDie
          )
          const context = yield* Layer.build(runner([S.textResponse("three")], retention))
          const store = yield* Effect.provide(SessionStore.SessionStore, context)
          const agent = yield* Effect.provide(RemoteAgent.make(sessionId), context)
          assert.strictEqual(yield* agent.followup(prompt("one"), { id: mid("m-1") }), mid("m-1"))
          yield* until("the pending send's turn", turnEnds(store), (ends) => ends.length === 3)
          yield* agent.whenIdle
          const model = yield* Effect.provide(S.ScriptedModel, context)
          assert.strictEqual((yield* model.requests).length, 1, "only the pending send reached the model")
          yield* until("the scheduled cleanup", Effect.provide(tables, context), (t) => t.processed === 0)

          const events = yield* storedEvents(store)
          assert.deepStrictEqual(LogCheck.checkLog(events), [])
          assert.deepStrictEqual(
            events.flatMap((e) =>
              e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []
            ),
            [mid("m-1"), mid("m-2"), mid("m-3")]
          )
          const accepted = (yield* storedRecords(store)).flatMap((r) =>
            Store.isInboxRecord(r) && r.type === "inbox/accepted" ? [r.message.id] : []
          )
          assert.strictEqual(new Set(accepted).size, accepted.length, "a message accepted twice")
        }))
      }).pipe(Effect.scoped),
    120_000
  )
})
