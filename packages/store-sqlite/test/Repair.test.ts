/**
 * Crash repair (R106) over a real SQLite file whose rows are damaged by hand: a torn tail of rows is deleted and
 * the open turn closed durably; damage before the last committed turn/end is a readable error.
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { block, ev, promptTurn, sessionId } from "@harness/testkit/Events"
import Database from "better-sqlite3"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-repair-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const withStore = <A, E>(filename: string, f: Effect.Effect<A, E, SessionStore.SessionStore>) =>
  Effect.scoped(f.pipe(Effect.provide(SqliteStore.layer({ filename }))))

/** Runs raw SQL on the file, as a damaged disk (or a hand) would change it. */
const tamper = <A>(filename: string, f: (db: Database.Database) => A): A => {
  const db = new Database(filename)
  try {
    return f(db)
  } finally {
    db.close()
  }
}

const sid = sessionId("s1")

const openTurn: ReadonlyArray<SessionEvent.SessionEventInput> = [
  ev.user("Run it", MessageSource.user, "p2"),
  ev.turnStart(2),
  ev.stepStart(2, 1),
  ev.assistant(2, 1, [block.toolCall("a", "sh", "{}")]),
  ev.toolCall(2, 1, "a", "sh"),
  ev.chunk(2, 1, { type: "text-delta", delta: "tail" })
]

const write = (filename: string, inputs: ReadonlyArray<SessionEvent.SessionEventInput>) =>
  withStore(
    filename,
    Effect.gen(function*() {
      const log = yield* SessionLog.make({ id: sid })
      yield* log.appendAll(inputs)
      yield* log.flush
      return yield* log.events
    })
  )

const rows = (filename: string) =>
  tamper(filename, (db) => (db.prepare("SELECT count(*) AS n FROM records").get() as { n: number }).n)

describe("SqliteStore crash repair (R106)", () => {
  it.live("torn rows after the last turn/end are deleted; the open turn is closed with the closers, durably", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      const written = yield* write(filename, [...promptTurn(1, "Hi", "Hello"), ...openTurn])
      // the last row (the chunk at position 13) is cut short, as a torn write would leave it
      tamper(filename, (db) => db.prepare("UPDATE records SET text = substr(text, 1, 25) WHERE position = 13").run())
      const events = yield* withStore(filename, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
      assert.deepStrictEqual(events.slice(0, 13), written.slice(0, 13))
      assert.deepStrictEqual(events.slice(13).map((e) => e.type), ["tool/result", "step/end", "turn/end"])
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      assert.strictEqual(rows(filename), 16)
      const again = yield* withStore(filename, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
      assert.deepStrictEqual(again, events)
      const listed = yield* withStore(filename, Effect.flatMap(SessionStore.SessionStore, (s) => s.list))
      assert.strictEqual(listed[0]!.events, 16)
    }).pipe(Effect.scoped))

  it.live("a row out of seq order after the last turn/end (a seq gap) starts the torn tail", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      yield* write(filename, [...promptTurn(1, "Hi", "Hello"), ...openTurn])
      tamper(
        filename,
        (db) =>
          db.prepare("UPDATE records SET text = replace(text, '\"seq\":10,', '\"seq\":99,') WHERE position = 10").run()
      )
      const events = yield* withStore(filename, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
      // positions 8, 9 kept (user/message, turn/start); the turn is closed at once
      assert.deepStrictEqual(events.slice(8).map((e) => e.type), ["user/message", "turn/start", "turn/end"])
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
    }).pipe(Effect.scoped))

  it.live("a damaged row before the last committed turn/end fails open with a readable error and changes nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      yield* write(filename, [...promptTurn(1, "Hi", "Hello"), ...promptTurn(2, "More", "Ok")])
      tamper(filename, (db) => db.prepare("UPDATE records SET text = '{\"seq\":4,' WHERE position = 4").run())
      const error = yield* Effect.flip(withStore(filename, SessionLog.open(sid)))
      if (error._tag !== "SessionLogError") return assert.fail(`expected a SessionLogError, got ${error._tag}`)
      assert.strictEqual(error.reason, "corrupt")
      assert.strictEqual(error.session, sid)
      assert.strictEqual(error.position, 4)
      assert.include(error.message, "session \"s1\" is corrupt at stored record 4: it is not a record")
      assert.strictEqual(rows(filename), 16)
    }).pipe(Effect.scoped))
})
