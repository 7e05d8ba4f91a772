/**
 * Tool replay on resume (R172), on a real SQLite file with a real child process: the child's model calls `lookup`
 * (`replay: "safe"`) and `poke` (`replay: "never"`); both start and block on a latch, and the child is SIGKILLed.
 * The test process then resumes the session with the latch open: crash repair answered `lookup`
 * `TOOL_REPLAY_PENDING` and `poke` `TOOL_OUTCOME_UNKNOWN`; the resumed agent runs `lookup` once more (and `poke`
 * never), and the model's next request carries `lookup`'s real result as a `harness/replay` message. A second
 * resume replays nothing. The log stays well-formed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids, type SessionEvent } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, Queue } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runChild, tempDir } from "./fixtures.js"
import { runs, tools } from "./fixtures/replayTools.js"

const id = Ids.SessionId.make("replay-session")

const results = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.filter((e): e is SessionEvent.SessionEventOf<"tool/result"> => e.type === "tool/result")
    .map((r) => [r.data.callId, r.data.error?.code])

/** Resumes the session in this process with the latch open; waits for the turn the replay starts to end. */
const resume = (dir: string, replies: ReadonlyArray<S.Reply>, waitTurn: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* SessionLog.open(id)
    const changes = yield* log.subscribe
    const before = (yield* log.state).lastTurn
    // What crash repair wrote decides whether a replay is due (a wrong repair fails the assertions, not a wait).
    const due = results(yield* log.events).some(([, code]) => code === "TOOL_REPLAY_PENDING")
    const agent = yield* Agent.make({ session: log, model: "scripted", tools: tools(dir) })
    if (waitTurn && due) {
      // The replay runs on the agent's own fiber: its followup wakes a turn; wait for that turn's end.
      while (true) {
        const event = yield* Queue.take(changes)
        if (event.type === "turn/end" && event.data.turn > before) break
      }
    }
    yield* agent.whenIdle
    yield* log.flush
    const requests = yield* (yield* S.ScriptedModel).requests
    return { events: yield* log.events, requests }
  })).pipe(Effect.provide(S.layer(replies)))

describe("tool replay across a SIGKILL", () => {
  it.scopedLive(
    "R172: a safe call a crash cut runs again on resume and its result reaches the model; a never call does not",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("replay")
        const store = SqliteStore.layer({ filename: path.join(dir, "sessions.db") })
        // 1. Both calls start (their `tool/call`s are durable: the dispatch barrier), block, and the child dies.
        const killed = yield* runChild("replayChild.ts", [dir], (out) =>
          ["STARTED lookup", "STARTED poke"].every((line) =>
            out.includes(line)
          ))
        assert.strictEqual(killed.signal, "SIGKILL")
        assert.sameMembers([...runs(dir)], ["lookup", "poke"])

        // 2. Resume with the latch open: `lookup` runs once more, `poke` does not, the model reads the result.
        fs.writeFileSync(path.join(dir, "release"), "")
        const first = yield* resume(dir, [S.textResponse("alpha is looked up.")], true).pipe(Effect.provide(store))
        assert.deepStrictEqual([...runs(dir)].sort(), ["lookup", "lookup", "poke"])
        assert.deepStrictEqual(results(first.events), [
          ["call-lookup", "TOOL_REPLAY_PENDING"],
          ["call-poke", "TOOL_OUTCOME_UNKNOWN"]
        ])
        assert.strictEqual(first.requests.length, 1)
        const prompt = JSON.stringify(first.requests[0]!.prompt)
        assert.include(prompt, "lookup of alpha", "the model's request carries the replayed result")
        assert.include(prompt, "safe to repeat", "the cut call's own result says it is replayed")
        assert.notInclude(prompt, "poke of beta")
        const replayed = first.events.filter((e) =>
          e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === "harness/replay"
        )
        assert.strictEqual(replayed.length, 1)
        assert.include(JSON.stringify(replayed[0]), "call-lookup")
        assert.deepStrictEqual(Invariants.logWellFormed(first.events), [])

        // 3. Another resume replays nothing: the result was delivered.
        const second = yield* resume(dir, [], false).pipe(Effect.provide(store))
        assert.deepStrictEqual([...runs(dir)].sort(), ["lookup", "lookup", "poke"])
        assert.strictEqual(second.requests.length, 0)
        assert.deepStrictEqual(Invariants.logWellFormed(second.events), [])
      }),
    60_000
  )
})
