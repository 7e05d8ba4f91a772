/**
 * `harness sessions` over a SQLite file written by a real agent (and inbox records as the durable inbox writes
 * them): `show` renders turns, tool calls and inbox events; `resume` continues a session with a prompt; a fork
 * records its parent; `rm` and `list` agree.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Ids } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { Clock, Effect } from "effect"
import { join } from "node:path"
import { onStore, scopedDir, storedEvents, writeOfflineSession } from "./fixtures.js"

/** Writes a one-turn session, then the inbox records of a queued message that was withdrawn; returns its id. */
const writeSession = (filename: string) =>
  writeOfflineSession(filename, ["hello there"], (session) =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const time = yield* Clock.currentTimeMillis
      const id = "a1b2c3d4-0000-4000-8000-000000000001" as Ids.AgentMessageId // a literal id for the record
      yield* store.append(session, {
        events: [],
        inbox: [
          {
            type: "inbox/accepted",
            time,
            message: { id, content: [{ type: "text", text: "what is a cat" }], source: { kind: "user" } },
            placement: "queued",
            wakeup: true
          },
          { type: "inbox/settled", time, id, fate: "withdrawn" }
        ]
      })
    }))

describe("harness sessions", { timeout: 300_000 }, () => {
  it.live("show renders turns and inbox events; resume continues; fork records its parent; rm (R97, R100, R112)", () =>
    Effect.gen(function*() {
      const dir = yield* scopedDir
      const db = join(dir, "s.db")
      const store = `sqlite:${db}`
      const id = yield* writeSession(db)
      const cli = onStore(store, dir)

      const show = yield* cli("sessions", "show", id.slice(0, 6))
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "turn 1 starts (message from user)")
      assert.include(show.stdout, "user: hello there")
      assert.match(show.stdout, /assistant: .*Hello! I am Harness's offline model/)
      assert.include(show.stdout, "inbox: accepted queued “what is a cat”")
      assert.include(show.stdout, "inbox: withdrawn “what is a cat”")
      assert.include(show.stdout, "the log checks clean")

      const resumed = yield* cli("sessions", "resume", id, "grep", "hello")
      assert.strictEqual(resumed.code, 0, resumed.stderr)
      assert.include(resumed.stderr, `session ${id}`)
      const events = yield* storedEvents(db, id)
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      assert.deepStrictEqual(
        events.flatMap((e) => (e.type === "turn/start" ? [e.data.turn] : [])),
        [1, 2],
        "the resumed prompt is turn 2 of the same session"
      )

      const firstEnd = events.find((e) => e.type === "turn/end")!
      const fork = yield* cli("sessions", "fork", id, "--at", String(firstEnd.seq))
      assert.strictEqual(fork.code, 0, fork.stderr)
      const forkId = /into ([0-9a-f-]{36})/.exec(fork.stdout)![1]!
      const forkShow = yield* cli("sessions", "show", forkId)
      assert.include(forkShow.stdout, `forked from ${id} at #${firstEnd.seq}`)
      const list = yield* cli("sessions", "list")
      assert.include(list.stdout, "2 sessions")
      assert.include(list.stdout, `fork of ${id.slice(0, 8)}@${firstEnd.seq}`)

      const tooEarly = yield* cli("sessions", "fork", id, "--at", "0")
      assert.strictEqual(tooEarly.code, 1)
      assert.include(tooEarly.stderr, "has no turn boundary at or before #0: give a later --at")

      const rm = yield* cli("sessions", "rm", forkId)
      assert.strictEqual(rm.code, 0, rm.stderr)
      const after = yield* cli("sessions", "list")
      assert.include(after.stdout, "1 session (last active last)")
    }).pipe(Effect.scoped))
})
