import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@harness/session"
import { SessionLog } from "@harness/session"
import { conformance, events, eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { sqlStoreSuite } from "@harness/store-sql/test/sqlStoreSuite"
import { ev, promptTurn, sessionId as sid } from "@harness/testkit/Events"
import Database from "better-sqlite3"
import { Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

/** A fresh temporary directory, deleted when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A store on a new database file in a fresh temporary directory. */
const fresh = Layer.unwrapScoped(
  Effect.map(tempDir, (dir) => SqliteStore.layer({ filename: path.join(dir, "sessions.db") }))
)

conformance("sqlite (file, WAL)", fresh)
conformance("sqlite (:memory:)", SqliteStore.layer({ filename: ":memory:" }))

describe("SqliteStore", () => {
  it.live("a reopened database keeps its sessions, in WAL mode, with the schema applied once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      const s1 = sid("s1")
      const withStore = <A, E>(f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
        Effect.scoped(
          Effect.flatMap(SessionStore.SessionStore, f).pipe(Effect.provide(SqliteStore.layer({ filename })))
        )
      yield* withStore((store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), eventsCommit(events(0, [ev.user("hello")])))
          yield* store.append(s1, eventsCommit(events(1, [ev.user("again")])), { sync: true })
        })
      )
      const reopened = yield* withStore((store) => loadAll(store, s1))
      assert.deepStrictEqual(reopened.map((r) => r.position), [0, 1])
      const db = new Database(filename, { readonly: true })
      try {
        assert.strictEqual(db.pragma("journal_mode", { simple: true }), "wal")
        assert.deepStrictEqual(db.prepare("SELECT migration_id, name FROM harness_migrations").all(), [
          { migration_id: 1, name: "sessions" },
          { migration_id: 2, name: "snapshot_heads" },
          { migration_id: 3, name: "leases" }
        ])
      } finally {
        db.close()
      }
    }).pipe(Effect.scoped))

  it.live("ADR 0027: a database of the first schema, with a first-format snapshot, migrates and opens by a replay", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      const s1 = sid("s1")
      const layer = SqliteStore.layer({ filename })
      const logged = yield* Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: s1, commit: { snapshotEvery: 0 } })
        yield* log.appendAll([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
        yield* log.flush
        return yield* log.events
      }).pipe(Effect.provide(layer), Effect.scoped)
      // Back to the first schema, as a database written before ADR 0027 is: one snapshot text per session.
      const db = new Database(filename)
      try {
        db.exec(
          `DROP TABLE snapshot_heads; DROP TABLE snapshot_bodies; DELETE FROM harness_migrations WHERE migration_id >= 2;
          DROP TABLE lease_tokens; ALTER TABLE sessions DROP COLUMN lease_token; ALTER TABLE sessions DROP COLUMN lease_pid;
          ALTER TABLE sessions DROP COLUMN lease_host; ALTER TABLE sessions DROP COLUMN lease_since;
          ALTER TABLE sessions DROP COLUMN lease_renewed;
          CREATE TABLE snapshots (session INTEGER PRIMARY KEY, seq INTEGER NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL);
          INSERT INTO snapshots SELECT key, 7, 7, '{"format":"harness/snapshot","version":1}' || char(10) || '[]' FROM sessions;`
        )
      } finally {
        db.close()
      }
      const [snapshot, events] = yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const snapshot = yield* store.loadSnapshot(s1)
        const log = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
        return [snapshot, yield* log.events] as const
      }).pipe(Effect.provide(layer), Effect.scoped)
      assert.isTrue(Option.isNone(snapshot), "the first-format snapshot is gone")
      assert.deepStrictEqual(events, logged)
      const check = new Database(filename, { readonly: true })
      try {
        assert.deepStrictEqual(
          check.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'snapshot%' ORDER BY name")
            .all(),
          [{ name: "snapshot_bodies" }, { name: "snapshot_heads" }]
        )
      } finally {
        check.close()
      }
    }).pipe(Effect.scoped))

  it.live("ADR 0010: a synced commit runs at synchronous = FULL, every other at NORMAL, whatever the connection was at", () =>
    Effect.flatMap(tempDir, (dir) =>
      Effect.gen(function*() {
        const sql = yield* SqliteClient.SqliteClient
        const mode = Effect.map(
          sql<{ readonly synchronous: number }>`PRAGMA synchronous`,
          (rows) => rows[0]!.synchronous
        )
        yield* sql`PRAGMA synchronous = OFF`
        const store = yield* SqliteStore.make()
        const s1 = sid("s1")
        const [normal, full] = [1, 2]
        yield* store.create(header(s1))
        assert.strictEqual(yield* mode, normal, "create")
        yield* store.append(s1, eventsCommit(events(0, [ev.user("a")])), { sync: true })
        assert.strictEqual(yield* mode, full, "a synced commit")
        yield* store.append(s1, eventsCommit(events(1, [ev.user("b")])), { sync: true })
        yield* store.append(s1, { events: [], inbox: [] }, { sync: true })
        assert.strictEqual(yield* mode, full, "synced commits in a row (and a barrier)")
        yield* store.append(s1, eventsCommit(events(2, [ev.user("c")])))
        assert.strictEqual(yield* mode, normal, "an unsynced commit")
        assert.strictEqual((yield* loadAll(store, s1)).length, 3)
      }).pipe(Effect.provide(SqliteClient.layer({ filename: path.join(dir, "sessions.db") })))).pipe(Effect.scoped))

  it.live("a file that cannot be opened fails the layer with Io", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(Layer.build(SqliteStore.layer({ filename: "/nonexistent-dir/x/sessions.db" })))
      )
      assert.strictEqual(error.reason, "Io")
      assert.include(error.message, "/nonexistent-dir/x/sessions.db")
    }))
})

sqlStoreSuite(
  "sqlite",
  (leaseTime) =>
    Layer.unwrapScoped(
      Effect.map(tempDir, (dir) =>
        Layer.effect(SessionStore.SessionStore, SqliteStore.make({ leaseTime })).pipe(
          Layer.provideMerge(SqliteClient.layer({ filename: path.join(dir, "sessions.db") })),
          Layer.orDie
        ))
    )
)
