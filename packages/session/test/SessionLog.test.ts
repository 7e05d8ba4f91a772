import { assert, describe, it } from "@effect/vitest"
import { MessageSource, SessionEvent } from "@harness/domain"
import { block, ev, goodLogs, promptTurn, sessionId, stamp, toolTurn } from "@harness/testkit/Events"
import { Chunk, Effect, Fiber, Queue, Schema, Stream, TestClock } from "effect"
import * as History from "../src/History.js"
import * as LogCheck from "../src/LogCheck.js"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { appendAll, assertConsistent, snapshot } from "./fixtures.js"

type Input = SessionEvent.SessionEventInput

const sid = sessionId("session-1")

/** A log over a memory store with a fault injector; the store is returned too, to check what was written. */
const setup = (options: SessionLog.MakeOptions = { id: sid }) =>
  Effect.gen(function*() {
    const [store, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
    const log = yield* SessionLog.make(options).pipe(Effect.provideService(SessionStore.SessionStore, store))
    return { log, store, faults }
  })

const decodeRow = Schema.decodeSync(Schema.parseJson(SessionEvent.SessionEvent))

/** The store holds exactly the log's events, one record each, at positions 0, 1, 2, … */
const assertStored = (store: SessionStore.Service, log: SessionLog.Service) =>
  Effect.gen(function*() {
    const records = Chunk.toReadonlyArray(yield* Stream.runCollect(store.load(log.id)))
    const events = yield* log.events
    assert.deepStrictEqual(records.map((r) => decodeRow(r.text)), events)
    assert.deepStrictEqual(records.map((r) => r.position), events.map((_, i) => i))
  })

interface RuleCase {
  readonly rule: LogCheck.Rule
  readonly prefix: ReadonlyArray<Input>
  /** Each is refused on its own at the end of the prefix. */
  readonly refused: ReadonlyArray<Input>
  /** Then these are accepted, in order. */
  readonly accepted: ReadonlyArray<Input>
}

const inTurn = [ev.turnStart(1)]
const inStep = [ev.turnStart(1), ev.stepStart(1, 1)]

const ruleCases: ReadonlyArray<RuleCase> = [
  {
    rule: "outside-turn",
    prefix: promptTurn(1, "Hi", "Hello"),
    refused: [
      ev.steering(1, "late steering"),
      ev.header(),
      ev.stepStart(1, 2),
      ev.stepEnd(1, 1),
      ev.chunk(1, 1, { type: "text-delta", delta: "x" }),
      ev.assistant(1, 1, [block.text("x")]),
      ev.toolCall(1, 1, "c1", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "x")
    ],
    // user/message is the one event allowed between turns
    accepted: [ev.user("idle context", MessageSource.plugin("p")), ev.user("more")]
  },
  {
    rule: "turn-number",
    prefix: promptTurn(1, "Hi", "Hello"),
    refused: [ev.turnStart(3), ev.turnStart(1)],
    accepted: promptTurn(2, "Again", "Hello again")
  },
  {
    rule: "nested-turn",
    prefix: inTurn,
    refused: [ev.turnStart(2)],
    accepted: [ev.turnEnd(1), ev.turnStart(2), ev.turnEnd(2)]
  },
  {
    rule: "turn-end-mismatch",
    prefix: [...promptTurn(1, "Hi", "Hello"), ev.turnStart(2)],
    refused: [ev.turnEnd(1), ev.turnEnd(3)],
    accepted: [ev.turnEnd(2)]
  },
  {
    rule: "turn-end-mismatch",
    prefix: [],
    refused: [ev.turnEnd(1)],
    accepted: [ev.turnStart(1), ev.turnEnd(1)]
  },
  {
    rule: "turn-end-step-open",
    prefix: inStep,
    refused: [ev.turnEnd(1), ev.turnEnd(1, { kind: "aborted" })],
    accepted: [ev.stepEnd(1, 1), ev.turnEnd(1, { kind: "aborted" })]
  },
  {
    rule: "step-number",
    prefix: [...inTurn, ev.stepStart(1, 1), ev.stepEnd(1, 1)],
    refused: [ev.stepStart(1, 1), ev.stepStart(1, 3)],
    // and numbering restarts at 1 in the next turn
    accepted: [ev.stepStart(1, 2), ev.stepEnd(1, 2), ev.turnEnd(1), ev.turnStart(2), ev.stepStart(2, 1)]
  },
  {
    rule: "step-number",
    prefix: inTurn,
    refused: [ev.stepStart(1, 2)],
    accepted: [ev.stepStart(1, 1)]
  },
  {
    rule: "nested-step",
    prefix: inStep,
    refused: [ev.stepStart(1, 2)],
    accepted: [ev.stepEnd(1, 1), ev.stepStart(1, 2)]
  },
  {
    rule: "step-end-mismatch",
    prefix: inStep,
    refused: [ev.stepEnd(1, 2)],
    accepted: [ev.stepEnd(1, 1)]
  },
  {
    rule: "step-end-mismatch",
    prefix: [...inStep, ev.stepEnd(1, 1)],
    refused: [ev.stepEnd(1, 1)],
    accepted: [ev.turnEnd(1)]
  },
  {
    rule: "wrong-turn",
    prefix: [...promptTurn(1, "Hi", "Hello"), ev.user("Next"), ev.turnStart(2), ev.stepStart(2, 1)],
    refused: [
      ev.steering(1, "for the closed turn"),
      ev.stepEnd(1, 1),
      ev.stepStart(1, 2),
      ev.chunk(1, 1, { type: "text-delta", delta: "x" }),
      ev.assistant(3, 1, []),
      ev.toolCall(1, 1, "c1", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "x")
    ],
    accepted: [ev.steering(2, "for the open turn"), ev.toolCall(2, 1, "c1", "ls"), ev.toolResult(2, 1, "c1", "ls", "x")]
  },
  {
    rule: "outside-step",
    prefix: [...inTurn, ev.stepStart(1, 1), ev.stepEnd(1, 1)],
    refused: [
      ev.chunk(1, 1, { type: "text-delta", delta: "x" }),
      ev.assistant(1, 1, [block.text("x")]),
      ev.toolCall(1, 1, "c1", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "x"),
      ev.assistant(1, 2, [block.text("x")])
    ],
    // request/header and steering may sit outside steps within a turn
    accepted: [ev.header(), ev.steering(1, "between steps"), ev.stepStart(1, 2), ev.assistant(1, 2, [block.text("x")])]
  },
  {
    rule: "outside-step",
    prefix: inStep,
    refused: [ev.chunk(1, 2, { type: "text-delta", delta: "x" }), ev.toolCall(1, 2, "c1", "ls")],
    // request/header, steering and user messages may sit inside steps too
    accepted: [
      ev.header("other", "change"),
      ev.steering(1, "inside"),
      ev.user("context inside"),
      ev.toolCall(1, 1, "c1", "ls")
    ]
  },
  {
    rule: "unknown-tool-call",
    prefix: [
      ...inStep,
      ev.assistant(1, 1, [block.toolCall("c1", "ls", "{}"), block.toolCall("c2", "cat", "{}")]),
      ev.toolCall(1, 1, "c0", "pwd")
    ],
    // c1 is only in the message (no tool/call yet); c9 is unknown altogether
    refused: [ev.toolResult(1, 1, "c1", "ls", "x"), ev.toolResult(1, 1, "c9", "ls", "x", { code: "ABORTED" })],
    // crash repair's TOOL_NOT_STARTED result is the exception
    accepted: [
      ev.toolResult(1, 1, "c0", "pwd", "/"),
      ev.toolCall(1, 1, "c1", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "a.txt"),
      ev.toolResult(1, 1, "c2", "cat", "tool was not started", { code: "TOOL_NOT_STARTED" })
    ]
  },
  {
    rule: "unknown-tool-call",
    // a result must answer a call of the same step
    prefix: [
      ...inStep,
      ev.toolCall(1, 1, "c1", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "x"),
      ev.stepEnd(1, 1),
      ev.stepStart(1, 2)
    ],
    refused: [ev.toolResult(1, 2, "c1", "ls", "x")],
    accepted: [ev.toolCall(1, 2, "c1", "ls"), ev.toolResult(1, 2, "c1", "ls", "x")]
  },
  {
    rule: "duplicate-tool-call",
    prefix: [...inStep, ev.assistant(1, 1, [block.toolCall("c1", "ls", "{}")]), ev.toolCall(1, 1, "c1", "ls")],
    refused: [ev.toolCall(1, 1, "c1", "ls"), ev.toolCall(1, 1, "c1", "other", "{\"x\":1}")],
    // the same id in the next step is a new call
    accepted: [
      ev.toolCall(1, 1, "c2", "ls"),
      ev.toolResult(1, 1, "c1", "ls", "x"),
      ev.toolResult(1, 1, "c2", "ls", "x"),
      ev.stepEnd(1, 1),
      ev.stepStart(1, 2),
      ev.toolCall(1, 2, "c1", "ls")
    ]
  },
  {
    rule: "duplicate-tool-result",
    prefix: [...inStep, ev.toolCall(1, 1, "c1", "ls"), ev.toolResult(1, 1, "c1", "ls", "x")],
    refused: [
      ev.toolResult(1, 1, "c1", "ls", "again"),
      ev.toolResult(1, 1, "c1", "ls", "again", { code: "TOOL_NOT_STARTED" })
    ],
    accepted: [ev.stepEnd(1, 1), ev.turnEnd(1)]
  }
]

describe("SessionLog enclosure rules (R100)", () => {
  for (const [index, c] of ruleCases.entries()) {
    it.scoped(`${c.rule} (#${index}): refused with reason "${c.rule}", nothing changes; the right events are accepted`, () =>
      Effect.gen(function*() {
        const { log, store } = yield* setup()
        yield* appendAll(log, c.prefix)
        const queue = yield* log.subscribe
        const before = yield* snapshot(log)
        for (const bad of c.refused) {
          const error = yield* Effect.flip(log.append(bad))
          assert.strictEqual(error._tag, "SessionLogError")
          assert.strictEqual(error.reason, c.rule, `${bad.type}: ${error.message}`)
          assert.strictEqual(error.seq, before.state.nextSeq)
          assert.deepStrictEqual(yield* snapshot(log), before)
        }
        assert.strictEqual(yield* Queue.size(queue), 0, "observers saw a refused event")
        yield* assertStored(store, log)
        const accepted = yield* appendAll(log, c.accepted)
        assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Queue.takeAll(queue)), accepted)
        assert.deepStrictEqual(accepted.map((e) => e.seq), accepted.map((_, i) => before.state.nextSeq + i))
        yield* assertStored(store, log)
        yield* assertConsistent(log)
      }))
  }

  it.effect("every append-time rule has a refusal test", () =>
    Effect.sync(() => {
      // Every rule but the ones only a whole-log check can see (a gap, an unanswered call, an unclosed turn).
      const wholeLogOnly: ReadonlySet<LogCheck.Rule> = new Set(["seq-gap", "unanswered-tool-call", "unclosed-turn"])
      const appendTime = LogCheck.Rule.literals.filter((rule) => !wholeLogOnly.has(rule))
      assert.deepStrictEqual([...new Set(ruleCases.map((c) => c.rule))].sort(), [...appendTime].sort())
    }))

  it.effect("a step may end with calls still owed (only checkLog flags it)", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      yield* appendAll(log, [...inStep, ev.assistant(1, 1, [block.toolCall("c1", "ls", "{}")]), ev.stepEnd(1, 1)])
      assert.deepStrictEqual((yield* log.state).owed, [])
    }))
})

