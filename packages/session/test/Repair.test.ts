/**
 * Crash repair on open (R106) over a store that hands back raw texts, as a damaged disk could hold them: torn
 * tails are discarded and truncated, corruption before the last committed turn/end is a readable error, an open
 * turn is closed by `Closers.repair` and made durable. (Hand-truncated JSONL files and SQLite rows are tested in
 * those packages.)
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import { block, ev, promptTurn, sessionId, stamp } from "@harness/testkit/Events"
import { Effect, Ref, Stream } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { assertConsistent } from "./fixtures.js"

const sid = sessionId("repair-1")

/** A store whose records are raw texts the test writes; it records truncations and synced commits. */
const rawStore = (texts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const memory = yield* SessionStore.makeMemory
    yield* memory.create({ id: sid, version: 1, createdAt: 0 })
    const stored = yield* Ref.make<ReadonlyArray<string>>(texts)
    const truncations = yield* Ref.make<ReadonlyArray<number>>([])
    const synced = yield* Ref.make(0)
    const store: SessionStore.Service = {
      ...memory,
      load: () =>
        Stream.unwrap(
          Effect.map(Ref.get(stored), (all) => Stream.fromIterable(all.map((text, position) => ({ position, text }))))
        ),
      truncate: (_, position) =>
        Effect.zipRight(
          Ref.update(truncations, (t) => [...t, position]),
          Ref.update(stored, (all) => all.slice(0, position))
        ),
      append: (_, commit, options) =>
        Effect.zipRight(
          options?.sync === true ? Ref.update(synced, (n) => n + 1) : Effect.void,
          Ref.update(stored, (all) => [...all, ...SessionStore.commitRecords(commit).map((r) => JSON.stringify(r))])
        )
    }
    return {
      store,
      texts: Ref.get(stored),
      truncations: Ref.get(truncations),
      synced: Ref.get(synced),
      open: SessionLog.open(sid).pipe(Effect.provideService(SessionStore.SessionStore, store))
    }
  })

const texts = (inputs: ReadonlyArray<SessionEvent.SessionEventInput>, start = 0) =>
  stamp(inputs, { start, time: 5 }).map((e) => JSON.stringify(e))

const turn1 = texts(promptTurn(1, "Hi", "Hello")) // seqs 0–7, the turn/end at position 7
const torn = "{\"seq\":8,\"time\":5,\"type\":\"user/mes"

