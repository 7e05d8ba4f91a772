/**
 * The store's write transactions (`SqlStore.writer`, ADR 0029) on a real SQLite file: a write is all or nothing —
 * failed or interrupted after its first statement it leaves no trace and the connection takes the next write —
 * and a read issued while a write is open waits for it and sees the committed rows only.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import { SqlStore } from "@harness/store-sql"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** A SQLite client on a file in a temporary directory, with one table. */
const client = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-writer-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => SqliteClient.layer({ filename: path.join(dir, "w.db") })
))

const table = Effect.flatMap(
  SqliteClient.SqliteClient,
  (sql) => Effect.as(sql`CREATE TABLE t (n INTEGER PRIMARY KEY)`, sql)
)

const rows = (sql: SqliteClient.SqliteClient) =>
  Effect.map(sql<{ readonly n: number }>`SELECT n FROM t ORDER BY n`, (rs) => rs.map((r) => r.n))

describe("SqlStore.writer on SQLite", () => {
  it.scoped("a write that fails after a statement leaves nothing, and the next write commits", () =>
    Effect.gen(function*() {
      const sql = yield* table
      const write = SqlStore.writer(sql, { sync: false })
      const failed = yield* Effect.flip(
        write((run) => Effect.zipRight(run(sql`INSERT INTO t VALUES (1)`), Effect.fail("refused" as const)))
      )
      assert.strictEqual(failed, "refused")
      assert.deepStrictEqual(yield* rows(sql), [])
      yield* write((run) => run(sql`INSERT INTO t VALUES (2)`))
      assert.deepStrictEqual(yield* rows(sql), [2])
    }).pipe(Effect.provide(client)))

  it.scoped("a write interrupted mid-way is rolled back; a read waits for the open write and sees only commits", () =>
    Effect.gen(function*() {
      const sql = yield* table
      const write = SqlStore.writer(sql, { sync: false })
      const inside = yield* Deferred.make<void>()
      const open = yield* Effect.fork(
        write((run) =>
          Effect.zipRight(
            run(sql`INSERT INTO t VALUES (1)`),
            Effect.zipRight(Deferred.succeed(inside, undefined), Effect.never)
          )
        )
      )
      yield* Deferred.await(inside)
      const read = yield* Effect.fork(rows(sql))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(read)))
      yield* Fiber.interrupt(open)
      assert.deepStrictEqual(yield* Fiber.join(read), [])
      yield* write((run) => run(sql`INSERT INTO t VALUES (3)`), true)
      assert.deepStrictEqual(yield* rows(sql), [3])
    }).pipe(Effect.provide(client)))
})
