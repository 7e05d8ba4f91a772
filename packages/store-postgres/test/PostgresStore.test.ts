import * as PgClient from "@effect/sql-pg/PgClient"
import * as Statement from "@effect/sql/Statement"
import { assert, describe, it } from "@effect/vitest"
import { SessionLog, SessionStore } from "@harness/session"
import { accepted, conformance, events, eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { sqlStoreSuite } from "@harness/store-sql/test/sqlStoreSuite"
import { ev, messageId as mid, promptTurn, sessionId as sid } from "@harness/testkit/Events"
import { Context, Deferred, type Duration, Effect, Fiber, Layer, Option, Queue, Redacted, Schedule } from "effect"
import { PostgresStore } from "../src/index.js"
import { freshDatabase, urlOf } from "./database.js"

/** A store on a fresh database of the test server. */
const fresh = Layer.unwrapScoped(
  Effect.map(freshDatabase, (name) => PostgresStore.layer({ url: Redacted.make(urlOf(name)) }))
)

conformance("postgres", fresh)

describe("PostgresStore", () => {
  const s1 = sid("s1")

  it.live("two stores on one database share sessions; racing appends of one session: one wins, one Conflicts", () =>
    Effect.gen(function*() {
      const name = yield* freshDatabase
      const layer = PostgresStore.layer({ url: Redacted.make(urlOf(name)) })
      const a = yield* Layer.build(layer)
      const b = yield* Layer.build(layer)
      const storeA = Context.get(a, SessionStore.SessionStore)
      const storeB = Context.get(b, SessionStore.SessionStore)
      yield* storeA.create(header(s1))
      assert.deepStrictEqual((yield* storeB.list).map((s) => s.header.id), [s1])
      for (let seq = 0; seq < 20; seq++) {
        const commit = eventsCommit(events(seq, [ev.user(`m${seq}`)]))
        const results = yield* Effect.all([storeA.append(s1, commit), storeB.append(s1, commit)], {
          concurrency: 2,
          mode: "either"
        })
        assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1, `seq ${seq}`)
        const lost = results.find((r) => r._tag === "Left")
        assert.strictEqual(lost?._tag === "Left" ? lost.left.reason : undefined, "Conflict")
      }
      assert.strictEqual((yield* loadAll(storeB, s1)).length, 20)
      yield* storeB.append(s1, { events: [], inbox: [accepted("m", "x")] }, { sync: false })
      assert.isTrue(yield* storeA.hasMessage(s1, mid("m")))
    }).pipe(Effect.scoped))

  it.live("a server that cannot be reached fails the layer with Io", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(Layer.build(PostgresStore.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:1/none") })))
      )
      assert.strictEqual(error.reason, "Io")
    }))
})

/** A fresh database's store and its client, with the given lease time. */
const freshWithClient = (leaseTime?: Duration.DurationInput) =>
  Layer.unwrapScoped(
    Effect.map(freshDatabase, (name) =>
      Layer.effect(SessionStore.SessionStore, PostgresStore.make({ leaseTime })).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(urlOf(name)) })),
        Layer.orDie
      ))
  )

sqlStoreSuite("postgres", freshWithClient)

/** A transformer that holds the statement starting with `prefix` until `go`, after announcing it on `reached`. */
const pauseAt =
  (prefix: string, reached: Deferred.Deferred<void>, go: Deferred.Deferred<void>): Statement.Statement.Transformer =>
  (statement) =>
    statement.compile()[0].trimStart().startsWith(prefix)
      ? Effect.as(Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(go)), statement)
      : Effect.succeed(statement)

