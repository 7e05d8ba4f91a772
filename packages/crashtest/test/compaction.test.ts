/**
 * Compaction across a SIGKILL (ADR 0052, R148), on a real SQLite file with real child processes: a child starts a
 * manual compaction and is killed while the summary request is in flight (its model hangs once asked, and says so).
 * The next open repairs the log: it checks clean, holds no `compaction` record, and derives the same history as
 * before; a compaction after the resume then completes and logs its record.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { History, LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Effect } from "effect"
import * as path from "node:path"
import { runChild, tempDir } from "./fixtures.js"

/** The session's events, opened for writing (so a crashed tail is repaired first, R106), then closed. */
const reopen = (dir: string) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* SessionLog.open(Ids.SessionId.make("compaction-session"))
    const events = yield* log.events
    yield* log.close
    return events
  })).pipe(Effect.provide(SqliteStore.layer({ filename: path.join(dir, "sessions.db") })))

describe("compaction across a SIGKILL", () => {
  it.scopedLive(
    "R148: a compaction killed mid-request leaves no record and the history as before; the next one completes",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("compaction")
        const seeded = yield* runChild("compactionChild.ts", ["seed", dir])
        assert.include(seeded.out, "SEEDED")
        const before = yield* reopen(dir)
        assert.deepStrictEqual(LogCheck.checkLog(before), [])
        const history = History.deriveMessages(before)
        assert.strictEqual(history.length, 4, "two prompts and two answers")

        // Killed while the summary request is in flight: the model has been asked and has not answered.
        const killed = yield* runChild("compactionChild.ts", ["hang", dir], (out) => out.includes("ASKED"))
        assert.include(killed.out, "ASKED")
        assert.strictEqual(killed.signal, "SIGKILL")

        const repaired = yield* reopen(dir)
        assert.deepStrictEqual(LogCheck.checkLog(repaired), [])
        assert.isFalse(repaired.some((e) => e.type === "compaction"), "no compaction record")
        // The killed compaction's turn and step were logged before the request, and repair closed the turn.
        const cut = repaired.find((e) => e.type === "turn/start" && e.data.trigger.kind === "compaction")
        assert.isDefined(cut, "the compaction turn had started")
        const turn = cut?.type === "turn/start" ? cut.data.turn : -1
        assert.isTrue(repaired.some((e) => e.type === "step/start" && e.data.turn === turn))
        assert.isTrue(repaired.some((e) => e.type === "turn/end" && e.data.turn === turn))
        assert.deepStrictEqual(History.deriveMessages(repaired), history, "the derived history is as before")
        assert.deepStrictEqual(repaired.slice(0, before.length), before, "nothing before the crash changed")

        // After the resume a compaction completes: one record, the summary in place of the history.
        const done = yield* runChild("compactionChild.ts", ["compact", dir])
        assert.include(done.out, "DONE")
        const after = yield* reopen(dir)
        assert.deepStrictEqual(LogCheck.checkLog(after), [])
        const records = after.flatMap((e) => (e.type === "compaction" ? [e.data] : []))
        assert.deepStrictEqual(records.map((r) => [r.reason, r.model, r.messages]), [["manual", "summarizer", 4]])
        const derived = History.deriveMessages(after)
        assert.strictEqual(derived.length, 1)
        assert.include(JSON.stringify(derived[0]), "it is a small mammal")
      }),
    120_000
  )
})