describe("SessionLog.append", () => {
  it.effect("seq is gap-free from 0 and time comes from the Clock", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      const first = yield* log.append(ev.user("a"))
      yield* TestClock.adjust("1500 millis")
      const second = yield* log.append(ev.turnStart(1))
      yield* TestClock.adjust("2 seconds")
      const third = yield* log.append(ev.turnEnd(1))
      assert.deepStrictEqual([first.seq, second.seq, third.seq], [0, 1, 2])
      assert.deepStrictEqual([first.time, second.time, third.time], [0, 1500, 3500])
      // the returned envelope is the stored event, narrowed to the input's type
      assert.strictEqual(second.data.turn, 1)
      assert.deepStrictEqual(yield* log.events, [first, second, third])
      assert.strictEqual((yield* log.state).nextSeq, 3)
    }))

  it.effect("the stored event is a copy: mutating the input afterwards changes nothing", () =>
    Effect.gen(function*() {
      const { log, store } = yield* setup()
      const chunk = { type: "text-delta", delta: "a" }
      const content = [block.text("x")]
      yield* appendAll(log, [ev.turnStart(1), ev.stepStart(1, 1)])
      yield* log.append(ev.chunk(1, 1, chunk))
      yield* log.append(ev.assistant(1, 1, content))
      chunk.delta = "changed"
      content.push(block.text("pushed"))
      const events = yield* log.events
      assert.deepStrictEqual(events[2]!.data, { turn: 1, step: 1, chunk: { type: "text-delta", delta: "a" } })
      assert.deepStrictEqual(events[3]!.type === "assistant/message" && events[3].data.content, [block.text("x")])
      yield* assertStored(store, log)
    }))

  it.effect("an event that is not JSON-lossless or breaks its schema is refused as invalid-event", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      yield* appendAll(log, inStep)
      const before = yield* snapshot(log)
      const nan = yield* Effect.flip(log.append(ev.chunk(1, 1, { value: Number.NaN })))
      assert.strictEqual(nan.reason, "invalid-event")
      assert.include(nan.message, "NaN")
      const zero = yield* Effect.flip(log.append(ev.stepEnd(0, 1)))
      assert.strictEqual(zero.reason, "invalid-event")
      assert.include(zero.message, "positive integer")
      const extra = { ...ev.stepEnd(1, 1), surfaceOp: "append" }
      assert.strictEqual((yield* Effect.flip(log.append(extra))).reason, "invalid-event")
      assert.deepStrictEqual(yield* snapshot(log), before)
      // the seq was not consumed
      assert.strictEqual((yield* log.append(ev.stepEnd(1, 1))).seq, before.state.nextSeq)
    }))

  it.scoped("a store failure refuses the append and leaves log, state, history, store and observers unchanged", () =>
    Effect.gen(function*() {
      const { faults, log, store } = yield* setup()
      const turn = toolTurn(1, "Weather?", [{ id: "c1", name: "weather", args: "{}", result: "sunny" }], "Sunny.")
      const resultIndex = turn.findIndex((e) => e.type === "tool/result")
      yield* appendAll(log, turn.slice(0, resultIndex))
      const queue = yield* log.subscribe
      const before = yield* snapshot(log)
      yield* faults.failWhen(SessionStore.anyEvent((event) => event.type === "tool/result"))
      const error = yield* Effect.flip(log.append(turn[resultIndex]!))
      assert.strictEqual(error.reason, "store")
      assert.include(error.message, "Injected")
      assert.strictEqual(error.seq, undefined)
      assert.deepStrictEqual(yield* snapshot(log), before)
      assert.strictEqual(yield* Queue.size(queue), 0)
      yield* assertStored(store, log)
      // once the store recovers, the same append goes through at the same seq
      yield* faults.clear
      const result = yield* log.append(turn[resultIndex]!)
      assert.strictEqual(result.seq, before.state.nextSeq)
      yield* appendAll(log, turn.slice(resultIndex + 1))
      assert.strictEqual((yield* Queue.takeAll(queue)).length, turn.length - resultIndex)
      yield* assertStored(store, log)
      yield* assertConsistent(log)
    }))

  it.effect("concurrent appends are serialised: gap-free, stored in order", () =>
    Effect.gen(function*() {
      const { log, store } = yield* setup()
      const appended = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) => log.append(ev.user(`message ${i}`)),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(appended.map((e) => e.seq).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i))
      assert.deepStrictEqual((yield* log.events).map((e) => e.seq), Array.from({ length: 50 }, (_, i) => i))
      yield* assertStored(store, log)
      yield* assertConsistent(log)
    }))

  it.effect("history and state are kept current per append", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      const inputs = toolTurn(1, "Weather?", [{ id: "c1", name: "weather", args: "{}", result: "sunny" }], "Sunny.")
      for (const input of inputs) {
        yield* log.append(input)
        yield* assertConsistent(log)
      }
      const state = yield* log.state
      assert.deepStrictEqual(
        { lastTurn: state.lastTurn, openTurn: state.openTurn, lastStep: state.lastStep, openStep: state.openStep },
        { lastTurn: 1, openTurn: undefined, lastStep: 2, openStep: undefined }
      )
      // user, assistant (calls), tool result, assistant (answer)
      assert.strictEqual((yield* log.history).length, 4)
    }))

  it.effect("the state keeps the last request header", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      yield* appendAll(log, [ev.turnStart(1), ev.header("m1"), ev.header("m2", "change"), ev.turnEnd(1)])
      assert.deepStrictEqual((yield* log.state).header, { config: { model: "m2" }, system: "You are a test." })
    }))
})