describe("SessionLog.open crash repair (R106)", () => {
  it.effect("a torn record after the last turn/end is discarded and truncated; the log continues from it", () =>
    Effect.gen(function*() {
      const raw = yield* rawStore([...turn1, torn])
      const log = yield* raw.open
      assert.strictEqual((yield* log.events).length, 8)
      assert.deepStrictEqual(yield* raw.truncations, [8])
      assert.deepStrictEqual(yield* raw.texts, turn1)
      assert.strictEqual((yield* log.append(ev.user("again"))).seq, 8)
      yield* assertConsistent(log)
    }))

  it.effect("the torn tail starts at the first bad record: complete records after it go too, with no turn/end after", () =>
    Effect.gen(function*() {
      const later = texts([ev.user("after the tear")], 9)
      const raw = yield* rawStore([...turn1, torn, ...later])
      const log = yield* raw.open
      assert.strictEqual((yield* log.events).length, 8)
      assert.deepStrictEqual(yield* raw.texts, turn1)
    }))

  it.effect("a seq gap after the last turn/end is a torn tail too", () =>
    Effect.gen(function*() {
      const raw = yield* rawStore([...turn1, ...texts([ev.user("skipped a seq")], 9)])
      yield* raw.open
      assert.deepStrictEqual(yield* raw.truncations, [8])
      assert.deepStrictEqual(yield* raw.texts, turn1)
    }))

  it.effect("a session with no turn/end at all: a bad record anywhere is a tail (nothing was committed by a turn)", () =>
    Effect.gen(function*() {
      const raw = yield* rawStore(["{\"seq\":0,"])
      const log = yield* raw.open
      assert.deepStrictEqual(yield* log.events, [])
      assert.deepStrictEqual(yield* raw.texts, [])
    }))

  it.effect("an out-of-turn user/message after the last turn/end is committed history, not a tail", () =>
    Effect.gen(function*() {
      const idle = texts([ev.user("idle context", MessageSource.plugin("p"))], 8)
      const raw = yield* rawStore([...turn1, ...idle])
      const log = yield* raw.open
      assert.strictEqual((yield* log.events).length, 9)
      assert.deepStrictEqual(yield* raw.texts, [...turn1, ...idle])
      assert.strictEqual(yield* raw.synced, 0) // nothing to repair, nothing written
    }))

  it.effect("a bad record before a committed turn/end is corruption: a readable error naming session and record, nothing changed", () =>
    Effect.gen(function*() {
      const turn2 = texts(promptTurn(2, "Again", "Sure"), 8)
      const damaged = [...turn1, ...turn2]
      damaged[10] = "{\"seq\":10,\"time\":5,\"type\":\"step/start\",\"data\":{\"turn\":2,\"st"
      const raw = yield* rawStore(damaged)
      const error = yield* Effect.flip(raw.open)
      assert.strictEqual(error.reason, "corrupt")
      assert.strictEqual(error.session, sid)
      assert.strictEqual(error.position, 10)
      assert.include(error.message, JSON.stringify(sid))
      assert.include(error.message, "stored record 10")
      assert.include(error.message, "is not a record")
      assert.deepStrictEqual(yield* raw.texts, damaged)
      assert.deepStrictEqual(yield* raw.truncations, [])
    }))

  it.effect("a record that is valid JSON but not an event, before a turn/end, names what is wrong", () =>
    Effect.gen(function*() {
      const damaged = [...turn1]
      damaged[3] = "{\"seq\":3,\"time\":5,\"type\":\"nope\",\"data\":{}}"
      const error = yield* Effect.flip((yield* rawStore(damaged)).open)
      assert.strictEqual(error.reason, "corrupt")
      assert.strictEqual(error.position, 3)
      assert.include(error.message, "nope")
    }))

  it.effect("a stored event that breaks an enclosure rule is corruption wherever it is", () =>
    Effect.gen(function*() {
      const raw = yield* rawStore([...turn1, ...texts([ev.stepStart(1, 1)], 8)])
      const error = yield* Effect.flip(raw.open)
      assert.strictEqual(error.reason, "corrupt")
      assert.strictEqual(error.position, 8)
      assert.strictEqual(error.seq, 8)
      assert.include(error.message, "outside-turn")
    }))

  it.effect("an open turn is closed with the closers (seq continuing, the last event's time) in one synced commit", () =>
    Effect.gen(function*() {
      const open = texts([
        ev.user("Go", MessageSource.user, "p2"),
        ev.turnStart(2),
        ev.stepStart(2, 1),
        ev.assistant(2, 1, [block.toolCall("a", "sh", "{}"), block.toolCall("b", "sh", "{}")]),
        ev.toolCall(2, 1, "a", "sh")
      ], 8)
      const raw = yield* rawStore([...turn1, ...open, torn.replace("\"seq\":8", "\"seq\":13")])
      const log = yield* raw.open
      const events = yield* log.events
      assert.deepStrictEqual(events.slice(13).map((e) => [e.seq, e.type, e.time]), [
        [13, "tool/result", 5],
        [14, "tool/result", 5],
        [15, "step/end", 5],
        [16, "turn/end", 5]
      ])
      assert.deepStrictEqual(events[13]!.sourceEventSeqs, [12])
      assert.strictEqual(yield* raw.synced, 1)
      assert.deepStrictEqual(yield* raw.truncations, [13])
      assert.deepStrictEqual(
        (yield* raw.texts).map((t) => JSON.parse(t) as unknown),
        JSON.parse(JSON.stringify(events)) as unknown
      )
      yield* assertConsistent(log)
    }))

  it.effect("inbox records in the stored stream are skipped (positions still count)", () =>
    Effect.gen(function*() {
      const settled = JSON.stringify({ type: "inbox/settled", time: 5, id: "m1", fate: "claimed" })
      const raw = yield* rawStore([settled, ...turn1, torn])
      const log = yield* raw.open
      assert.strictEqual((yield* log.events).length, 8)
      assert.deepStrictEqual(yield* raw.truncations, [9])
    }))
})
