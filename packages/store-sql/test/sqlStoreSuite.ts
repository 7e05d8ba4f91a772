/**
 * Tests of the SQL store core (`@harness/store-sql`) that reach under the store with SQL of their own, shared by
 * the SQLite and PostgreSQL backends: damaged headers, writer leases of other hosts and of dead or
 * expired holders, and the lease's renewal (ADR 0044). Each backend registers it with a layer that gives a fresh
 * store and the `SqlClient` it runs on:
 *
 * ```ts
 * sqlStoreSuite("sqlite", (leaseTime) => ...)
 * ```
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Ids, type Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { ev, promptTurn, stamp } from "@harness/testkit/Events"
import { Clock, type Duration, Effect, Either, type Layer, Schedule } from "effect"
import { spawnSync } from "node:child_process"
import * as os from "node:os"

/** A fresh store and its client, with the given lease time. */
export type Fresh = (
  leaseTime?: Duration.DurationInput
) => Layer.Layer<SessionStore.SessionStore | SqlClient, SessionStore.SessionStoreError>

const header = (id: Ids.SessionId): Store.SessionHeader => ({ id, version: 1, createdAt: 1_000 })

const turnOne = stamp(promptTurn(1, "One", "1"), { start: 0, time: 2_000 })

const refusal = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (result) => Either.isLeft(result) ? Effect.succeed(result.left) : Effect.dieMessage("expected the store to refuse")
  )

/** The id column of a session, as the store writes it. */
const column = (id: string) => JSON.stringify(id)

/** Registers the suite. */
export const sqlStoreSuite = (name: string, fresh: Fresh): void => {
  describe(`SqlStore (${name})`, () => {
    const s1 = Ids.SessionId.make("s1")
    const s2 = Ids.SessionId.make("s2")
    const s3 = Ids.SessionId.make("s3")

    it.live("a header that does not decode leaves the session out of list, damaged names it, remove deletes it", () =>
      Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient
        for (const id of [s1, s2, s3]) yield* store.create(header(id))
        yield* sql`UPDATE sessions SET header = ${"{\"id\":\"s2\",\"version\":"} WHERE id = ${column(s2)}`
        assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [s1, s3])
        const damaged = yield* store.damaged
        assert.deepStrictEqual(damaged.map((d) => d.id), [s2])
        assert.include(damaged[0]!.problem, "is not a session header")
        assert.strictEqual((yield* refusal(store.header(s2))).reason, "Corrupt")
        yield* store.remove(s2)
        assert.deepStrictEqual(yield* store.damaged, [])
        assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [s1, s3])
        yield* store.create(header(s2))
        assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [s1, s3, s2])
      }).pipe(Effect.provide(fresh())))

    it.live("a live holder on another host: lease, unleased writes and remove are Busy naming it; once it expires, it is taken over", () =>
      Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient
        yield* store.create(header(s1))
        const mine = yield* store.lease(s1)
        assert.deepStrictEqual([mine.holder.pid, mine.holder.host], [process.pid, os.hostname()])
        const now = yield* Clock.currentTimeMillis
        // the lease passes to a process of another host, renewed just now
        yield* sql`UPDATE sessions SET lease_pid = 4242, lease_host = 'elsewhere', lease_since = ${now - 5_000},
          lease_renewed = ${now} WHERE id = ${column(s1)}`
        const busy = yield* refusal(store.lease(s1))
        assert.strictEqual(busy.reason, "Busy")
        assert.deepStrictEqual(busy.holder, { pid: 4242, host: "elsewhere", since: now - 5_000 })
        assert.include(busy.message, "process 4242 on host \"elsewhere\" since")
        const unleased = yield* refusal(store.append(s1, { events: turnOne, inbox: [] }))
        assert.deepStrictEqual([unleased.reason, unleased.holder?.host], ["Busy", "elsewhere"])
        assert.strictEqual((yield* refusal(store.remove(s1))).reason, "Busy")
        assert.strictEqual((yield* refusal(store.truncate(s1, 0))).reason, "Busy")
        // not renewed for longer than the lease time (10 minutes here): gone, taken over with a greater token
        yield* sql`UPDATE sessions SET lease_renewed = ${now - 11 * 60_000} WHERE id = ${column(s1)}`
        const taken = yield* store.lease(s1)
        assert.isAbove(taken.token, mine.token)
        yield* store.append(s1, { events: turnOne, inbox: [] }, { lease: taken })
        assert.strictEqual(
          (yield* refusal(store.append(s1, { events: [], inbox: [] }, { lease: mine }))).reason,
          "Busy"
        )
        // an expired holder of another host does not stop a remove either
        yield* sql`UPDATE sessions SET lease_pid = 4242, lease_host = 'elsewhere', lease_renewed = ${
          now - 11 * 60_000
        } WHERE id = ${column(s1)}`
        yield* store.remove(s1)
        assert.strictEqual((yield* refusal(store.header(s1))).reason, "NotFound")
      }).pipe(Effect.provide(fresh("10 minutes"))))

    it.live("a holder on this host whose process is gone is taken over at once; this process's own lease is too", () =>
      Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient
        yield* store.create(header(s1))
        const first = yield* store.lease(s1)
        const gone = spawnSync(process.execPath, ["-e", ""]).pid
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE sessions SET lease_pid = ${gone}, lease_renewed = ${now} WHERE id = ${column(s1)}`
        const second = yield* store.lease(s1)
        assert.isAbove(second.token, first.token)
        assert.strictEqual(
          (yield* refusal(store.append(s1, { events: turnOne, inbox: [] }, { lease: first }))).reason,
          "Busy"
        )
        // a second lease of this very process takes over the first
        const third = yield* store.lease(s1)
        assert.isAbove(third.token, second.token)
        assert.strictEqual(
          (yield* refusal(store.append(s1, { events: turnOne, inbox: [] }, { lease: second }))).reason,
          "Busy"
        )
        yield* store.append(s1, { events: turnOne, inbox: [] }, { lease: third })
        yield* third.release
        const rows = yield* sql<{ readonly lease_token: unknown }>`SELECT lease_token FROM sessions`
        assert.deepStrictEqual(rows.map((r) => r.lease_token), [null])
      }).pipe(Effect.provide(fresh("10 minutes"))))

    it.live("a held lease is renewed while held, and no longer once released", () =>
      Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient
        yield* store.create(header(s1))
        const lease = yield* store.lease(s1)
        const renewed = sql<{ readonly since: number | string; readonly renewed: number | string }>`
          SELECT lease_since AS since, lease_renewed AS renewed FROM sessions WHERE id = ${column(s1)}`
        // renewed every third of the lease time (100 ms): wait for the first renewal, however loaded the machine
        yield* Effect.repeat(renewed, {
          schedule: Schedule.spaced("20 millis"),
          until: (rows) => Number(rows[0]!.renewed) > Number(rows[0]!.since)
        })
        yield* store.append(s1, { events: stamp([ev.user("x")], { start: 0, time: 1 }), inbox: [] }, { lease })
        yield* lease.release
        assert.deepStrictEqual(
          yield* sql`SELECT lease_token, lease_pid, lease_host, lease_since, lease_renewed FROM sessions`,
          [{ lease_token: null, lease_pid: null, lease_host: null, lease_since: null, lease_renewed: null }]
        )
      }).pipe(Effect.provide(fresh("300 millis"))))
  })
}
