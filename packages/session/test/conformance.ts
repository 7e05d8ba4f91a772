/**
 * The conformance suite of `SessionStore` backends. Every backend (memory now; JSONL, SQLite, PostgreSQL later)
 * registers it from its own test file:
 *
 * ```ts
 * import { conformance } from "@harness/session/test/conformance"
 * conformance("sqlite", SqliteStore.layer({ filename: ":memory:" }))
 * ```
 *
 * Each test builds the layer afresh, so the layer must give an empty store each time it is built.
 *
 * @since 0.0.0
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { Effect, type Layer } from "effect"
import { SessionStore, type StoredEvent } from "../src/SessionStore.js"

const id = (s: string) => Ids.SessionId.make(s)

/** A row with the given seq; its JSON text holds characters a careless backend might mangle. */
export const row = (seq: number, type = "user/message", time = 1_700_000_000_000 + seq): StoredEvent => ({
  seq,
  type,
  time,
  json: JSON.stringify({
    seq,
    time,
    type,
    data: { text: `row ${seq}: "quotes", back\\slash, newline\n, tab\t, unicode é ✓ 🚀, nul \u0000 and \u2028` }
  })
})

/** Rows with seqs `from` … `from + count - 1`. */
export const rows = (from: number, count: number): ReadonlyArray<StoredEvent> =>
  Array.from({ length: count }, (_, i) => row(from + i))

/**
 * Registers the suite for one backend.
 *
 * @since 0.0.0
 */
export const conformance = <E>(name: string, layer: Layer.Layer<SessionStore, E>): void => {
  describe(`SessionStore conformance: ${name}`, () => {
    const run = <A, E2>(self: Effect.Effect<A, E2, SessionStore>) => Effect.provide(self, layer)

    it.effect("a created session is empty and listed", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        assert.deepStrictEqual(yield* store.load(id("s1")), [])
        assert.deepStrictEqual(yield* store.list, [id("s1")])
      })))

    it.effect("appended rows load back exactly, in seq order, across several appends", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* store.append(id("s1"), rows(0, 1))
        yield* store.append(id("s1"), rows(1, 3))
        yield* store.append(id("s1"), [row(4, "turn/start", 42)])
        assert.deepStrictEqual(yield* store.load(id("s1")), [...rows(0, 4), row(4, "turn/start", 42)])
      })))

    it.effect("an empty append stores nothing and succeeds", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* store.append(id("s1"), rows(0, 2))
        yield* store.append(id("s1"), [])
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 2))
      })))

    it.effect("list gives every session in creation order; sessions are independent", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        for (const s of ["b", "a", "c"]) yield* store.create(id(s))
        yield* store.append(id("a"), rows(0, 2))
        yield* store.append(id("c"), rows(0, 1))
        assert.deepStrictEqual(yield* store.list, [id("b"), id("a"), id("c")])
        assert.deepStrictEqual(yield* store.load(id("a")), rows(0, 2))
        assert.deepStrictEqual(yield* store.load(id("b")), [])
        assert.deepStrictEqual(yield* store.load(id("c")), rows(0, 1))
      })))

    it.effect("creating an existing session fails with AlreadyExists and keeps its rows", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* store.append(id("s1"), rows(0, 2))
        const error = yield* Effect.flip(store.create(id("s1")))
        assert.strictEqual(error.reason, "AlreadyExists")
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 2))
        assert.deepStrictEqual(yield* store.list, [id("s1")])
      })))

    it.effect("an unknown session is NotFound for append and load", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        assert.strictEqual((yield* Effect.flip(store.load(id("nope")))).reason, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.append(id("nope"), rows(0, 1)))).reason, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.append(id("nope"), []))).reason, "NotFound")
        assert.deepStrictEqual(yield* store.list, [])
      })))

    it.effect("an append that does not continue the stored seqs is a Conflict and stores nothing", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* store.append(id("s1"), rows(0, 2))
        // a gap, a replay, a rewrite of the first row, a start past the end
        for (const bad of [rows(3, 1), rows(1, 1), rows(0, 3), rows(5, 2)]) {
          assert.strictEqual((yield* Effect.flip(store.append(id("s1"), bad))).reason, "Conflict")
        }
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 2))
      })))

    it.effect("an append is all or nothing: a gap inside the batch stores none of it", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* store.append(id("s1"), rows(0, 1))
        const error = yield* Effect.flip(store.append(id("s1"), [row(1), row(2), row(4)]))
        assert.strictEqual(error.reason, "Conflict")
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 1))
        yield* store.append(id("s1"), rows(1, 3))
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 4))
      })))

    it.effect("a failed append leaves the session appendable at the same seq", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        yield* Effect.flip(store.append(id("s1"), rows(1, 1)))
        yield* store.append(id("s1"), rows(0, 1))
        assert.deepStrictEqual(yield* store.load(id("s1")), rows(0, 1))
      })))

    it.effect("many single-row appends stay contiguous", () =>
      run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create(id("s1"))
        for (let seq = 0; seq < 200; seq++) yield* store.append(id("s1"), [row(seq)])
        const loaded = yield* store.load(id("s1"))
        assert.strictEqual(loaded.length, 200)
        assert.deepStrictEqual(loaded.map((r) => r.seq), Array.from({ length: 200 }, (_, i) => i))
        assert.deepStrictEqual(loaded[199], row(199))
      })))
  })
}
