/**
 * Deleting a session through its entity (R219), on `SingleRunner` over SQLite files in this process: the delete runs
 * after the messages before it, disposes the agent mid-turn, removes the session from the store and the entity's
 * messages from the cluster's storage, releases the keep-alive so the idle entity is passivated, and a later message
 * to the id starts a new, empty session with none of the old history.
 */
import { Sharding, SingleRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { LogCheck, SessionStore, SessionStoreError } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { mid, prompt, roundTrip, sessionId, storedEvents, turnEnds } from "./fixtures.js"
import { until } from "./runners.js"

describe("AgentEntity: deleting a session", () => {
  it.live(
    "R219: delete disposes the agent, clears the stored messages, passivates the entity; the id then starts empty",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "harness-delete-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const context = yield* Layer.build(
          AgentEntity.layer({ maxIdleTime: "1 second" }).pipe(
            Layer.provideMerge(SingleRunner.layer({
              runnerStorage: "memory",
              shardingConfig: { entityMessagePollInterval: "50 millis", entityReplyPollInterval: "20 millis" }
            })),
            Layer.provideMerge(SqliteClient.layer({ filename: join(dir, "cluster.db") })),
            Layer.provideMerge(SqliteStore.layer({ filename: join(dir, "sessions.db") })),
            Layer.provideMerge(S.layer([S.textResponse("one"), S.hanging(S.text("two")), S.textResponse("fresh")]))
          )
        )
        const store = yield* Effect.provide(SessionStore.SessionStore, context)
        const model = yield* Effect.provide(S.ScriptedModel, context)
        const sharding = yield* Effect.provide(Sharding.Sharding, context)
        const sql = yield* Effect.provide(SqlClient.SqlClient, context)
        const storedMessages = sql<{ readonly n: number }>`
          SELECT COUNT(*) AS n FROM cluster_messages WHERE entity_id = ${sessionId}`.pipe(
          Effect.map((rows) => Number(rows[0]?.n ?? 0))
        )
        const agent = yield* Effect.provide(RemoteAgent.make(sessionId), context)
        const remove = Effect.provide(AgentEntity.remove(sessionId), context)

        // A completed turn, a turn cut by the delete, and a send queued behind it.
        yield* agent.followup(prompt("one"), { id: mid("m-1") })
        yield* agent.whenIdle
        yield* agent.followup(prompt("two"), { id: mid("m-2") })
        yield* agent.followup(prompt("three"), { id: mid("m-3") })
        yield* until("the second turn's model request", model.requests, (requests) => requests.length === 2)
        assert.isAbove(yield* storedMessages, 0)

        const removed = yield* Effect.exit(remove)
        // `Delete` has no payload (void: whatever is given travels as it is).
        yield* roundTrip(AgentEntity.Delete, null, removed)
        assert.deepStrictEqual(removed, Exit.succeed(true))
        const header = yield* Effect.flip(store.header(sessionId))
        assert.strictEqual(header.reason, "NotFound")
        assert.strictEqual(yield* storedMessages, 0, "no message of the entity is left to replay")
        // The keep-alive of the cut turn is released: the idle entity is passivated.
        yield* until("the entity's passivation", sharding.activeEntityCount, (n) => n === 0)
        assert.deepStrictEqual(yield* remove, false, "deleting again finds nothing")
        yield* roundTrip(
          AgentEntity.Delete,
          null,
          Exit.fail(new SessionStoreError.SessionStoreError({ reason: "Busy", message: "held", id: sessionId }))
        )

        // A later message starts a new, empty session.
        assert.strictEqual(yield* agent.followup(prompt("fresh"), { id: mid("m-4") }), mid("m-4"))
        yield* agent.whenIdle
        const events = yield* storedEvents(store)
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        assert.deepStrictEqual(
          events.flatMap((e) => e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []),
          [mid("m-4")]
        )
        assert.deepStrictEqual(yield* turnEnds(store), ["completed"])
        assert.strictEqual((yield* model.requests).length, 3, "the send queued behind the cut turn never ran")
      }).pipe(Effect.scoped),
    60_000
  )
})
