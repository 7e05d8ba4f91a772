/**
 * The agent entity on `SingleRunner` over SQLite files, with every runner a real child process (`fixtures/node.ts`)
 * and this process a client-only node over the same files. Sends made while no runner runs are stored and delivered
 * in order once one starts; a runner SIGKILLed mid-turn is followed by one that resumes with no new message (the cut
 * turn closed `interrupted` by the log's repair, the inbox drained in order); a runner stopped gracefully (`SIGTERM`)
 * mid-turn closes the turn through the agent's finalizers (`disposed`) and the next runner drains the rest.
 */
import { SingleRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { Operations } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Effect, Fiber, Layer, Option } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { mid, prompt, sessionId, storedEvents, turnEnds } from "./fixtures.js"
import type { NodeConfig } from "./fixtures/node.js"
import * as Processes from "./processes.js"
import { until } from "./runners.js"

const sharding = { entityMessagePollInterval: "100 millis", entityReplyPollInterval: "50 millis" } as const

/** This process: a client-only node over the cluster's file, and the session store for reading. */
const client = (dir: string) =>
  SingleRunner.layer({ runnerStorage: "memory", shardingConfig: { ...sharding, runnerAddress: Option.none() } }).pipe(
    Layer.provideMerge(SqliteClient.layer({ filename: join(dir, "cluster.db") })),
    Layer.merge(SqliteStore.layer({ filename: join(dir, "sessions.db") }))
  )

describe("AgentEntity: runner processes over SQLite", () => {
  it.live(
    "R190/R250: sends stored while no runner runs are delivered in order; SIGKILL mid-turn resumes with no new message; SIGTERM closes the turn",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "harness-cluster-sqlite-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const program = yield* Processes.bundle
        const config: NodeConfig = { role: "runner", store: { kind: "sqlite", dir }, sharding }
        const context = yield* Layer.build(client(dir))
        const store = yield* Effect.provide(SessionStore.SessionStore, context)
        const sql = yield* Effect.provide(SqlClient.SqlClient, context)
        const stored = sql<{ readonly n: number }>`SELECT COUNT(*) AS n FROM cluster_messages`.pipe(
          Effect.map((rows) => Number(rows[0]?.n ?? 0))
        )

        // 1. No runner: three sends stored (the client does not wait for their answers), then a fourth that waits.
        const entity = yield* Effect.provide(AgentEntity.AgentEntity.client, context)
        const followup = (id: string, text: string) =>
          entity(sessionId).Followup(
            { id: mid(id), operation: new Operations.Followup({ message: prompt(text), options: { id: mid(id) } }) },
            { discard: true }
          )
        yield* followup("m-1", "one [hang]")
        yield* followup("m-2", "two [hang]")
        yield* followup("m-3", "three")
        const agent = yield* RemoteAgent.make(sessionId).pipe(Effect.provide(context))
        const fourth = yield* Effect.fork(agent.followup(prompt("four"), { id: mid("m-4") }))
        yield* until("four stored messages", stored, (n) => n === 4)

        // 2. A runner starts, delivers them in order and is SIGKILLed while the first turn's model call hangs.
        const first = yield* Processes.start(program, config)
        yield* first.waitFor("the first turn's model request", (l) => l._tag === "asked" && l.text === "one [hang]", {
          deadline: 120_000
        })
        yield* first.signal("SIGKILL")
        assert.strictEqual(yield* first.exited, "SIGKILL")
        assert.deepStrictEqual(yield* turnEnds(store), [], "the turn was cut open")

        // 3. The next runner gets no message: its stored keep-alive activates the entity, the repair closes the cut
        //    turn, and the inbox runs on; it is stopped gracefully while the second turn hangs.
        const second = yield* Processes.start(program, config)
        yield* second.waitFor("the second turn's model request", (l) => l._tag === "asked" && l.text === "two [hang]", {
          deadline: 120_000
        })
        assert.isUndefined(
          second.lines().find((l) => l._tag === "asked" && l.text === "one [hang]"),
          "the cut turn is not run again"
        )
        yield* second.signal("SIGTERM")
        yield* second.waitFor("the entity's stop", (l) => l._tag === "entity-stop")
        assert.strictEqual(yield* second.exited, "exit 0")
        assert.deepStrictEqual(yield* turnEnds(store), ["interrupted", "disposed"])

        // 4. A third runner drains the rest in order; the waiting send was answered with its id.
        const third = yield* Processes.start(program, config)
        const ends = yield* until("four closed turns", turnEnds(store), (ends) => ends.length >= 4, 120_000)
        assert.deepStrictEqual(ends, ["interrupted", "disposed", "completed", "completed"])
        assert.deepStrictEqual(yield* Fiber.join(fourth), mid("m-4"))
        assert.deepStrictEqual(
          third.lines().filter((l) => l._tag === "asked").map((l) => l.text),
          ["three", "four"]
        )
        const events = yield* storedEvents(store)
        assert.deepStrictEqual(
          events.flatMap((e) => e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []),
          [mid("m-1"), mid("m-2"), mid("m-3"), mid("m-4")]
        )
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
      }).pipe(Effect.scoped),
    240_000
  )
})