describe("PostgresStore writes: locks and durability", () => {
  const s1 = sid("s1")
  const turnOne = events(0, promptTurn(1, "One", "1"))
  const turnTwo = events(turnOne.length, promptTurn(2, "Two", "2"))

  /**
   * Runs `first` (paused at its statement starting with `prefix`) and, while it is paused, `second` on another store
   * of the same database; lets `first` go once `second` finished or waits for a row lock. Returns `second`'s result.
   */
  const interleave = <A>(
    prefix: string,
    first: (store: SessionStore.Service) => Effect.Effect<void, SessionStore.SessionStoreError>,
    second: (store: SessionStore.Service) => Effect.Effect<A, SessionStore.SessionStoreError>
  ) =>
    Effect.gen(function*() {
      const name = yield* freshDatabase
      const url = Redacted.make(urlOf(name))
      const context = yield* Layer.build(
        Layer.effect(SessionStore.SessionStore, PostgresStore.make()).pipe(Layer.provideMerge(PgClient.layer({ url })))
      )
      const [a, sql] = [Context.get(context, SessionStore.SessionStore), Context.get(context, PgClient.PgClient)]
      const b = Context.get(yield* Layer.build(PostgresStore.layer({ url })), SessionStore.SessionStore)
      yield* a.create(header(s1), eventsCommit(turnOne))
      const reached = yield* Deferred.make<void>()
      const go = yield* Deferred.make<void>()
      const paused = yield* Effect.fork(Statement.withTransformer(first(a), pauseAt(prefix, reached, go)))
      yield* Deferred.await(reached)
      const other = yield* Effect.fork(Effect.either(second(b)))
      const waiting = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`
      yield* Effect.repeat(Effect.zip(waiting, other.poll), {
        schedule: Schedule.spaced("10 millis"),
        until: ([rows, done]) => rows[0]!.n > 0 || done._tag === "Some"
      })
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(paused)
      return { store: a, result: yield* Fiber.join(other) }
    })

  it.live("a truncate locks the session's row: a writer taking the lease over meanwhile waits, and nothing it was told is stored is lost", () =>
    Effect.gen(function*() {
      const { result, store } = yield* interleave(
        "DELETE FROM records",
        (a) => Effect.flatMap(a.lease(s1), (lease) => a.truncate(s1, 2, { lease })),
        (b) => Effect.flatMap(b.lease(s1), (lease) => b.append(s1, eventsCommit(turnTwo), { lease }))
      )
      const stored = (yield* loadAll(store, s1)).length
      if (result._tag === "Right") assert.strictEqual(stored, 2 + turnTwo.length, "the acknowledged append is stored")
      else {
        assert.strictEqual(result.left.reason, "Conflict")
        assert.strictEqual(stored, 2)
      }
    }).pipe(Effect.scoped))

  it.live("a snapshot locks the session's row: a truncate meanwhile waits, and no snapshot covers dropped records", () =>
    Effect.gen(function*() {
      const { result, store } = yield* interleave(
        "INSERT INTO snapshot_heads",
        (a) =>
          Effect.flatMap(
            a.lease(s1),
            (lease) => a.saveSnapshot(s1, { seq: 6, position: 6, head: "h", body: "b" }, { lease })
          ),
        (b) => Effect.flatMap(b.lease(s1), (lease) => b.truncate(s1, 3, { lease }))
      )
      assert.strictEqual(result._tag, "Right")
      const stored = (yield* loadAll(store, s1)).length
      assert.strictEqual(stored, 3)
      const snapshot = yield* store.loadSnapshot(s1)
      assert.isTrue(
        Option.isNone(snapshot) || snapshot.value.position < stored,
        `a snapshot at ${Option.getOrUndefined(snapshot)?.position} of ${stored} records`
      )
    }).pipe(Effect.scoped))

  it.live("a synced commit runs with synchronous_commit on, an unsynced one with it off (checked on the commit's own connection)", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const sql = yield* PgClient.PgClient
      const seen: Array<string> = []
      // Asks the engine, inside each commit's transaction, what its synchronous_commit is.
      const record: Statement.Statement.Transformer = (statement) =>
        /^\s*(INSERT INTO records|UPDATE sessions SET records = records)/.test(statement.compile()[0])
          ? Effect.as(
            Effect.flatMap(
              Effect.orDie(sql<{ readonly synchronous_commit: string }>`SHOW synchronous_commit`),
              (rows) => Effect.sync(() => seen.push(rows[0]!.synchronous_commit))
            ),
            statement
          )
          : Effect.succeed(statement)
      yield* store.create(header(s1))
      const commits = [turnOne, turnTwo, events(turnOne.length + turnTwo.length, [ev.user("three")])]
      yield* Statement.withTransformer(
        Effect.gen(function*() {
          yield* store.append(s1, eventsCommit(commits[0]!), { sync: false })
          yield* store.append(s1, eventsCommit(commits[1]!), { sync: true })
          yield* store.append(s1, { events: [], inbox: [] }, { sync: true })
          yield* store.append(s1, eventsCommit(commits[2]!))
          yield* store.append(s1, { events: [], inbox: [accepted("m", "x")] }, { sync: false })
        }),
        record
      )
      // unsynced, synced, the synced barrier, without `sync` (unsynced, like `sync: false`), unsynced
      assert.deepStrictEqual(seen, ["off", "on", "on", "off", "off"])
    }).pipe(Effect.provide(freshWithClient())))

  it.live("a statement the server refuses (a constraint) is Io, not a defect: the log retries and recovers once it is lifted", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const sql = yield* PgClient.PgClient
      const log = yield* SessionLog.make({ id: s1, commit: { retry: Schedule.spaced("5 millis") } }).pipe(
        Effect.provideService(SessionStore.SessionStore, store)
      )
      const faults = yield* log.subscribeFaults
      yield* log.appendAll(promptTurn(1, "short", "ok"))
      yield* log.flush
      yield* sql`ALTER TABLE records ADD CONSTRAINT test_short CHECK (length(text) < 2000)`
      yield* log.appendAll(promptTurn(2, "y".repeat(5_000), "ok"))
      const flushing = yield* Effect.fork(log.flush)
      const fault = yield* Queue.take(faults)
      assert.strictEqual(fault.reason, "Io")
      assert.include(fault.message, "test_short")
      yield* sql`ALTER TABLE records DROP CONSTRAINT test_short`
      yield* Fiber.join(flushing)
      yield* log.close
      assert.strictEqual(
        (yield* loadAll(store, s1)).length,
        promptTurn(1, "", "").length * 2
      )
    }).pipe(Effect.provide(freshWithClient()), Effect.scoped))
})
