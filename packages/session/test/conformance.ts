/**
 * The conformance suite of `SessionStore` backends. Every backend (memory here; SQLite, JSONL and PostgreSQL in
 * `@harness/store-*`) registers it from its own test file:
 *
 * ```ts
 * import { conformance } from "@harness/session/test/conformance"
 * conformance("sqlite", SqliteStore.layer({ filename }))
 * ```
 *
 * Each test builds the layer afresh, so the layer must give an empty store each time it is built (and may
 * release what it made when the test's scope closes). Tests run with the live clock (`it.live`): backends do real
 * I/O. The large-session test measures the heap a backend retains while it streams (with `gc()`).
 *
 * @since 0.0.0
 */
import { assert, describe, it } from "@effect/vitest"
import type { Ids, Store } from "@harness/domain"
import { MessageSource, type SessionEvent } from "@harness/domain"
import { block, ev, messageId as mid, promptTurn, sessionId as sid, stamp, toolTurn } from "@harness/testkit/Events"
import { Chunk, Effect, type Layer, Option, Ref, Schedule, Stream } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as History from "../src/History.js"
import * as snapshot from "../src/internal/snapshot.js"
import * as SessionLog from "../src/SessionLog.js"
import type { SessionLogError } from "../src/SessionLogError.js"
import * as Sessions from "../src/Sessions.js"
import {
  type Commit,
  type Service,
  SessionStore,
  type SessionStoreError,
  type StoredRecord
} from "../src/SessionStore.js"
import { assertConsistent } from "./fixtures.js"

/** Turn `turn` of the snapshot cases: one weather call and its answer. */
const weatherTurn = (turn: number) =>
  toolTurn(turn, `Weather ${turn}?`, [{ id: `w${turn}`, name: "weather", args: "{}", result: "sun" }], "Sun.")

/** Characters a careless backend mangles: quotes, escapes, line separators, NUL, astral and lone surrogates. */
export const awkward =
  "quotes \" ' `, back\\slash, newline\n, cr\r, tab\t, nul \u0000, U+2028 \u2028, U+2029 \u2029, é ✓ 🚀, lone \ud800 surrogate, </script> %2F ../"

/** Session ids that differ only where a careless backend would merge or mangle them. */
const awkwardIds: ReadonlyArray<Ids.SessionId> = [
  "plain",
  "CASE",
  "case",
  "nul\u0000byte",
  "line\u2028separator",
  "rocket 🚀",
  "\"quoted\" 'ids'",
  "sl/ash",
  "back\\slash",
  ".",
  "..",
  "%41",
  "A",
  "lone \ud800 surrogate",
  "x".repeat(300),
  "é".repeat(200)
].map(sid)

/** A session header created at `createdAt`. */
export const header = (id: Ids.SessionId, createdAt = 1_000): Store.SessionHeader => ({ id, version: 1, createdAt })

/** Events from inputs, numbered from `from` and stamped `time`. */
export const events = (
  from: number,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  time = 2_000
): ReadonlyArray<SessionEvent.SessionEvent> => stamp(inputs, { start: from, time })

/** A commit of events only. */
export const eventsCommit = (events: ReadonlyArray<SessionEvent.SessionEvent>): Commit => ({ events, inbox: [] })

/** An `inbox/accepted` record of a user message with id `id`. */
export const accepted = (
  id: string,
  text: string,
  time = 2_000,
  placement: Store.InboxRecordPlacement = "queued"
): Store.InboxRecord => ({
  type: "inbox/accepted",
  time,
  message: { id: mid(id), content: [block.text(text)], source: MessageSource.user },
  placement,
  wakeup: true
})

/** An `inbox/settled` record. */
const settled = (id: string, fate: Store.InboxFate, time = 2_000): Store.InboxRecord => ({
  type: "inbox/settled",
  time,
  id: mid(id),
  fate
})

/** What a backend must store for these commits, in order: each record's `JSON.stringify`, inbox records first. */
export const texts = (commits: ReadonlyArray<Commit>): ReadonlyArray<string> =>
  commits.flatMap((c) => [...c.inbox, ...c.events].map((record) => JSON.stringify(record)))

/** The stored records of a session, collected. */
export const loadAll = (store: Service, id: Ids.SessionId, after?: number) =>
  Effect.map(
    Stream.runCollect(store.load(id, after === undefined ? undefined : { after })),
    (chunk): ReadonlyArray<StoredRecord> => Chunk.toReadonlyArray(chunk)
  )

/** The session's snapshot with its body read (`Option.none()` as the body when the store no longer has it). */
export const snapshotOf = (store: Service, id: Ids.SessionId) =>
  Effect.flatMap(
    store.loadSnapshot(id),
    Option.match({
      onNone: () => Effect.succeed(Option.none<{ seq: number; position: number; head: string; body: string }>()),
      onSome: (found) =>
        Effect.map(found.body, (body) =>
          Option.map(body, (text) => ({ seq: found.seq, position: found.position, head: found.head, body: text })))
    })
  )

/** The records a store should hand back for these texts, from position `from`. */
const at = (from: number, stored: ReadonlyArray<string>): ReadonlyArray<StoredRecord> =>
  stored.map((text, i) => ({ position: from + i, text }))

/** The reason an operation failed, failing the test (as a defect) when it succeeded. */
const reasonOf = <A, R>(effect: Effect.Effect<A, SessionStoreError, R>) =>
  Effect.flatMap(
    Effect.either(effect),
    (result) =>
      result._tag === "Left"
        ? Effect.succeed(result.left.reason)
        : Effect.dieMessage(`expected a failure, got ${JSON.stringify(result.right)}`)
  )

/** The summary of one session, failing the test when it is not listed. */
const summaryOf = (store: Service, id: Ids.SessionId) =>
  Effect.flatMap(store.list, (all) => {
    const found = all.find((s) => s.header.id === id)
    return found === undefined
      ? Effect.dieMessage(`session ${JSON.stringify(id)} is not listed`)
      : Effect.succeed(found)
  })

const firstTurn = events(
  0,
  toolTurn(1, "What is the weather?", [{ id: "c1", name: "weather", args: "{}", result: "sunny" }], "Sunny.")
)

/**
 * The garbage collector, so the test can measure what is retained rather than what is merely not yet collected.
 * (`--expose-gc` set at run time: a new context sees `gc`.)
 */
const exposeGc = (): () => void => {
  v8.setFlagsFromString("--expose-gc")
  const gc: unknown = vm.runInNewContext("gc")
  if (typeof gc !== "function") throw new Error("cannot expose the garbage collector")
  return () => void gc()
}

/** Options of the suite. */
export interface ConformanceOptions {
  /** Records in the large-session test (default 10 000, about 40 MB of JSON). */
  readonly largeRecords?: number
}

/**
 * Registers the suite for one backend.
 *
 * @since 0.0.0
 */