describe("SessionLog row encoding", () => {
  // The log JSON-encodes its validated copy of an event directly (one schema pass per append). That is sound only
  // while the encoded form of SessionEvent is its type form: no transformation anywhere in the schema, which the
  // domain's Store schema test asserts ("no store schema nor SessionEvent has a transformation").
  it.effect("each stored row is the schema's own JSON encoding of the event", () =>
    Effect.gen(function*() {
      const { log, store } = yield* setup()
      for (const { inputs } of goodLogs.slice(-1)) yield* appendAll(log, inputs)
      const encode = Schema.encodeSync(Schema.parseJson(SessionEvent.SessionEvent))
      const events = yield* log.events
      const records = yield* Stream.runCollect(store.load(sid))
      assert.deepStrictEqual(Chunk.toReadonlyArray(records).map((r) => r.text), events.map((e) => encode(e)))
    }))
})

describe("SessionLog observers", () => {
  it.scoped("subscribe is subscribed when it returns and sees every appended event in seq order", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      yield* log.append(ev.user("before subscribing"))
      const queue = yield* log.subscribe
      const appended = yield* appendAll(log, promptTurn(1, "Hi", "Hello"))
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Queue.takeAll(queue)), appended)
    }))

  it.scoped("observers are unbounded: a subscriber that never reads does not hold up appends", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      const idle = yield* log.subscribe
      const inputs = Array.from({ length: 300 }, (_, i) => promptTurn(i + 1, `p${i}`, `a${i}`)).flat()
      yield* appendAll(log, inputs)
      assert.strictEqual(yield* Queue.size(idle), inputs.length)
    }))

  it.scoped("two subscribers each see all events", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      const a = yield* log.subscribe
      const b = yield* log.subscribe
      const appended = yield* appendAll(log, promptTurn(1, "Hi", "Hello"))
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Queue.takeAll(a)), appended)
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Queue.takeAll(b)), appended)
    }))

  it.effect("changes streams the appended events in order", () =>
    Effect.gen(function*() {
      const { log } = yield* setup()
      const inputs = promptTurn(1, "Hi", "Hello")
      const fiber = yield* log.changes.pipe(Stream.take(inputs.length), Stream.runCollect, Effect.fork)
      yield* TestClock.adjust(0) // lets the stream subscribe
      const appended = yield* appendAll(log, inputs)
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(fiber)), appended)
    }))
})

