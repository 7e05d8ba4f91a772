import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SessionStore from "../src/SessionStore.js"
import { conformance, row, rows } from "./conformance.js"
import { sessionId } from "./fixtures.js"

conformance("memory", SessionStore.layerMemory)
conformance("memory with faults (none injected)", SessionStore.layerMemoryWithFaults)

describe("SessionStore.withFaults", () => {
  const s1 = sessionId("s1")

  it.effect("an injected fault fails the matching append with Injected and stores nothing", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const faults = yield* SessionStore.StoreFaults
      yield* store.create(s1)
      yield* store.append(s1, rows(0, 2))
      yield* faults.failWhen((r) => r.seq === 3)
      // A batch fails as a whole when any of its rows matches.
      const error = yield* Effect.flip(store.append(s1, rows(2, 2)))
      assert.strictEqual(error.reason, "Injected")
      assert.deepStrictEqual(yield* store.load(s1), rows(0, 2))
      // Rows that do not match go through.
      yield* store.append(s1, [row(2)])
      assert.strictEqual((yield* Effect.flip(store.append(s1, [row(3)]))).reason, "Injected")
      yield* faults.clear
      yield* store.append(s1, [row(3)])
      assert.deepStrictEqual(yield* store.load(s1), rows(0, 4))
    }).pipe(Effect.provide(SessionStore.layerMemoryWithFaults)))

  it.effect("failWhen replaces the earlier predicate", () =>
    Effect.gen(function*() {
      const [store, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
      yield* store.create(s1)
      yield* faults.failWhen((r) => r.type === "a")
      yield* faults.failWhen((r) => r.type === "b")
      yield* store.append(s1, [row(0, "a")])
      assert.strictEqual((yield* Effect.flip(store.append(s1, [row(1, "b")]))).reason, "Injected")
      assert.deepStrictEqual(yield* store.load(s1), [row(0, "a")])
    }))

  it.effect("the memory store keeps its own copy of appended rows", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      yield* store.create(s1)
      const mine = { ...row(0) }
      yield* store.append(s1, [mine])
      Object.assign(mine, { json: "changed" })
      assert.deepStrictEqual(yield* store.load(s1), [row(0)])
    }))
})
