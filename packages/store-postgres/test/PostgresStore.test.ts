import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@harness/session"
import { accepted, conformance, events, eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { sqlStoreSuite } from "@harness/store-sql/test/sqlStoreSuite"
import { ev, messageId as mid, sessionId as sid } from "@harness/testkit/Events"
import { Context, type Duration, Effect, Layer, Redacted } from "effect"
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
      Layer.effect(SessionStore.SessionStore, PostgresStore.makeWith({ leaseTime })).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(urlOf(name)) })),
        Layer.orDie
      ))
  )

sqlStoreSuite("postgres", freshWithClient)
