/**
 * The agent entity on `SingleRunner` over real SQLite files (the cluster's messages in one, the sessions in another),
 * in this process: a runner stopped gracefully mid-turn closes the turn through the agent's finalizers, and the next
 * runner over the same files resumes the pending inbox in order with no new message (the stored keep-alive activates
 * the entity). Runner processes killed with SIGKILL are not covered here.
 */
import { SingleRunner } from "@effect/cluster"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { LogCheck } from "@harness/session"
import { SessionStore } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Layer, Schedule } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { mid, prompt, sessionId, storedEvents, turnEnds } from "./fixtures.js"

/** One runner over the two files, with the scripted `replies`. */
const runner = (dir: string, replies: ReadonlyArray<S.Reply>) =>
  AgentEntity.layer().pipe(
    Layer.provideMerge(SingleRunner.layer({
      runnerStorage: "memory",
      // A 2 s termination timeout: the stop grace (four fifths of it, R216) the hanging turn waits out is 1.6 s.
      shardingConfig: {
        entityMessagePollInterval: "50 millis",
        entityReplyPollInterval: "20 millis",
        entityTerminationTimeout: "2 seconds"
      }
    })),
    Layer.provide(SqliteClient.layer({ filename: join(dir, "cluster.db") })),
    Layer.provideMerge(SqliteStore.layer({ filename: join(dir, "sessions.db") })),
    Layer.provideMerge(S.layer(replies))
  )

describe("AgentEntity on SingleRunner over SQLite", () => {
  it.live(
    "R188/R190: a graceful stop closes the turn; the next runner resumes the inbox in order with no new message",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "harness-cluster-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))

        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(runner(dir, [S.hanging(S.text("one"))]))
          const agent = yield* RemoteAgent.make(sessionId).pipe(Effect.provide(context))
          yield* agent.followup(prompt("one"), { id: mid("m-1") })
          yield* agent.followup(prompt("two"), { id: mid("m-2") })
          yield* agent.followup(prompt("three"), { id: mid("m-3") })
          assert.strictEqual((yield* agent.awaitReceipt(mid("m-1")))._tag, "ran")
        }))

        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(runner(dir, [S.textResponse("two"), S.textResponse("three")]))
          const store = yield* Effect.provide(SessionStore.SessionStore, context)
          // Nothing is sent to this runner: it is done when the stored log shows the two resumed turns completed.
          const ends = yield* turnEnds(store).pipe(
            Effect.filterOrFail((ends) => ends.length >= 3),
            // Polled: the outcome is the log's; the deadline only bounds a failure.
            Effect.retry(Schedule.spaced("50 millis")),
            Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the inbox was not resumed") })
          )
          assert.deepStrictEqual(ends, ["disposed", "completed", "completed"])
          const events = yield* storedEvents(store)
          assert.deepStrictEqual(
            events.flatMap((e) =>
              e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []
            ),
            [mid("m-1"), mid("m-2"), mid("m-3")]
          )
          assert.deepStrictEqual(LogCheck.checkLog(events), [])
        }))
      }).pipe(Effect.scoped),
    90_000
  )
})