describe("SessionLog seeds", () => {
  const seedInputs = [
    ...promptTurn(1, "Hi", "Hello"),
    ...toolTurn(2, "Weather?", [{ id: "c1", name: "weather", args: "{}", result: "sunny" }], "Sunny.")
  ]
  const seed = stamp(seedInputs, { time: 7 })

  it.effect("a seeded log continues numbering (seq and turns) and stores the seed first", () =>
    Effect.gen(function*() {
      const { log, store } = yield* setup({ id: sid, seed })
      assert.deepStrictEqual(yield* log.events, seed)
      const state = yield* log.state
      assert.strictEqual(state.nextSeq, seed.length)
      assert.strictEqual(state.lastTurn, 2)
      assert.deepStrictEqual(History.messages(yield* log.history), History.deriveMessages(seed))
      assert.strictEqual((yield* Effect.flip(log.append(ev.turnStart(1)))).reason, "turn-number")
      const appended = yield* appendAll(log, promptTurn(3, "More", "Sure"))
      assert.strictEqual(appended[0]!.seq, seed.length)
      assert.strictEqual(appended[1]!.type === "turn/start" && appended[1].data.turn, 3)
      yield* assertStored(store, log)
      yield* assertConsistent(log)
    }))

  const badSeeds: ReadonlyArray<readonly [string, ReadonlyArray<SessionEvent.SessionEvent>]> = [
    ["a seq gap", [...seed.slice(0, 3), ...seed.slice(4)]],
    ["seq not from 0", stamp(seedInputs, { start: 1 })],
    ["an open turn", seed.slice(0, 5)],
    ["a nested turn", stamp([ev.turnStart(1), ev.turnStart(2), ev.turnEnd(2)])],
    [
      "an unanswered tool call",
      stamp([ev.turnStart(1), ev.stepStart(1, 1), ev.toolCall(1, 1, "c1", "ls"), ev.stepEnd(1, 1), ev.turnEnd(1)])
    ],
    [
      "an event that is not JSON-lossless",
      stamp([
        ev.turnStart(1),
        ev.stepStart(1, 1),
        ev.chunk(1, 1, { n: Number.POSITIVE_INFINITY }),
        ev.stepEnd(1, 1),
        ev.turnEnd(1)
      ])
    ]
  ]
  for (const [name, bad] of badSeeds) {
    it.effect(`a seed with ${name} is refused as invalid-seed and nothing is stored`, () =>
      Effect.gen(function*() {
        const store = yield* SessionStore.makeMemory
        const error = yield* Effect.flip(
          SessionLog.make({ id: sid, seed: bad }).pipe(Effect.provideService(SessionStore.SessionStore, store))
        )
        assert.strictEqual(error.reason, "invalid-seed")
        assert.deepStrictEqual(yield* store.list, [])
      }))
  }

  it.effect("every good log of the catalogue is a valid seed", () =>
    Effect.gen(function*() {
      for (const { inputs } of goodLogs) {
        const log = yield* SessionLog.memory({ seed: stamp(inputs) })
        assert.strictEqual((yield* log.events).length, inputs.length)
        yield* assertConsistent(log)
      }
    }))
})

