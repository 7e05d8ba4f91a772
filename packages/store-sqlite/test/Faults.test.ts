/**
 * Store faults on a real SQLite file: a full disk is a typed `Io` failure that the session log
 * retries and recovers from once space returns (nothing lost); a connection closed under the store is `Closed`,
 * which the log does not retry, so `flush` fails with a typed error instead of hanging; the README's example works.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import { Ids, MessageSource } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { ev, promptTurn } from "@harness/testkit/Events"
import { Context, Effect, Exit, Fiber, Layer, Queue, Schedule, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-faults-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const id = Ids.SessionId.make("s1")

/** Every event stored for `id`, read back through a fresh store on the file. */
const storedEvents = (filename: string) =>
  Effect.flatMap(SessionLog.open(id, { readOnly: true }), (log) => log.events).pipe(
    Effect.provide(SqliteStore.layer({ filename })),
    Effect.scoped
  )

describe("SqliteStore faults", () => {
  it.live(
    "a full disk (SQLITE_FULL) is Io, retried by the log; once space returns the same log flushes, nothing lost",
    () =>
      Effect.gen(function*() {
        const filename = path.join(yield* tempDir, "sessions.db")
        const client = yield* Layer.build(SqliteClient.layer({ filename }))
        const sql = Context.get(client, SqliteClient.SqliteClient)
        const store = yield* Effect.provide(SqliteStore.make(), client)
        const log = yield* SessionLog.make({ id, commit: { retry: Schedule.spaced("5 millis") } }).pipe(
          Effect.provideService(SessionStore.SessionStore, store)
        )
        assert.strictEqual(log.commitMode, "write-behind")
        const faults = yield* log.subscribeFaults
        yield* log.appendAll(promptTurn(1, "small", "ok"))
        yield* log.flush
        // The disk is full: the database may not grow by a page.
        const [pages] = yield* sql<{ readonly page_count: number }>`PRAGMA page_count`
        yield* sql.unsafe(`PRAGMA max_page_count = ${pages!.page_count}`)
        // One record alone in its commit: SQLite then rolls the whole transaction back itself (a one-row INSERT has
        // no statement journal), so the writer's own ROLLBACK finds no transaction.
        const big = "x".repeat(200_000)
        yield* log.append(ev.user(big))
        const flushing = yield* Effect.fork(log.flush)
        const first = yield* Queue.take(faults)
        assert.strictEqual(first.reason, "Io")
        assert.match(first.message, /full/i)
        // retried, and failing again while the disk stays full
        assert.strictEqual((yield* Queue.take(faults)).reason, "Io")
        assert.isNull(flushing.unsafePoll())
        // space returns: the same log recovers
        yield* sql.unsafe(`PRAGMA max_page_count = 1073741823`)
        yield* Fiber.join(flushing)
        yield* log.appendAll(promptTurn(2, "after", "ok"))
        yield* log.close
        const events = yield* storedEvents(filename)
        assert.deepStrictEqual(events, yield* log.events)
        assert.strictEqual(events.filter((e) => e.type === "turn/end").length, 2)
        assert.strictEqual(events.filter((e) => e.type === "user/message").length, 3)
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a connection closed under the store is Closed: the log does not retry it and flush fails, typed",
    () =>
      Effect.gen(function*() {
        const filename = path.join(yield* tempDir, "sessions.db")
        const scope = yield* Scope.make()
        const store = Context.get(
          yield* Layer.buildWithScope(SqliteStore.layer({ filename }), scope),
          SessionStore.SessionStore
        )
        const log = yield* SessionLog.make({ id, commit: { retry: Schedule.spaced("5 millis") } }).pipe(
          Effect.provideService(SessionStore.SessionStore, store)
        )
        yield* log.appendAll(promptTurn(1, "kept", "ok"))
        yield* log.flush
        // closed under the store, as the README's old example did
        yield* Scope.close(scope, Exit.void)
        yield* log.appendAll(promptTurn(2, "lost with the connection", "ok"))
        const error = yield* Effect.flip(log.flush)
        assert.strictEqual(error.reason, "store")
        assert.include(error.message, "(Closed)")
        const listed = yield* Effect.flip(store.list)
        assert.strictEqual(listed.reason, "Closed")
        assert.include(listed.message, "SQLite failed to list the sessions")
        // what was flushed before is stored
        const events = yield* storedEvents(filename)
        assert.strictEqual(events.filter((e) => e.type === "turn/end").length, 1)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("the README's example: the log is used inside the layer, and the session is stored", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "sessions.db")
      // --- README
      const program = Effect.gen(function*() {
        const log = yield* SessionLog.make({ title: "scratch" })
        yield* log.append({
          type: "user/message",
          data: { content: [{ type: "text", text: "Hello" }], source: MessageSource.user }
        })
        yield* log.close
        return log.id
      }).pipe(Effect.provide(SqliteStore.layer({ filename })))
      // ---
      const created = yield* program
      const events = yield* Effect.flatMap(SessionLog.open(created, { readOnly: true }), (log) => log.events).pipe(
        Effect.provide(SqliteStore.layer({ filename }))
      )
      assert.deepStrictEqual(events.map((e) => e.type), [ev.user("Hello").type])
    }).pipe(Effect.scoped))
})
