import { assert, describe, it } from "@effect/vitest"
import { ev } from "@harness/testkit/Events"
import { sessionId as sid } from "@harness/testkit/Events"
import { Effect } from "effect"
import * as SessionStore from "../src/SessionStore.js"
import { accepted, conformance, events, eventsCommit, header, loadAll, texts } from "./conformance.js"

conformance("memory", SessionStore.layerMemory)
conformance("memory with faults (none injected)", SessionStore.layerMemoryWithFaults)

describe("SessionStore.withFaults", () => {
  const s1 = sid("s1")
  const commit = (seq: number, text = `m${seq}`) => eventsCommit(events(seq, [ev.user(text)]))

  it.effect("failWhen fails the matching commits with Injected and stores nothing of them", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const faults = yield* SessionStore.StoreFaults
      yield* store.create(header(s1))
      yield* store.append(s1, commit(0))
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.seq === 2))
      // a commit fails as a whole when any of its events matches
      const both = eventsCommit([...commit(1).events, ...commit(2).events])
      const error = yield* Effect.flip(store.append(s1, both))
      assert.deepStrictEqual([error.reason, error.id], ["Injected", s1])
      assert.deepStrictEqual(yield* loadAll(store, s1), [{ position: 0, text: texts([commit(0)])[0]! }])
      // commits that do not match go through
      yield* store.append(s1, commit(1))
      assert.strictEqual((yield* Effect.flip(store.append(s1, commit(2)))).reason, "Injected")
      yield* faults.clear
      yield* store.append(s1, commit(2))
      assert.deepStrictEqual((yield* loadAll(store, s1)).map((r) => r.text), texts([commit(0), commit(1), commit(2)]))
    }).pipe(Effect.provide(SessionStore.layerMemoryWithFaults)))

  it.effect("failWhen replaces the earlier predicate and sees the session id", () =>
    Effect.gen(function*() {
      const [store, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
      yield* store.create(header(s1))
      yield* store.create(header(sid("s2")))
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "turn/start"))
      yield* faults.failWhen((c, id) => id === "s2" || c.inbox.length > 0)
      yield* store.append(s1, eventsCommit(events(0, [ev.turnStart(1)])))
      assert.strictEqual((yield* Effect.flip(store.append(sid("s2"), commit(0)))).reason, "Injected")
      assert.strictEqual(
        (yield* Effect.flip(store.append(s1, { events: [], inbox: [accepted("m", "x")] }))).reason,
        "Injected"
      )
      assert.strictEqual((yield* loadAll(store, s1)).length, 1)
    }))

  it.effect("failNext fails the next n appends whatever they hold, then recovers", () =>
    Effect.gen(function*() {
      const [store, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
      yield* store.create(header(s1))
      yield* faults.failNext(2)
      assert.strictEqual((yield* Effect.flip(store.append(s1, commit(0)))).reason, "Injected")
      assert.strictEqual((yield* Effect.flip(store.append(s1, { events: [], inbox: [] }))).reason, "Injected")
      yield* store.append(s1, commit(0))
      yield* faults.failNext(5)
      yield* faults.clear
      yield* store.append(s1, commit(1))
      assert.strictEqual((yield* loadAll(store, s1)).length, 2)
    }))

  it.effect("the memory store encodes the records it keeps when they are read, and counts their UTF-8 bytes", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const utf8 = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8")
      const bytes = Effect.map(store.list, (sessions) => sessions[0]!.bytes)
      yield* store.create(header(s1))
      assert.strictEqual(yield* bytes, utf8(header(s1)))
      const first = commit(0, "naïve café ☕ 𝄞")
      const second = commit(1, "plain")
      yield* store.append(s1, first)
      // A summary read between appends does not make later records count twice or not at all.
      assert.strictEqual(yield* bytes, utf8(header(s1)) + utf8(first.events[0]))
      yield* store.append(s1, second)
      assert.strictEqual(yield* bytes, utf8(header(s1)) + utf8(first.events[0]) + utf8(second.events[0]))
      assert.deepStrictEqual(yield* loadAll(store, s1), [
        { position: 0, text: JSON.stringify(first.events[0]) },
        { position: 1, text: JSON.stringify(second.events[0]) }
      ])
      yield* store.truncate(s1, 1)
      assert.strictEqual(yield* bytes, utf8(header(s1)) + utf8(first.events[0]))
    }))
})