describe("SessionLog over the plain memory store (its synchronous commit, ADR 0037)", () => {
  it.effect("commits every append in order, and a refused commit changes nothing in memory", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* appendAll(log, promptTurn(1, "Hi", "Hello"))
      yield* assertStored(store, log)
      yield* assertConsistent(log)
      // The store loses the session under the log: the next commit is refused, as the effectful path refuses it.
      yield* store.remove(sid)
      const before = yield* snapshot(log)
      const error = yield* Effect.flip(log.append(ev.user("after removal")))
      assert.strictEqual(error.reason, "store")
      assert.include(error.message, "NotFound")
      assert.deepStrictEqual(yield* snapshot(log), before)
    }))

  it.effect("a store that spreads the memory store and replaces its append sees every commit", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const seen: Array<number> = []
      const store: SessionStore.Service = {
        ...memory,
        append: (id, commit, options) =>
          Effect.zipRight(
            Effect.sync(() => seen.push(commit.events.length)),
            memory.append(id, commit, options)
          )
      }
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* log.append(ev.user("a"))
      yield* log.appendAll([ev.turnStart(1), ev.turnEnd(1)])
      assert.deepStrictEqual(seen, [1, 2])
      yield* assertStored(memory, log)
    }))

  it.effect("a store's declared inline append is what the log commits with, while it twins the store's append", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const inline = memory.inlineAppend!
      const seen: Array<number> = []
      const store: SessionStore.Service = {
        ...memory,
        inlineAppend: {
          twin: inline.twin,
          run: (id, commit, options) => {
            seen.push(commit.events.length)
            return inline.run(id, commit, options)
          }
        }
      }
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* log.append(ev.user("a"))
      yield* log.transaction((tx) => tx.appendAll([ev.turnStart(1), ev.turnEnd(1)]))
      assert.deepStrictEqual(seen, [1, 2])
      yield* assertStored(memory, log)
    }))
})