export const conformance = <E>(
  name: string,
  layer: Layer.Layer<SessionStore, E>,
  options: ConformanceOptions = {}
): void => {
  describe(`SessionStore conformance: ${name}`, () => {
    const test = (title: string, body: (store: Service) => Effect.Effect<void, SessionStoreError>) =>
      it.live(title, () =>
        Effect.scoped(
          Effect.flatMap(SessionStore, body).pipe(Effect.provide(layer))
        ))
    const s1 = sid("s1")

    describe("create and header", () => {
      test("a created session has its header, no records, and is listed with an empty summary", (store) =>
        Effect.gen(function*() {
          const h: Store.SessionHeader = { ...header(s1, 1_234), title: awkward, parent: { id: sid("p"), seq: 7 } }
          yield* store.create(h)
          assert.deepStrictEqual(yield* store.header(s1), h)
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
          const [summary, ...rest] = yield* store.list
          assert.deepStrictEqual(rest, [])
          assert.deepStrictEqual(summary!.header, h)
          assert.strictEqual(summary!.events, 0)
          assert.strictEqual(summary!.turns, 0)
          assert.strictEqual(summary!.lastActivity, 1_234)
          assert.isFalse("firstPrompt" in summary!)
        }))

      test("create stores its first commit with the header", (store) =>
        Effect.gen(function*() {
          const commit: Commit = { events: firstTurn, inbox: [accepted("prompt-1", "What is the weather?")] }
          yield* store.create(header(s1), commit)
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([commit])))
          const summary = yield* summaryOf(store, s1)
          assert.strictEqual(summary.events, firstTurn.length)
          assert.strictEqual(summary.turns, 1)
          assert.strictEqual(summary.firstPrompt, "What is the weather?")
          // the next append continues after the created events
          yield* store.append(s1, eventsCommit(events(firstTurn.length, [ev.user("more")])))
          assert.strictEqual((yield* loadAll(store, s1)).length, firstTurn.length + 2)
        }))

      test("create is atomic: a first commit that does not start at seq 0 is a Conflict and creates nothing", (store) =>
        Effect.gen(function*() {
          const reason = yield* reasonOf(store.create(header(s1), eventsCommit(events(1, [ev.user("x")]))))
          assert.strictEqual(reason, "Conflict")
          assert.deepStrictEqual(yield* store.list, [])
          assert.strictEqual(yield* reasonOf(store.header(s1)), "NotFound")
          yield* store.create(header(s1))
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
        }))

      test("creating an existing session fails with AlreadyExists and keeps its header and records", (store) =>
        Effect.gen(function*() {
          const commit = eventsCommit(events(0, [ev.user("first")]))
          yield* store.create(header(s1, 1), commit)
          assert.strictEqual(yield* reasonOf(store.create(header(s1, 2))), "AlreadyExists")
          assert.strictEqual(yield* reasonOf(store.create(header(s1, 3), commit)), "AlreadyExists")
          assert.deepStrictEqual(yield* store.header(s1), header(s1, 1))
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([commit])))
          assert.strictEqual((yield* store.list).length, 1)
        }))

      test("every operation on an unknown session is NotFound", (store) =>
        Effect.gen(function*() {
          const nope = sid("nope")
          assert.strictEqual(yield* reasonOf(store.append(nope, eventsCommit(events(0, [ev.user("x")])))), "NotFound")
          assert.strictEqual(yield* reasonOf(store.append(nope, { events: [], inbox: [] })), "NotFound")
          assert.strictEqual(yield* reasonOf(loadAll(store, nope)), "NotFound")
          assert.strictEqual(yield* reasonOf(store.header(nope)), "NotFound")
          assert.strictEqual(yield* reasonOf(store.truncate(nope, 0)), "NotFound")
          assert.strictEqual(yield* reasonOf(store.remove(nope)), "NotFound")
          assert.strictEqual(yield* reasonOf(store.hasMessage(nope, mid("m"))), "NotFound")
          assert.strictEqual(
            yield* reasonOf(store.saveSnapshot(nope, { seq: 0, position: 0, head: "{}", body: "[]" })),
            "NotFound"
          )
          assert.strictEqual(yield* reasonOf(store.loadSnapshot(nope)), "NotFound")
          assert.deepStrictEqual(yield* store.list, [])
        }))
    })

    describe("append and load", () => {
      test("records load back as the exact JSON text of what was committed, at positions 0, 1, 2, …", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const commits: ReadonlyArray<Commit> = [
            eventsCommit(events(0, [ev.user(awkward, MessageSource.plugin("ctx"), "m-0")])),
            eventsCommit(firstTurn.map((e) => ({ ...e, seq: e.seq + 1 }))),
            eventsCommit(events(firstTurn.length + 1, [ev.user("last")], 3_000))
          ]
          for (const commit of commits) yield* store.append(s1, commit)
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts(commits)))
          // and the texts decode to the committed values
          const back = (yield* loadAll(store, s1)).map((r): unknown => JSON.parse(r.text))
          assert.deepStrictEqual(back, commits.flatMap((c) => c.events))
        }))

      test("inbox records keep their commit order, interleaved with the events; they do not count as events", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const commits: ReadonlyArray<Commit> = [
            { events: [], inbox: [accepted("a", "first"), accepted("b", "second", 2_001, "steering")] },
            { events: events(0, [ev.user("first", MessageSource.user, "a")]), inbox: [settled("a", "claimed")] },
            { events: [], inbox: [accepted("c", "third", 2_002)] },
            { events: [], inbox: [settled("b", "withdrawn", 2_003), settled("c", "discarded", 2_003)] },
            eventsCommit(events(1, [ev.user("context")], 2_004))
          ]
          for (const commit of commits) yield* store.append(s1, commit)
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts(commits)))
          const summary = yield* summaryOf(store, s1)
          assert.strictEqual(summary.events, 2)
          assert.strictEqual(summary.lastActivity, 2_004)
          // seq 2 is next: the inbox records took positions, not seqs
          assert.strictEqual(yield* reasonOf(store.append(s1, eventsCommit(events(7, [ev.user("x")])))), "Conflict")
          yield* store.append(s1, eventsCommit(events(2, [ev.user("x")])))
        }))

      test("an empty commit stores nothing and succeeds; sync: true stores the same as a plain append", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const a = eventsCommit(events(0, [ev.user("a")]))
          const b: Commit = { events: events(1, [ev.user("b")]), inbox: [accepted("m", "b")] }
          yield* store.append(s1, a)
          yield* store.append(s1, { events: [], inbox: [] })
          yield* store.append(s1, b, { sync: true })
          yield* store.append(s1, { events: [], inbox: [] }, { sync: true })
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([a, b])))
        }))

      test("events that do not continue the stored seqs are a Conflict and store nothing", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const first = eventsCommit(events(0, [ev.user("a"), ev.user("b")]))
          yield* store.append(s1, first)
          // a gap, a replay, a rewrite of the first event, a start past the end
          for (
            const bad of [
              events(3, [ev.user("x")]),
              events(1, [ev.user("x")]),
              events(0, [ev.user("x")]),
              events(5, [ev.user("x"), ev.user("y")])
            ]
          ) {
            assert.strictEqual(
              yield* reasonOf(store.append(s1, { events: bad, inbox: [accepted("m", "x")] })),
              "Conflict"
            )
          }
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([first])))
          assert.isFalse(yield* store.hasMessage(s1, mid("m")))
        }))

      test("an append is all or nothing: a gap inside the commit stores none of it, inbox records included", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const first = eventsCommit(events(0, [ev.user("a")]))
          yield* store.append(s1, first)
          const gapped = [...events(1, [ev.user("b"), ev.user("c")]), ...events(4, [ev.user("e")])]
          assert.strictEqual(
            yield* reasonOf(store.append(s1, { events: gapped, inbox: [accepted("m", "b")] })),
            "Conflict"
          )
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([first])))
          assert.strictEqual((yield* summaryOf(store, s1)).events, 1)
          // the session is appendable at the same seq
          const next = eventsCommit(events(1, [ev.user("b"), ev.user("c"), ev.user("d")]))
          yield* store.append(s1, next)
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([first, next])))
        }))

      test("racing appends of the same seqs: exactly one is stored, the others are Conflicts", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          for (let seq = 0; seq < 10; seq++) {
            const candidates = [0, 1, 2].map((i) => eventsCommit(events(seq, [ev.user(`seq ${seq} from ${i}`)])))
            const results = yield* Effect.all(candidates.map((c) => Effect.either(store.append(s1, c))), {
              concurrency: "unbounded"
            })
            const won = results.flatMap((r, i) => r._tag === "Right" ? [i] : [])
            assert.strictEqual(won.length, 1, `seq ${seq}`)
            assert.deepStrictEqual(results.flatMap((r) => r._tag === "Left" ? [r.left.reason] : []), [
              "Conflict",
              "Conflict"
            ])
            const stored = yield* loadAll(store, s1, seq - 1)
            assert.deepStrictEqual(stored, at(seq, texts([candidates[won[0]!]!])))
          }
        }))

      test("many small commits stay contiguous", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const commits: Array<Commit> = []
          for (let seq = 0; seq < 300; seq++) {
            const commit = seq % 3 === 0
              ? { events: events(seq, [ev.user(`m${seq}`)]), inbox: [settled(`m${seq}`, "logged")] }
              : eventsCommit(events(seq, [ev.user(`m${seq}`)]))
            commits.push(commit)
            yield* store.append(s1, commit)
          }
          const loaded = yield* loadAll(store, s1)
          assert.deepStrictEqual(loaded, at(0, texts(commits)))
        }))

      test("load with after gives the records past a position; past the end, nothing", (store) =>
        Effect.gen(function*() {
          const commit: Commit = { events: firstTurn, inbox: [accepted("x", "y")] }
          yield* store.create(header(s1), commit)
          const all = at(0, texts([commit]))
          assert.deepStrictEqual(yield* loadAll(store, s1, -1), all)
          assert.deepStrictEqual(yield* loadAll(store, s1, 0), all.slice(1))
          assert.deepStrictEqual(yield* loadAll(store, s1, 4), all.slice(5))
          assert.deepStrictEqual(yield* loadAll(store, s1, all.length - 1), [])
          assert.deepStrictEqual(yield* loadAll(store, s1, all.length + 10), [])
        }))

      test("load is a stream: taking a few records of a long session takes just those", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const all = events(0, Array.from({ length: 5_000 }, (_, i) => ev.user(`message ${i}`)))
          for (let i = 0; i < all.length; i += 1_000) yield* store.append(s1, eventsCommit(all.slice(i, i + 1_000)))
          const firstThree = yield* Stream.runCollect(Stream.take(store.load(s1), 3))
          assert.deepStrictEqual(
            Chunk.toReadonlyArray(firstThree),
            at(0, all.slice(0, 3).map((e) => JSON.stringify(e)))
          )
          const tail = yield* Stream.runCollect(Stream.take(store.load(s1, { after: 4_997 }), 5))
          assert.deepStrictEqual(Chunk.toReadonlyArray(tail), at(4_998, all.slice(4_998).map((e) => JSON.stringify(e))))
        }))

      it.live("a large session is streamed without being held in memory", () =>
        Effect.scoped(
          Effect.gen(function*() {
            const store = yield* SessionStore
            const gc = exposeGc()
            const count = options.largeRecords ?? 10_000
            const filler = "lorem ipsum dolor sit amet ".repeat(150) // ~4 KB per record
            yield* store.create(header(s1))
            let totalChars = 0
            for (let from = 0; from < count; from += 500) {
              const batch = events(
                from,
                Array.from({ length: Math.min(500, count - from) }, (_, i) => ev.user(`${from + i} ${filler}`))
              )
              totalChars += batch.reduce((n, e) => n + JSON.stringify(e).length, 0)
              yield* store.append(s1, eventsCommit(batch))
            }
            gc()
            const baseline = process.memoryUsage().heapUsed
            let peak = 0
            let seen = 0
            let last = -1
            yield* Stream.runForEach(store.load(s1), (record) =>
              Effect.sync(() => {
                assert.strictEqual(record.position, last + 1)
                last = record.position
                seen++
                if (seen % 1_000 === 0) {
                  gc()
                  peak = Math.max(peak, process.memoryUsage().heapUsed - baseline)
                }
              }))
            assert.strictEqual(seen, count)
            // A backend that materialised the session would retain all of it (≥ totalChars bytes) while streaming.
            assert.isBelow(peak, totalChars / 4, `retained ${peak} bytes while streaming ${totalChars} characters`)
          }).pipe(Effect.provide(layer))
        ))
    })

    describe("truncate", () => {
      test("truncate drops the record at a position and everything after; appends continue after what is kept", (store) =>
        Effect.gen(function*() {
          const first: Commit = { events: firstTurn, inbox: [accepted("prompt-1", "What is the weather?")] }
          yield* store.create(header(s1), first)
          const second: Commit = {
            events: events(firstTurn.length, [ev.user("idle context", MessageSource.user, "late")], 5_000),
            inbox: []
          }
          yield* store.append(s1, second)
          const before = yield* summaryOf(store, s1)
          // keep the inbox record and the first four events (user/message, turn/start, step/start, assistant/message)
          yield* store.truncate(s1, 5)
          const kept = at(0, texts([first]).slice(0, 5))
          assert.deepStrictEqual(yield* loadAll(store, s1), kept)
          const after = yield* summaryOf(store, s1)
          assert.strictEqual(after.events, 4)
          assert.strictEqual(after.turns, 1)
          assert.strictEqual(after.lastActivity, 2_000)
          assert.isBelow(after.bytes, before.bytes)
          assert.strictEqual(after.firstPrompt, "What is the weather?")
          assert.isTrue(yield* store.hasMessage(s1, mid("prompt-1")))
          assert.isFalse(yield* store.hasMessage(s1, mid("late")))
          // the stored event count is 4 again
          assert.strictEqual(
            yield* reasonOf(store.append(s1, eventsCommit(events(firstTurn.length + 1, [ev.user("x")])))),
            "Conflict"
          )
          const resumed = eventsCommit(events(4, [ev.user("again", MessageSource.user, "late")], 6_000))
          yield* store.append(s1, resumed)
          assert.deepStrictEqual(yield* loadAll(store, s1), [...kept, ...at(5, texts([resumed]))])
          assert.isTrue(yield* store.hasMessage(s1, mid("late")))
          assert.strictEqual((yield* summaryOf(store, s1)).lastActivity, 6_000)
        }))

      test("truncate to 0 empties the session, forgetting its figures; past the end it drops nothing", (store) =>
        Effect.gen(function*() {
          const commit: Commit = { events: firstTurn, inbox: [accepted("prompt-1", "What is the weather?")] }
          yield* store.create(header(s1, 1_500), commit)
          const full = yield* summaryOf(store, s1)
          yield* store.truncate(s1, 1_000)
          yield* store.truncate(s1, texts([commit]).length)
          assert.deepStrictEqual(yield* summaryOf(store, s1), full)
          yield* store.truncate(s1, 0)
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
          const empty = yield* summaryOf(store, s1)
          assert.deepStrictEqual([empty.events, empty.turns, empty.lastActivity, empty.firstPrompt], [
            0,
            0,
            1_500,
            undefined
          ])
          assert.isFalse(yield* store.hasMessage(s1, mid("prompt-1")))
          assert.deepStrictEqual(yield* store.header(s1), header(s1, 1_500))
          yield* store.append(s1, commit)
          assert.deepStrictEqual(yield* loadAll(store, s1), at(0, texts([commit])))
          assert.deepStrictEqual(yield* summaryOf(store, s1), full)
        }))

      test("a negative or fractional position is a Conflict", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), eventsCommit(events(0, [ev.user("a")])))
          assert.strictEqual(yield* reasonOf(store.truncate(s1, -1)), "Conflict")
          assert.strictEqual(yield* reasonOf(store.truncate(s1, 0.5)), "Conflict")
          assert.strictEqual((yield* loadAll(store, s1)).length, 1)
        }))

      test("truncating away the first prompt forgets it in the summary", (store) =>
        Effect.gen(function*() {
          yield* store.create(
            header(s1),
            eventsCommit(events(0, [ev.user("ctx", MessageSource.plugin("p")), ev.user("hello")]))
          )
          assert.strictEqual((yield* summaryOf(store, s1)).firstPrompt, "hello")
          yield* store.truncate(s1, 1)
          assert.isFalse("firstPrompt" in (yield* summaryOf(store, s1)))
          yield* store.append(s1, eventsCommit(events(1, [ev.user("second")])))
          assert.strictEqual((yield* summaryOf(store, s1)).firstPrompt, "second")
        }))
    })

    describe("list and remove", () => {
      test("list gives every session in creation order with figures kept up to date by appends", (store) =>
        Effect.gen(function*() {
          for (const s of ["b", "a", "c"]) yield* store.create(header(sid(s), 100))
          const empty = (yield* store.list).map((s) => [s.header.id, s.events, s.bytes] as const)
          assert.deepStrictEqual(empty.map(([id]) => id), ["b", "a", "c"])
          yield* store.append(sid("a"), eventsCommit(events(0, [ev.user("ctx", MessageSource.plugin("p"))], 200)))
          const [, a1] = yield* store.list
          assert.deepStrictEqual([a1!.events, a1!.turns, a1!.lastActivity, a1!.firstPrompt], [1, 0, 200, undefined])
          assert.isAbove(a1!.bytes, empty[1]![2])
          yield* store.append(sid("a"), eventsCommit(events(1, promptTurn(1, "Weather?", "Sunny."), 300)))
          yield* store.append(sid("a"), { events: [], inbox: [accepted("z", "later", 400)] })
          const [, a2] = yield* store.list
          assert.deepStrictEqual([a2!.events, a2!.turns, a2!.lastActivity, a2!.firstPrompt], [9, 1, 400, "Weather?"])
          yield* store.append(sid("a"), eventsCommit(events(9, [ev.user("second prompt")], 450)))
          const [b, a, c] = yield* store.list
          assert.deepStrictEqual([a!.events, a!.turns, a!.lastActivity, a!.firstPrompt], [10, 1, 450, "Weather?"])
          assert.isAbove(a!.bytes, a2!.bytes)
          assert.isAbove(a!.bytes, a1!.bytes)
          assert.deepStrictEqual([b!.events, b!.bytes, c!.events, c!.bytes], [0, empty[0]![2], 0, empty[2]![2]])
        }))

      test("the first prompt is the first human user/message, joined and cut to 200 code points", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const long = "🚀".repeat(150) + "x".repeat(100)
          const prompt: SessionEvent.SessionEventInput = {
            type: "user/message",
            data: { content: [block.text(long.slice(0, 100)), block.text(long.slice(100))], source: MessageSource.user }
          }
          yield* store.append(
            s1,
            eventsCommit(events(0, [
              ev.user("goal", { kind: "goal", goalId: "g", revision: 1, round: 1 }),
              prompt,
              ev.user("not the first")
            ]))
          )
          const preview = (yield* summaryOf(store, s1)).firstPrompt!
          assert.strictEqual(preview, "🚀".repeat(150) + "x".repeat(50))
          assert.strictEqual([...preview].length, 200)
        }))

      test("remove deletes a session and frees its id; other sessions are untouched", (store) =>
        Effect.gen(function*() {
          const commit: Commit = { events: firstTurn, inbox: [accepted("prompt-1", "What is the weather?")] }
          yield* store.create(header(sid("keep")), commit)
          yield* store.create(header(s1), commit)
          yield* store.saveSnapshot(s1, { seq: 3, position: 4, head: "head", body: "body" })
          yield* store.remove(s1)
          assert.strictEqual(yield* reasonOf(store.header(s1)), "NotFound")
          assert.strictEqual(yield* reasonOf(loadAll(store, s1)), "NotFound")
          assert.strictEqual(yield* reasonOf(store.remove(s1)), "NotFound")
          assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [sid("keep")])
          assert.deepStrictEqual(yield* loadAll(store, sid("keep")), at(0, texts([commit])))
          yield* store.create(header(s1, 9))
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
          assert.isFalse(yield* store.hasMessage(s1, mid("prompt-1")))
          assert.isTrue(Option.isNone(yield* store.loadSnapshot(s1)))
          assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [sid("keep"), s1])
        }))

      test("ids and texts with awkward characters are stored, listed and found exactly, each apart", (store) =>
        Effect.gen(function*() {
          for (const [i, id] of awkwardIds.entries()) {
            yield* store.create({ ...header(id, i), title: id }, {
              events: events(0, [ev.user(`${awkward} ${i}`, MessageSource.user, `${id}/${i}`)]),
              inbox: [accepted(awkward + id, awkward)]
            })
          }
          const listed = yield* store.list
          assert.deepStrictEqual(
            listed.map((s) => s.header),
            awkwardIds.map((id, i) => ({ ...header(id, i), title: id }))
          )
          for (const [i, id] of awkwardIds.entries()) {
            assert.deepStrictEqual(yield* store.header(id), { ...header(id, i), title: id })
            assert.deepStrictEqual(
              (yield* loadAll(store, id)).map((r) => r.text),
              [
                JSON.stringify(accepted(awkward + id, awkward)),
                JSON.stringify(events(0, [ev.user(`${awkward} ${i}`, MessageSource.user, `${id}/${i}`)])[0])
              ]
            )
            assert.isTrue(yield* store.hasMessage(id, mid(`${id}/${i}`)))
            assert.isTrue(yield* store.hasMessage(id, mid(awkward + id)))
            assert.strictEqual(listed[i]!.firstPrompt, `${awkward} ${i}`.slice(0, 200))
          }
          // removing one leaves the others (ids that differ only in case or by an escape included)
          yield* store.remove(sid("case"))
          yield* store.remove(sid("lone \ud800 surrogate"))
          assert.deepStrictEqual(
            (yield* store.list).map((s) => s.header.id),
            awkwardIds.filter((id) => id !== "case" && id !== "lone \ud800 surrogate")
          )
          assert.deepStrictEqual(yield* store.header(sid("CASE")), { ...header(sid("CASE"), 1), title: "CASE" })
        }))
    })

    describe("writer lease (ADR 0044)", () => {
      const refusal = <A>(effect: Effect.Effect<A, SessionStoreError>) =>
        Effect.flatMap(Effect.either(effect), (result) =>
          result._tag === "Left"
            ? Effect.succeed(result.left)
            : Effect.dieMessage("expected the store to refuse the write"))
      const turnOne = events(0, promptTurn(1, "One", "1"))

      test("a lease of an unknown session is NotFound; a lease names this process and fences unleased writes", (store) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* refusal(store.lease(s1))).reason, "NotFound")
          yield* store.create(header(s1))
          const lease = yield* store.lease(s1)
          assert.strictEqual(lease.id, s1)
          assert.isTrue(Number.isSafeInteger(lease.token))
          assert.isString(lease.holder.host)
          // an unleased append, truncate and snapshot are refused: Busy, nothing stored
          const refused = yield* refusal(store.append(s1, eventsCommit(turnOne)))
          assert.strictEqual(refused.reason, "Busy")
          assert.strictEqual(refused.id, s1)
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
          yield* store.append(s1, eventsCommit(turnOne), { lease })
          assert.strictEqual((yield* refusal(store.truncate(s1, 0))).reason, "Busy")
          const snapshot = { seq: 7, position: 7, head: "h", body: "b" }
          assert.strictEqual((yield* refusal(store.saveSnapshot(s1, snapshot))).reason, "Busy")
          assert.strictEqual((yield* loadAll(store, s1)).length, turnOne.length)
          // reads need no lease
          assert.strictEqual((yield* store.list)[0]!.events, turnOne.length)
          yield* store.saveSnapshot(s1, snapshot, { lease })
          assert.isTrue(Option.isSome(yield* store.loadSnapshot(s1)))
          yield* lease.release
        }))

      test("a later lease of this process takes the session over: the earlier lease is fenced, tokens grow", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const first = yield* store.lease(s1)
          const second = yield* store.lease(s1)
          assert.isAbove(second.token, first.token)
          const stale = yield* refusal(store.append(s1, eventsCommit(turnOne), { lease: first }))
          assert.strictEqual(stale.reason, "Busy")
          assert.deepStrictEqual(yield* loadAll(store, s1), [])
          yield* store.append(s1, eventsCommit(turnOne), { lease: second })
          assert.strictEqual((yield* refusal(store.truncate(s1, 1, { lease: first }))).reason, "Busy")
          assert.strictEqual((yield* loadAll(store, s1)).length, turnOne.length)
          // releasing the fenced lease leaves the current one alone
          yield* first.release
          assert.strictEqual(
            (yield* refusal(store.append(s1, { events: [], inbox: [accepted("a", "x")] }))).reason,
            "Busy"
          )
          yield* store.append(s1, { events: [], inbox: [accepted("a", "x")] }, { lease: second })
          // once released, the session takes unleased writes again, and the released lease is fenced
          yield* second.release
          yield* store.append(s1, { events: [], inbox: [settled("a", "discarded")] })
          assert.strictEqual(
            (yield* refusal(store.append(s1, { events: [], inbox: [accepted("b", "x")] }, { lease: second }))).reason,
            "Busy"
          )
          assert.strictEqual((yield* loadAll(store, s1)).length, turnOne.length + 2)
        }))

      test("a lease taken in an uninterruptible region (an acquireRelease's acquire) is released", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const lease = yield* Effect.uninterruptible(store.lease(s1))
          // Hung for ever when the store's renewal fiber inherited the region and could not be interrupted.
          yield* lease.release
          yield* store.append(s1, eventsCommit(turnOne))
          assert.strictEqual((yield* loadAll(store, s1)).length, turnOne.length)
        }))

      test("a session leased by this process can be removed; its id is free again", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), eventsCommit(turnOne))
          const lease = yield* store.lease(s1)
          yield* store.remove(s1)
          assert.strictEqual((yield* refusal(store.header(s1))).reason, "NotFound")
          yield* store.create(header(s1))
          // the old lease is not the new session's
          assert.strictEqual((yield* refusal(store.append(s1, eventsCommit(turnOne), { lease }))).reason, "Busy")
          yield* store.append(s1, eventsCommit(turnOne))
        }))
    })

    describe("hasMessage", () => {
      test("an id is known once an inbox/accepted, user/message or steering/message with it is stored", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          const ids = ["by-inbox", "by-user", "by-steering", "nul\u0000id", "lone \udc00 id"]
          for (const id of ids) assert.isFalse(yield* store.hasMessage(s1, mid(id)))
          yield* store.append(s1, { events: [], inbox: [accepted("by-inbox", "x"), settled("by-inbox", "discarded")] })
          yield* store.append(
            s1,
            eventsCommit(
              events(0, [
                ev.user("x", MessageSource.user, "by-user"),
                ev.turnStart(1),
                ev.steering(1, "y", "by-steering")
              ])
            )
          )
          yield* store.append(s1, {
            events: [],
            inbox: [accepted("nul\u0000id", "x"), accepted("lone \udc00 id", "x")]
          })
          for (const id of ids) assert.isTrue(yield* store.hasMessage(s1, mid(id)), id)
          // neither a settled record nor an id of another session counts, and ids are exact
          yield* store.append(s1, { events: [], inbox: [settled("only-settled", "withdrawn")] })
          yield* store.create(header(sid("other")), { events: [], inbox: [accepted("elsewhere", "x")] })
          for (
            const id of ["only-settled", "elsewhere", "by-user ", "BY-USER", "nul", "lone \udc01 id", "lone \ufffd id"]
          ) {
            assert.isFalse(yield* store.hasMessage(s1, mid(id)), id)
          }
        }))
    })

    describe("snapshots", () => {
      test("the latest snapshot's head and body are loaded back exactly; a position the session does not store is a Conflict", (store) =>
        Effect.gen(function*() {
          const commit: Commit = { events: firstTurn, inbox: [] }
          yield* store.create(header(s1), commit)
          assert.isTrue(Option.isNone(yield* store.loadSnapshot(s1)))
          yield* store.saveSnapshot(s1, { seq: 3, position: 3, head: "first", body: "first body" })
          const latest = { seq: 9, position: 9, head: `{"head":${JSON.stringify(awkward)}} ${awkward}`, body: awkward }
          yield* store.saveSnapshot(s1, latest)
          assert.deepStrictEqual(yield* snapshotOf(store, s1), Option.some(latest))
          assert.strictEqual(
            yield* reasonOf(store.saveSnapshot(s1, { seq: 99, position: firstTurn.length, head: "x", body: "x" })),
            "Conflict"
          )
          assert.strictEqual(
            yield* reasonOf(store.saveSnapshot(s1, { seq: 0, position: -1, head: "x", body: "x" })),
            "Conflict"
          )
          // a seq no event has: refused when saved, never a snapshot that cannot be loaded back
          assert.strictEqual(
            yield* reasonOf(store.saveSnapshot(s1, { seq: -1, position: 0, head: "x", body: "x" })),
            "Conflict"
          )
          assert.deepStrictEqual(yield* snapshotOf(store, s1), Option.some(latest))
          // Texts a backend might take for its own encoding come back exactly too, in either part.
          for (const text of ["", "\"quoted\"", "\"", "head\n[\"body\"]", `${awkward}\n[]`, "\n", "{\"seq\":9}\n"]) {
            for (
              const saved of [{ seq: 9, position: 9, head: text, body: "[]" }, {
                seq: 9,
                position: 9,
                head: "{}",
                body: text
              }]
            ) {
              yield* store.saveSnapshot(s1, saved)
              assert.deepStrictEqual(yield* snapshotOf(store, s1), Option.some(saved), JSON.stringify(saved))
            }
          }
        }))

      test("ADR 0027: a loaded head reads its body later, until the store no longer holds that snapshot", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), eventsCommit(firstTurn))
          yield* store.saveSnapshot(s1, { seq: 5, position: 5, head: "head 5", body: "body 5" })
          const first = Option.getOrThrow(yield* store.loadSnapshot(s1))
          assert.deepStrictEqual([first.seq, first.position, first.head], [5, 5, "head 5"])
          // Records appended after the head was loaded do not change what its body reads.
          yield* store.append(s1, eventsCommit(events(firstTurn.length, [ev.user("later")])))
          assert.deepStrictEqual(yield* first.body, Option.some("body 5"))
          assert.deepStrictEqual(yield* first.body, Option.some("body 5"), "read twice")
          // Replaced: the old head never reads the new body.
          yield* store.saveSnapshot(s1, { seq: 7, position: 7, head: "head 7", body: "body 7" })
          const second = Option.getOrThrow(yield* store.loadSnapshot(s1))
          assert.deepStrictEqual(yield* first.body, Option.none())
          assert.deepStrictEqual(yield* second.body, Option.some("body 7"))
          // Dropped by a truncate, then by a remove: none.
          yield* store.truncate(s1, 7)
          assert.deepStrictEqual(yield* second.body, Option.none())
          yield* store.saveSnapshot(s1, { seq: 6, position: 6, head: "head 6", body: "body 6" })
          const third = Option.getOrThrow(yield* store.loadSnapshot(s1))
          yield* store.remove(s1)
          assert.deepStrictEqual(yield* Effect.orElseSucceed(third.body, () => Option.none()), Option.none())
        }))

      test("truncate drops a snapshot that covers a dropped record and keeps one that does not", (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), eventsCommit(firstTurn))
          const saved = { seq: 5, position: 5, head: "at 5", body: "body at 5" }
          yield* store.saveSnapshot(s1, saved)
          yield* store.truncate(s1, 6)
          assert.deepStrictEqual(yield* snapshotOf(store, s1), Option.some(saved))
          yield* store.truncate(s1, 5)
          assert.isTrue(Option.isNone(yield* store.loadSnapshot(s1)))
        }))
    })

    describe("sessions: the log over this backend (commit model, crash repair, list, fork, remove)", () => {
      const logTest = (
        title: string,
        body: (store: Service) => Effect.Effect<void, SessionStoreError | SessionLogError, SessionStore>
      ) =>
        it.live(title, () =>
          Effect.scoped(
            Effect.flatMap(SessionStore, body).pipe(Effect.provide(layer))
          ))
      /** The error of an effect that must fail (a defect, failing the test, when it succeeds). */
      const failure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.flatMap(Effect.either(effect), (result) =>
          result._tag === "Left"
            ? Effect.succeed(result.left)
            : Effect.dieMessage(`expected a failure, got ${JSON.stringify(result.right)}`))
      const decoded = (store: Service, id: Ids.SessionId) =>
        Effect.map(loadAll(store, id), (records) => records.map((r) => JSON.parse(r.text) as unknown))

      logTest(
        "a log appends, flushes and reopens; what the store holds is the log (ADR 0008)",
        (store) =>
          Effect.gen(function*() {
            const log = yield* SessionLog.make({ id: s1 })
            yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
            for (const input of promptTurn(2, "Again", "Sure")) yield* log.append(input)
            yield* log.flush
            assert.deepStrictEqual(yield* log.cursors, { appended: 16, durable: 16 })
            const events = yield* log.events
            assert.deepStrictEqual(yield* decoded(store, s1), JSON.parse(JSON.stringify(events)))
            const reopened = yield* SessionLog.open(s1)
            assert.deepStrictEqual(yield* reopened.events, events)
            yield* assertConsistent(reopened)
          })
      )

      logTest(
        "R106: open closes a turn a crash left open, durably, and a second open changes nothing",
        (store) =>
          Effect.gen(function*() {
            const open: ReadonlyArray<SessionEvent.SessionEventInput> = [
              ...promptTurn(1, "Hi", "Hello"),
              ev.user("Run it", MessageSource.user, "p2"),
              ev.turnStart(2),
              ev.stepStart(2, 1),
              ev.assistant(2, 1, [block.toolCall("ran", "sh", "{}"), block.toolCall("queued", "sh", "{}")]),
              ev.toolCall(2, 1, "ran", "sh")
            ]
            const stored = stamp(open, { time: 7 })
            yield* store.create(header(s1), eventsCommit(stored))
            const log = yield* SessionLog.open(s1)
            const events = yield* log.events
            const closers = events.slice(stored.length)
            assert.deepStrictEqual(closers.map((e) => e.type), ["tool/result", "tool/result", "step/end", "turn/end"])
            assert.deepStrictEqual(closers.map((e) => e.seq), [13, 14, 15, 16])
            assert.isTrue(closers.every((e) => e.time === 7))
            const codes = closers.flatMap((e) => e.type === "tool/result" ? [e.data.error?.code] : [])
            assert.deepStrictEqual(codes, ["TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"])
            assert.deepStrictEqual(closers.at(-1)!.data, { turn: 2, reason: { kind: "interrupted" } })
            // made durable before open returned
            assert.deepStrictEqual(yield* decoded(store, s1), JSON.parse(JSON.stringify(events)))
            yield* assertConsistent(log)
            const again = yield* SessionLog.open(s1)
            assert.deepStrictEqual(yield* again.events, events)
            // and the log continues with the next turn
            const next = yield* again.append(ev.turnStart(3))
            assert.strictEqual(next.seq, 17)
          })
      )

      logTest(
        "list shows each session's header: id, created, title or first prompt, turns, last activity, size",
        () =>
          Effect.gen(function*() {
            const a = yield* SessionLog.make({ id: sid("a") })
            yield* a.appendAll([
              ...promptTurn(1, "What is the weather?", "Sunny"),
              ...promptTurn(2, "And now?", "Rain")
            ])
            yield* a.flush
            const b = yield* SessionLog.make({ id: sid("b"), title: "Named" })
            yield* b.appendAll([ev.user("context only", MessageSource.plugin("p"))])
            yield* b.flush
            const listed = yield* Sessions.list
            assert.deepStrictEqual(listed.map((s) => s.id), [sid("a"), sid("b")])
            const [la, lb] = listed
            assert.strictEqual(la!.title, "What is the weather?")
            assert.strictEqual(la!.turns, 2)
            assert.strictEqual(la!.events, 16)
            assert.strictEqual(la!.lastActivity, (yield* a.events).at(-1)!.time)
            assert.isAbove(la!.bytes, 0)
            assert.strictEqual(lb!.title, "Named")
            assert.strictEqual(lb!.turns, 0)
            assert.isUndefined(la!.parent)
          })
      )

      logTest(
        "R112: fork at a turn/end keeps the prefix and the parent in the header; the child continues numbering",
        (store) =>
          Effect.gen(function*() {
            const parent = yield* SessionLog.make({ id: s1 })
            yield* parent.appendAll([
              ...promptTurn(1, "One", "1"),
              ...promptTurn(2, "Two", "2"),
              ev.user("Three", MessageSource.user, "p3"),
              ev.turnStart(3)
            ])
            yield* parent.flush
            const firstEnd = 7
            const child = yield* Sessions.fork(s1, { at: firstEnd, id: sid("child"), title: "branch" })
            assert.strictEqual(child, sid("child"))
            assert.deepStrictEqual((yield* store.header(child)).parent, { id: s1, seq: firstEnd })
            const log = yield* SessionLog.open(child)
            assert.deepStrictEqual(yield* log.events, (yield* parent.events).slice(0, firstEnd + 1))
            yield* log.append(ev.user("Other", MessageSource.user, "o2"))
            assert.strictEqual((yield* log.append(ev.turnStart(2))).data.turn, 2)
            // default boundary: the last turn/end (the open turn 3 is left out)
            const latest = yield* Sessions.fork(s1, { id: sid("latest") })
            assert.deepStrictEqual((yield* store.header(latest)).parent, { id: s1, seq: 15 })
            assert.strictEqual((yield* loadAll(store, latest)).length, 16)
            const listed = yield* Sessions.list
            assert.deepStrictEqual(listed.find((s) => s.id === child)?.parent, { id: s1, seq: firstEnd })
            // the parent is untouched
            assert.strictEqual((yield* loadAll(store, s1)).length, 18)
          })
      )

      logTest(
        "R112: a fork boundary that is not a turn/end is refused (OPEN_TURN) and creates nothing",
        (store) =>
          Effect.gen(function*() {
            const parent = yield* SessionLog.make({ id: s1 })
            yield* parent.appendAll(promptTurn(1, "One", "1"))
            yield* parent.flush
            for (const at of [0, 3, 99]) {
              const error = yield* failure(Sessions.fork(s1, { at, id: sid("child") }))
              assert.strictEqual(error.reason, "fork-boundary")
              assert.include(error.message, JSON.stringify(s1))
            }
            const empty = yield* SessionLog.make({ id: sid("empty") })
            yield* empty.appendAll([ev.user("no turn yet")])
            yield* empty.flush
            assert.strictEqual((yield* failure(Sessions.fork(sid("empty")))).reason, "fork-boundary")
            assert.deepStrictEqual((yield* store.list).map((s) => s.header.id), [s1, sid("empty")])
          })
      )

      logTest(
        "ADR 0022: the log snapshots at turn/ends; open starts from the latest and gives the log a full replay gives",
        (store) =>
          Effect.gen(function*() {
            const log = yield* SessionLog.make({ id: s1, commit: { snapshotEvery: 8 } })
            for (let turn = 1; turn <= 3; turn++) {
              yield* log.appendAll(weatherTurn(turn))
              yield* log.flush
            }
            yield* log.recordInbox([accepted("waiting", "queued for later")])
            // The last turn is left open, as a crash leaves it.
            yield* log.appendAll([ev.user("Run", MessageSource.user, "p4"), ev.turnStart(4), ev.stepStart(4, 1)])
            yield* log.flush
            const saved = yield* store.loadSnapshot(s1)
            assert.isTrue(Option.isSome(saved), "the log saved a snapshot")
            const snapshot = Option.getOrThrow(saved)
            const records = yield* loadAll(store, s1)
            assert.strictEqual(JSON.parse(records[snapshot.position]!.text).type, "turn/end")
            const fromSnapshot = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
            const hidden: Service = {
              ...store,
              loadSnapshot: () => Effect.succeed(Option.none()),
              saveSnapshot: () => Effect.void
            }
            const replayed = yield* SessionLog.open(s1).pipe(Effect.provideService(SessionStore, hidden))
            const view = (l: SessionLog.Service) =>
              Effect.all({
                events: l.events,
                state: l.state,
                history: Effect.map(l.history, (h) => h.length),
                cursors: l.cursors,
                pending: Effect.succeed(l.pendingInbox.map((r) => r.message.id))
              })
            assert.deepStrictEqual(yield* view(fromSnapshot), yield* view(replayed))
            assert.deepStrictEqual((yield* view(fromSnapshot)).pending, [mid("waiting")])
            yield* assertConsistent(fromSnapshot)
          })
      )

      logTest(
        "ADR 0022: a snapshot that does not decode or agree with the records is ignored (full replay)",
        (store) =>
          Effect.gen(function*() {
            const log = yield* SessionLog.make({ id: s1, commit: { snapshotEvery: 0 } })
            yield* log.appendAll([...promptTurn(1, "One", "1"), ...promptTurn(2, "Two", "2")])
            // Closed, so the test may write the store directly (a leased session fences unleased writes).
            yield* log.close
            for (const head of ["not a snapshot", `{"format":"harness/snapshot"}`]) {
              yield* store.saveSnapshot(s1, { seq: 7, position: 7, head, body: "[]" })
              const reopened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
              assert.deepStrictEqual(yield* reopened.events, yield* log.events)
              yield* assertConsistent(reopened)
              yield* reopened.close
            }
          })
      )

      /** A session of three tool turns with a snapshot at its last turn/end, then one more turn after it. */
      const snapshotted = (store: Service) =>
        Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: s1, commit: { snapshotEvery: 0 } })
          for (let turn = 1; turn <= 3; turn++) {
            yield* log.appendAll(weatherTurn(turn))
          }
          yield* log.flush
          // `open` saves a snapshot where the log ends, before it returns, once it replayed `snapshotEvery` events
          // (the writer's snapshots come after a commit is reported durable: a test would have to wait for them).
          yield* SessionLog.open(s1, { commit: { snapshotEvery: 8 } })
          const saved = Option.getOrThrow(yield* store.loadSnapshot(s1))
          assert.strictEqual(saved.seq, (yield* log.state).nextSeq - 1, "a snapshot where the log ends")
          // One more turn, by a log that takes no snapshot (the first one is idle from here on).
          const next = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
          yield* next.appendAll(promptTurn(4, "And now?", "Rain."))
          yield* next.flush
          assert.strictEqual(Option.getOrThrow(yield* store.loadSnapshot(s1)).seq, saved.seq, "no second snapshot")
          return { log: next, saved }
        })
      /**
       * Turns 5 and 6 appended by `opened` (which takes snapshots), then the snapshot where they end. The writer's
       * snapshot comes after a write-behind commit is durable, so this waits for it to appear (the minute is a safety
       * net for a loaded machine, not the decider).
       */
      const twoTurnsSnapshotted = (store: Service, opened: SessionLog.Service) =>
        Effect.gen(function*() {
          for (let turn = 5; turn <= 6; turn++) {
            yield* opened.appendAll(promptTurn(turn, `Prompt ${turn}`, `Answer ${turn}`))
            yield* opened.flush
          }
          const end = (yield* opened.state).nextSeq - 1
          return yield* store.loadSnapshot(s1).pipe(
            Effect.map(Option.getOrThrow),
            Effect.filterOrFail((found) => found.seq === end),
            Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("60 seconds"))),
            Effect.orDie
          )
        })
      /** The store with its snapshot's body reads counted and, optionally, replaced. */
      const bodies = (store: Service, body?: (saved: string) => Option.Option<string>) =>
        Effect.map(Ref.make(0), (reads) => ({
          reads: Ref.get(reads),
          store: {
            ...store,
            loadSnapshot: (id: Ids.SessionId) =>
              Effect.map(store.loadSnapshot(id), (found) =>
                Option.map(found, (head) => ({
                  ...head,
                  body: Effect.zipRight(
                    Ref.update(reads, (n) => n + 1),
                    body === undefined ? head.body : Effect.map(head.body, Option.flatMap(body))
                  )
                })))
          } satisfies Service
        }))
      /** What a caller sees of an opened log, the next request's messages included. */
      const seen = (l: SessionLog.Service) =>
        Effect.all({
          events: l.events,
          state: l.state,
          messages: Effect.map(l.history, History.messages),
          cursors: l.cursors
        })
      const replayOf = (store: Service) =>
        SessionLog.open(s1, { commit: { snapshotEvery: 0 }, readOnly: true }).pipe(
          Effect.provideService(SessionStore, {
            ...store,
            loadSnapshot: () => Effect.succeed(Option.none()),
            saveSnapshot: () => Effect.void
          }),
          Effect.flatMap(seen)
        )

      logTest(
        "ADR 0027: open reads the snapshot's head only; its body is read once, by the first history read",
        (store) =>
          Effect.gen(function*() {
            const { log } = yield* snapshotted(store)
            const counted = yield* bodies(store)
            const opened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } }).pipe(
              Effect.provideService(SessionStore, counted.store)
            )
            assert.strictEqual(yield* counted.reads, 0, "open read no body")
            assert.deepStrictEqual(History.messages(yield* opened.history), History.messages(yield* log.history))
            yield* opened.history
            assert.strictEqual(yield* counted.reads, 1, "the first history read read the body, once")
            assert.deepStrictEqual(yield* seen(opened), yield* replayOf(store))
          })
      )

      logTest(
        "ADR 0027: a log opened from a snapshot extends its body when it takes the next one; reopened, it is the replay",
        (store) =>
          Effect.gen(function*() {
            yield* snapshotted(store)
            const counted = yield* bodies(store)
            const opened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 8 } }).pipe(
              Effect.provideService(SessionStore, counted.store)
            )
            const before = Option.getOrThrow(yield* store.loadSnapshot(s1)).seq
            // No history read: the body is read to be extended.
            const after = yield* twoTurnsSnapshotted(store, opened)
            assert.isAbove(after.seq, before, "a new snapshot")
            assert.strictEqual(yield* counted.reads, 1, "the old body was read once")
            const reopened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
            assert.deepStrictEqual(yield* seen(reopened), yield* replayOf(store))
            assert.deepStrictEqual(yield* seen(reopened), yield* seen(opened))
          })
      )

      logTest(
        "ADR 0027: a snapshot body that is missing, damaged or not its head's is never trusted: the history comes from the log",
        (store) =>
          Effect.gen(function*() {
            const { saved } = yield* snapshotted(store)
            const expected = yield* replayOf(store)
            const good = Option.getOrThrow(yield* saved.body)
            // Same length as the good body, so only the entries' reading can refuse them.
            const sameLength = (text: string) => text.padEnd(good.length, "#").slice(0, good.length)
            // A body of one message fewer than its head says, of the same length: all user entries (ADR 0080).
            const count = (JSON.parse(saved.head) as { readonly messages: number }).messages
            const fewer = (body: string) => {
              const some = "u1;1:x".repeat(count - 2)
              const room = body.length - some.length
              for (let n = room; n >= 0; n--) {
                const last = `u1;${n}:${"x".repeat(n)}`
                if (last.length === room) return Option.some(some + last)
              }
              return Option.none()
            }
            const damaged: ReadonlyArray<readonly [string, (body: string) => Option.Option<string>]> = [
              ["missing", () => Option.none()],
              ["empty", () => Option.some("")],
              ["torn", (body) => Option.some(body.slice(0, body.length / 2))],
              ["not in its version's form", (body) => Option.some(sameLength(`[${body.slice(2)}`))],
              ["an entry of an unknown kind", (body) => Option.some(`z${body.slice(1)}`)],
              ["a length past its end", (body) => Option.some(sameLength(`u1;${body.length}:`))],
              ["fewer messages than its head says", fewer]
            ]
            for (const [what, body] of damaged) {
              const counted = yield* bodies(store, body)
              const opened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } }).pipe(
                Effect.provideService(SessionStore, counted.store)
              )
              assert.deepStrictEqual(yield* seen(opened), expected, what)
              assert.strictEqual(yield* counted.reads, 1, what)
              yield* assertConsistent(opened)
            }
          })
      )

      logTest(
        "ADR 0027: a snapshot of the first format (head and body in one text) is ignored: the log replays",
        (store) =>
          Effect.gen(function*() {
            const { log, saved } = yield* snapshotted(store)
            yield* log.close
            const expected = yield* replayOf(store)
            const body = Option.getOrThrow(yield* saved.body)
            const head = JSON.parse(saved.head) as Record<string, unknown>
            const first: Record<string, unknown> = { ...head, version: 1 }
            delete first.bodyLength
            yield* store.saveSnapshot(s1, {
              seq: saved.seq,
              position: saved.position,
              head: `${JSON.stringify(first)}\n${body}`,
              body: ""
            })
            const counted = yield* bodies(store)
            const opened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } }).pipe(
              Effect.provideService(SessionStore, counted.store)
            )
            assert.deepStrictEqual(yield* seen(opened), expected)
            assert.strictEqual(yield* counted.reads, 0, "no body of a snapshot that was not used")
          })
      )

      logTest(
        "ADR 0080: a version-2 snapshot (its body a JSON array) opens from its body; the next snapshot is version 3",
        (store) =>
          Effect.gen(function*() {
            const { log, saved } = yield* snapshotted(store)
            const covered = (yield* log.events).filter((event) => event.seq <= saved.seq)
            yield* log.close
            const expected = yield* replayOf(store)
            const body = JSON.stringify(covered.flatMap((event) => snapshot.entryOf(event) ?? []))
            const head = { ...(JSON.parse(saved.head) as Record<string, unknown>), version: 2, bodyLength: body.length }
            yield* store.saveSnapshot(s1, {
              seq: saved.seq,
              position: saved.position,
              head: JSON.stringify(head),
              body
            })
            const counted = yield* bodies(store)
            const fromStart = yield* Ref.make(0)
            const watched: Service = {
              ...counted.store,
              load: (id, options) =>
                Stream.unwrap(Effect.as(
                  Ref.update(fromStart, (n) => options?.after === undefined ? n + 1 : n),
                  counted.store.load(id, options)
                ))
            }
            const opened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 8 } }).pipe(
              Effect.provideService(SessionStore, watched)
            )
            yield* opened.history
            assert.strictEqual(yield* counted.reads, 1, "its body was read")
            assert.strictEqual(yield* Ref.get(fromStart), 0, "and used: no event before it was read")
            assert.deepStrictEqual(yield* seen(opened), expected)
            const after = yield* twoTurnsSnapshotted(store, opened)
            assert.strictEqual((JSON.parse(after.head) as { readonly version: number }).version, 3)
            const reopened = yield* SessionLog.open(s1, { commit: { snapshotEvery: 0 } })
            assert.deepStrictEqual(yield* seen(reopened), yield* replayOf(store))
          })
      )

      logTest(
        "remove deletes a session: gone from the list, open fails, the id is free again",
        () =>
          Effect.gen(function*() {
            const log = yield* SessionLog.make({ id: s1 })
            yield* log.appendAll(promptTurn(1, "One", "1"))
            yield* log.flush
            yield* Sessions.remove(s1)
            assert.deepStrictEqual(yield* Sessions.list, [])
            const error = yield* failure(SessionLog.open(s1))
            assert.strictEqual(error.reason, "store")
            assert.include(error.message, "NotFound")
            assert.strictEqual((yield* failure(Sessions.remove(s1))).reason, "store")
            yield* SessionLog.make({ id: s1 })
          })
      )
    })
  })
}
