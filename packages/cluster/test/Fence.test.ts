/**
 * The fence (R251, R252), with two runner processes over one PostgreSQL database and this process as a client-only
 * node: the runner hosting a session is frozen (`SIGSTOP`) mid-turn past its shard-lock expiry and the session's lease
 * time, the other runner takes the shard over and resumes the session, and the frozen runner is thawed (`SIGCONT`).
 * Its late append is refused by the session's writer lease, nothing it wrote after the takeover is stored, the log
 * stays one well-formed history, and its stale entity stops.
 */
import { assert, describe, it } from "@effect/vitest"
import { LogCheck, SessionStore } from "@harness/session"
import { Effect } from "effect"
import { RemoteAgent } from "../src/index.js"
import { mid, prompt, sessionId, storedEvents } from "./fixtures.js"
import type { NodeConfig } from "./fixtures/node.js"
import * as Postgres from "./postgres.js"
import * as Processes from "./processes.js"
import { clientLayer, freePort, sharding, until } from "./runners.js"

describe("AgentEntity: the fence over PostgreSQL", () => {
  it.live(
    "R251/R252: a runner frozen past its lock expiry is taken over; thawed, its append is refused and its entity stops",
    () =>
      Effect.gen(function*() {
        const url = yield* Postgres.database
        const program = yield* Processes.bundle
        const runner = (port: number): NodeConfig => ({
          role: "runner",
          store: { kind: "pg", url },
          port,
          sharding,
          leaseTime: "3 seconds"
        })
        // The client first: it creates the tables, which two runners starting at once would race to create.
        const context = yield* clientLayer(url)
        const nodes = [
          yield* Processes.start(program, runner(yield* freePort)),
          yield* Processes.start(program, runner(yield* freePort))
        ]
        // Generous: a node starts in about a second alone, far slower on a machine shared with other work.
        for (const node of nodes) yield* node.waitFor("ready", (l) => l._tag === "ready", { deadline: 120_000 })
        yield* until("both runners holding their shards", context.shardOwners, (owners) => owners === 2, 60_000)
        const store = yield* Effect.provide(SessionStore.SessionStore, context.context)
        const agent = yield* Effect.provide(RemoteAgent.make(sessionId), context.context)

        // 1. The host's model call takes 4 s; the host is frozen as soon as it asks.
        yield* agent.followup(prompt("one [slow:4000]"), { id: mid("m-1") })
        const asked = yield* Effect.raceAll(
          nodes.map((node) => node.waitFor("the model request", (l) => l._tag === "asked").pipe(Effect.as(node)))
        )
        const host = asked
        const other = nodes.find((node) => node !== host)!
        yield* host.signal("SIGSTOP")

        // 2. The other runner takes the shard (the host's locks and heartbeat expire), activates the entity from its
        //    stored keep-alive once the session's lease lapses, and closes the cut turn; it then serves a new send.
        yield* other.waitFor("the takeover", (l) => l._tag === "entity-start", { deadline: 45_000 })
        const ends = (events: ReadonlyArray<{ readonly type: string; readonly data?: unknown }>) =>
          events.flatMap((e) => e.type === "turn/end" ? [(e.data as { reason: { kind: string } }).reason.kind] : [])
        yield* until("the cut turn closed", storedEvents(store), (events) => ends(events).length === 1)
        yield* agent.followup(prompt("two"), { id: mid("m-2") })
        assert.strictEqual((yield* agent.awaitReceipt(mid("m-2")))._tag, "ran")

        // 3. Thawed, the stale runner's model answers and its entity writes: the lease refuses it, and it stops.
        const from = host.lines().length
        yield* host.signal("SIGCONT")
        const refused = yield* host.waitFor("the refused append", (l) => l._tag === "refused", { from })
        assert.strictEqual(refused.reason, "Busy")
        const stale = host.lines().find((l) => l._tag === "entity-start")!
        yield* host.waitFor("the stale entity's stop", (l) => l._tag === "entity-stop" && l.instance === stale.instance)

        // 4. One history: the resumed turn closed by the repair, the second turn completed; nothing of the stale turn.
        const events = yield* until(
          "the second turn's end",
          storedEvents(store),
          (events) => ends(events).length >= 2
        )
        assert.deepStrictEqual(ends(events), ["interrupted", "completed"])
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        const texts = JSON.stringify(events.filter((e) => e.type === "assistant/message"))
        assert.include(texts, "ok two")
        assert.notInclude(texts, "ok one", "the stale runner's answer was not stored")
        assert.deepStrictEqual(
          events.flatMap((e) => e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []),
          [mid("m-1"), mid("m-2")]
        )
      }).pipe(Effect.scoped),
    240_000
  )
})