describe("SessionLog.make, open, memory", () => {
  it.effect("make fails with store when the id already exists", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const provide = Effect.provideService(SessionStore.SessionStore, store)
      yield* SessionLog.make({ id: sid }).pipe(provide)
      const error = yield* Effect.flip(SessionLog.make({ id: sid }).pipe(provide))
      assert.strictEqual(error.reason, "store")
      assert.include(error.message, "AlreadyExists")
    }))

  it.effect("without an id, make mints a UUID", () =>
    Effect.gen(function*() {
      const log = yield* SessionLog.memory()
      assert.match(log.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    }))

  it.effect("open reloads a stored session and continues it", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const provide = Effect.provideService(SessionStore.SessionStore, store)
      const first = yield* SessionLog.make({ id: sid }).pipe(provide)
      yield* appendAll(first, [...promptTurn(1, "Hi", "Hello"), ev.user("idle context")])
      const reopened = yield* SessionLog.open(sid).pipe(provide)
      assert.strictEqual(reopened.id, sid)
      assert.deepStrictEqual(yield* reopened.events, yield* first.events)
      assert.deepStrictEqual(yield* reopened.state, yield* first.state)
      assert.deepStrictEqual(History.messages(yield* reopened.history), History.messages(yield* first.history))
      const next = yield* reopened.append(ev.turnStart(2))
      assert.strictEqual(next.seq, 9)
      yield* assertStored(store, reopened)
      yield* assertConsistent(reopened)
    }))

  it.effect("open of an unknown id fails with store", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(SessionLog.open(sid).pipe(Effect.provide(SessionStore.layerMemory)))
      assert.strictEqual(error.reason, "store")
      assert.include(error.message, "NotFound")
    }))

  // What open does with damaged or torn stored records (R106) is tested in Repair.test.ts.

  it.effect("layerMemory provides a fresh memory session", () =>
    Effect.gen(function*() {
      const log = yield* SessionLog.SessionLog
      yield* appendAll(log, promptTurn(1, "Hi", "Hello"))
      assert.strictEqual((yield* log.events).length, 8)
    }).pipe(Effect.provide(SessionLog.layerMemory({ id: sid }))))
})
