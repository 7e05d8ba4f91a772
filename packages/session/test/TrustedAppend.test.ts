/**
 * `appendTrusted` (ADR 0023): the agent's own typed constructions skip the schema validation and its deep copy, and
 * nothing else — numbering, stamping, the enclosure rules, the store and the observers behave as with `appendAll`.
 * Input from outside still goes through `append` / `appendAll`, which refuse an invalid event with a typed error.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionEvent } from "@harness/domain"
import { block, ev, promptTurn, sessionId, toolTurn } from "@harness/testkit/Events"
import { Chunk, Effect, Queue, Schema, Stream, TestClock } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { assertConsistent, snapshot } from "./fixtures.js"

const setup = Effect.gen(function*() {
  const store = yield* SessionStore.makeMemory
  const log = yield* SessionLog.make({ id: sessionId("trusted") }).pipe(
    Effect.provideService(SessionStore.SessionStore, store)
  )
  return { log, store }
})

const decodeRow = Schema.decodeSync(Schema.parseJson(SessionEvent.SessionEvent))

describe("SessionLog.appendTrusted", () => {
  it.scoped("appends exactly what appendAll appends: seq, time, store rows, observers, history", () =>
    Effect.gen(function*() {
      const inputs = [
        ...promptTurn(1, "Hi", "Hello"),
        ...toolTurn(2, "Weather?", [{ id: "c1", name: "weather", args: "{}", result: "sunny" }], "Sunny.")
      ]
      const checked = yield* setup
      const trusted = yield* setup
      const seen = yield* trusted.log.subscribe
      yield* TestClock.adjust("42 millis")
      const viaAll = yield* checked.log.appendAll(inputs)
      const viaTrusted = yield* trusted.log.appendTrusted(inputs)
      assert.deepStrictEqual(viaTrusted, viaAll)
      assert.deepStrictEqual(viaTrusted.map((e) => [e.seq, e.time]), inputs.map((_, i) => [i, 42]))
      assert.deepStrictEqual(yield* snapshot(trusted.log), yield* snapshot(checked.log))
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Queue.takeAll(seen)), viaTrusted)
      const rows = Chunk.toReadonlyArray(yield* Stream.runCollect(trusted.store.load(trusted.log.id)))
      assert.deepStrictEqual(rows.map((r) => decodeRow(r.text)), viaTrusted)
      yield* assertConsistent(trusted.log)
    }))

  it.scoped("still enforces the enclosure rules: a batch breaking one is refused whole, nothing changes", () =>
    Effect.gen(function*() {
      const { log, store } = yield* setup
      yield* log.appendTrusted([ev.turnStart(1), ev.stepStart(1, 1)])
      const seen = yield* log.subscribe
      const before = yield* snapshot(log)
      // `step/end` of a step that is not open, after a valid chunk: the chunk is not kept either.
      const error = yield* Effect.flip(
        log.appendTrusted([ev.chunk(1, 1, { type: "text-delta", delta: "a" }), ev.stepEnd(1, 2)])
      )
      assert.strictEqual(error._tag, "SessionLogError")
      assert.strictEqual(error.reason, "step-end-mismatch")
      assert.strictEqual(error.seq, before.state.nextSeq + 1)
      assert.deepStrictEqual(yield* snapshot(log), before)
      assert.strictEqual(yield* Queue.size(seen), 0)
      assert.strictEqual(Chunk.size(yield* Stream.runCollect(store.load(log.id))), 2)
      // A turn cannot start inside a turn either.
      assert.strictEqual((yield* Effect.flip(log.appendTrusted([ev.turnStart(2)]))).reason, "nested-turn")
    }))

  it.effect("input from outside is still validated: appendAll refuses an invalid event whole, with invalid-event", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      yield* log.appendTrusted([ev.turnStart(1), ev.stepStart(1, 1)])
      const before = yield* snapshot(log)
      const error = yield* Effect.flip(log.appendAll([
        ev.chunk(1, 1, { type: "text-delta", delta: "fine" }),
        ev.assistant(1, 1, [block.text("ok")]),
        // What a careless tool or hook could hand over: not JSON-lossless.
        { type: "assistant/chunk", data: { turn: 1, step: 1, chunk: { when: new Date(0) } } } as never
      ]))
      assert.strictEqual(error._tag, "SessionLogError")
      assert.strictEqual(error.reason, "invalid-event")
      assert.strictEqual(error.seq, before.state.nextSeq + 2)
      assert.include(error.message, "assistant/chunk")
      assert.deepStrictEqual(yield* snapshot(log), before)
    }))
})
