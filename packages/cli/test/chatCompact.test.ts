/**
 * `/compact` in `harness chat` (R149), typed in a real terminal (`./terminal.ts`): it compacts the conversation with
 * the typed focus as the instruction; the stored log keeps the history and holds one manual `compaction` record, and
 * the next turn's request starts with the summary.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, type SessionEvent } from "@harness/domain"
import { History, LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Effect } from "effect"
import { join } from "node:path"
import { scopedDir } from "./fixtures.js"
import { bin } from "./support.js"
import * as Terminal from "./terminal.js"

const text = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) =>
    e.type === "user/message" || e.type === "steering/message" ? [e.data.content.map((b) => b.text).join("")] : []
  )

describe("harness chat /compact", { timeout: 300_000 }, () => {
  it.live("R149: /compact <focus> compacts the conversation with the focus as its instruction; later requests carry the summary", () =>
    Effect.gen(function*() {
      const dir = yield* scopedDir
      const db = join(dir, "chat.db")
      const term = yield* Terminal.open({
        command: `env NO_COLOR=1 HARNESS_OFFLINE_PACE_MS=0 ${process.execPath} ${bin} chat --store sqlite:${db}`,
        cwd: dir,
        columns: 160,
        rows: 50
      })
      const opened = yield* term.waitFor("idle · 0 tokens · /help", 90)
      const id = /new session ([0-9a-f-]{36})/.exec(opened)?.[1]
      assert.isDefined(id, opened)
      yield* term.send("what is a cat")
      yield* term.waitFor("You said “what is a cat”", 90)
      // `/compact` is refused while a turn runs (R149): wait for the turn to end.
      yield* term.waitFor(/idle · [1-9]\d* tokens · \/help/, 90)
      yield* term.send("/compact keep the animals")
      yield* term.waitFor("compacting: the next requests carry a summary of the conversation", 90)
      // Typed while the compaction may still run: steering of its turn (Enter while busy), or a turn of its own once
      // idle; either way it lands after the record (R151).
      yield* term.send("and a dog")
      yield* term.waitFor("You said “and a dog”", 90)
      yield* term.waitFor(/idle · [1-9]\d* tokens · \/help/, 90)
      yield* term.press("C-c", "C-c")
      yield* term.waitFor("bye — session", 90)

      const events = yield* Effect.scoped(
        Effect.flatMap(SessionLog.open(Ids.SessionId.make(id!), { readOnly: true }), (log) => log.events)
      ).pipe(Effect.provide(SqliteStore.layer({ filename: db })))
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      const records = events.flatMap((e) => e.type === "compaction" ? [e.data] : [])
      assert.strictEqual(records.length, 1)
      assert.strictEqual(records[0]!.reason, "manual")
      // The offline model answers the instruction it was given: the typed focus.
      assert.include(records[0]!.summary, "keep the animals")
      assert.deepStrictEqual(text(events), ["what is a cat", "and a dog"], "the log keeps every prompt")
      const derived = History.deriveMessages(events)
      assert.include(JSON.stringify(derived[0]), "keep the animals", "the history starts with the summary")
      assert.notInclude(JSON.stringify(derived), "what is a cat")
    }).pipe(Effect.scoped))
})
