import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import {
  abortedTurn,
  block,
  callId,
  ev,
  goodLogs,
  maxTokensTurn,
  promptTurn,
  rawArgumentsTurn,
  stamp,
  steeringTurn,
  toolTurn
} from "@harness/testkit/Events"
import { Effect, FastCheck } from "effect"
import * as LogCheck from "../src/LogCheck.js"
import * as SessionLog from "../src/SessionLog.js"
import { appendAll, assertConsistent, foldState } from "./fixtures.js"

type Input = SessionEvent.SessionEventInput

/** Turn 1 with one step holding `inside`, stamped. */
const inOneStep = (...inside: ReadonlyArray<Input>) =>
  stamp([ev.turnStart(1), ev.stepStart(1, 1), ...inside, ev.stepEnd(1, 1), ev.turnEnd(1)])

const rulesOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  LogCheck.checkLog(events).map((v) => [v.seq, v.rule] as const)

describe("LogCheck.checkLog", () => {
  it.effect("passes on every good log of the catalogue", () =>
    Effect.sync(() => {
      for (const { inputs, name } of goodLogs) assert.deepStrictEqual(LogCheck.checkLog(stamp(inputs)), [], name)
    }))

  const badLogs: ReadonlyArray<{
    readonly rule: LogCheck.Rule
    readonly events: ReadonlyArray<SessionEvent.SessionEvent>
    readonly expected: ReadonlyArray<readonly [number, LogCheck.Rule]>
  }> = [
    {
      rule: "seq-gap",
      // seq 4 is skipped (numbering goes on from 5)
      events: stamp(promptTurn(1, "a", "b")).map((e, i) => (i >= 4 ? { ...e, seq: e.seq + 1 } : e)),
      expected: [[5, "seq-gap"]]
    },
    { rule: "seq-gap", events: stamp([ev.user("a")], { start: 1 }), expected: [[1, "seq-gap"]] },
    { rule: "outside-turn", events: stamp([ev.header()]), expected: [[0, "outside-turn"]] },
    {
      rule: "turn-number",
      events: stamp([ev.turnStart(2), ev.turnEnd(2)]),
      expected: [[0, "turn-number"]]
    },
    {
      rule: "nested-turn",
      events: stamp([ev.turnStart(1), ev.turnStart(2), ev.turnEnd(2)]),
      expected: [[1, "nested-turn"]]
    },
    {
      rule: "turn-end-mismatch",
      events: stamp([ev.turnStart(1), ev.turnEnd(2), ev.turnEnd(1)]),
      expected: [[1, "turn-end-mismatch"]]
    },
    {
      rule: "turn-end-step-open",
      events: stamp([ev.turnStart(1), ev.stepStart(1, 1), ev.turnEnd(1)]),
      expected: [[2, "turn-end-step-open"]]
    },
    {
      rule: "step-number",
      events: stamp([ev.turnStart(1), ev.stepStart(1, 2), ev.stepEnd(1, 2), ev.turnEnd(1)]),
      expected: [[1, "step-number"]]
    },
    {
      rule: "nested-step",
      events: stamp([ev.turnStart(1), ev.stepStart(1, 1), ev.stepStart(1, 2), ev.stepEnd(1, 2), ev.turnEnd(1)]),
      expected: [[2, "nested-step"]]
    },
    {
      rule: "step-end-mismatch",
      events: stamp([ev.turnStart(1), ev.stepStart(1, 1), ev.stepEnd(1, 2), ev.stepEnd(1, 1), ev.turnEnd(1)]),
      expected: [[2, "step-end-mismatch"]]
    },
    {
      rule: "wrong-turn",
      // an event of a closed turn
      events: stamp([...promptTurn(1, "a", "b"), ev.turnStart(2), ev.steering(1, "late"), ev.turnEnd(2)]),
      expected: [[9, "wrong-turn"]]
    },
    {
      rule: "outside-step",
      events: stamp([ev.turnStart(1), ev.assistant(1, 1, [block.text("x")]), ev.turnEnd(1)]),
      expected: [[1, "outside-step"]]
    },
    {
      rule: "unknown-tool-call",
      events: inOneStep(ev.toolResult(1, 1, "c1", "ls", "x")),
      expected: [[2, "unknown-tool-call"]]
    },
    {
      rule: "duplicate-tool-call",
      events: inOneStep(
        ev.toolCall(1, 1, "c1", "ls"),
        ev.toolCall(1, 1, "c1", "ls"),
        ev.toolResult(1, 1, "c1", "ls", "x")
      ),
      expected: [[3, "duplicate-tool-call"]]
    },
    {
      rule: "duplicate-tool-result",
      events: inOneStep(
        ev.toolCall(1, 1, "c1", "ls"),
        ev.toolResult(1, 1, "c1", "ls", "x"),
        ev.toolResult(1, 1, "c1", "ls", "x")
      ),
      expected: [[4, "duplicate-tool-result"]]
    },
    {
      rule: "unanswered-tool-call",
      // one violation per owed call: a logged call and a call only in the assistant message
      events: inOneStep(
        ev.assistant(1, 1, [block.toolCall("c1", "ls", "{}"), block.toolCall("c2", "cat", "{}")]),
        ev.toolCall(1, 1, "c1", "ls")
      ),
      expected: [[4, "unanswered-tool-call"], [4, "unanswered-tool-call"]]
    },
    {
      rule: "unclosed-turn",
      events: stamp([ev.user("a"), ev.turnStart(1), ev.stepStart(1, 1), ev.stepEnd(1, 1)]),
      expected: [[3, "unclosed-turn"]]
    }
  ]

  for (const { events, expected, rule } of badLogs) {
    it.effect(`flags ${rule}`, () =>
      Effect.sync(() => {
        assert.deepStrictEqual(rulesOf(events), expected)
        for (const v of LogCheck.checkLog(events)) assert.isAbove(v.message.length, 10)
      }))
  }

  it.effect("a violation names its list and its position there, and the event's seq (they differ after a gap)", () =>
    Effect.sync(() => {
      // seq 1 is skipped: the header at position 1 has seq 2, the turn left open ends at position 2 (seq 3).
      const events = stamp([ev.user("a"), ev.header(), ev.turnStart(1)]).map((
        e,
        i
      ) => (i >= 1 ? { ...e, seq: e.seq + 1 } : e))
      assert.deepStrictEqual(
        LogCheck.checkLog(events).map(({ in: list, index, rule, seq }) => ({ list, index, rule, seq })),
        [
          { list: "log", index: 1, rule: "seq-gap", seq: 2 },
          { list: "log", index: 1, rule: "outside-turn", seq: 2 },
          { list: "log", index: 2, rule: "unclosed-turn", seq: 3 }
        ]
      )
    }))

  it.effect("every rule has a bad log", () =>
    Effect.sync(() => {
      assert.strictEqual(new Set(badLogs.map((b) => b.rule)).size, 16)
    }))

  it.effect("continues after a violation and reports every one, in seq order", () =>
    Effect.sync(() => {
      const events = stamp([
        ev.header(), //                      0 outside-turn
        ev.turnStart(2), //                  1 turn-number (turn 2 opens anyway)
        ev.stepStart(2, 1),
        ev.toolCall(2, 1, "c1", "ls"),
        ev.toolResult(2, 1, "c9", "ls", "x"), // 4 unknown-tool-call
        ev.stepEnd(2, 1), //                 5 unanswered-tool-call (c1)
        ev.stepStart(2, 3), //               6 step-number (step 3 opens anyway)
        ev.turnEnd(2), //                    7 turn-end-step-open (turn closes anyway)
        ev.steering(2, "late"), //           8 outside-turn
        ev.turnStart(3),
        ev.assistant(3, 1, []) //            10 outside-step; 10 unclosed-turn
      ])
      assert.deepStrictEqual(rulesOf(events), [
        [0, "outside-turn"],
        [1, "turn-number"],
        [4, "unknown-tool-call"],
        [5, "unanswered-tool-call"],
        [6, "step-number"],
        [7, "turn-end-step-open"],
        [8, "outside-turn"],
        [10, "outside-step"],
        [10, "unclosed-turn"]
      ])
    }))

  it.effect("the TOOL_NOT_STARTED result of crash repair needs no tool/call", () =>
    Effect.sync(() => {
      const events = stamp([
        ev.turnStart(1),
        ev.stepStart(1, 1),
        ev.assistant(1, 1, [block.toolCall("c1", "ls", "{}")]),
        ev.toolResult(1, 1, "c1", "ls", "The tool was not started; it may be retried.", { code: "TOOL_NOT_STARTED" }),
        ev.stepEnd(1, 1),
        ev.turnEnd(1, { kind: "interrupted" })
      ])
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
    }))
})

describe("LogCheck.step", () => {
  it.effect("refuses an event whose seq is not the next one", () =>
    Effect.sync(() => {
      const outcome = LogCheck.step(LogCheck.initial, stamp([ev.user("a")], { start: 1 })[0]!)
      assert("violation" in outcome)
      assert.strictEqual(outcome.violation.rule, "seq-gap")
    }))

  it.effect("agrees with checkLog: the first append-time violation of a log is the one step refuses", () =>
    Effect.sync(() => {
      const events = stamp([...promptTurn(1, "a", "b"), ev.turnStart(3)])
      const state = foldState(events.slice(0, -1))
      const outcome = LogCheck.step(state, events.at(-1)!)
      assert("violation" in outcome)
      assert.deepStrictEqual(outcome.violation, LogCheck.checkLog(events)[0])
    }))

  it.effect("tracks turns, steps and the next turn number", () =>
    Effect.sync(() => {
      const events = stamp([...promptTurn(1, "a", "b"), ev.user("c"), ev.turnStart(2), ev.stepStart(2, 1)])
      assert.deepStrictEqual(foldState(events), {
        nextSeq: events.length,
        lastTurn: 2,
        openTurn: 2,
        lastStep: 1,
        openStep: 1,
        header: { config: { model: "test-model" }, system: "You are a test." },
        compaction: undefined,
        dropped: undefined,
        calls: [],
        owed: []
      })
    }))
})

describe("LogState.owed", () => {
  const owedAfter = (inputs: ReadonlyArray<Input>) => foldState(stamp(inputs)).owed
  const owed = (id: string, name: string, args: string, seq: number | undefined): LogCheck.OwedCall => ({
    callId: callId(id),
    name,
    arguments: args,
    callSeq: seq
  })
  const step = [ev.turnStart(1), ev.stepStart(1, 1)] // seqs 0, 1
  const message = ev.assistant(1, 1, [
    block.text("Let me look."),
    block.toolCall("a", "ls", "{\"p\":1}"),
    block.toolCall("b", "cat", ""),
    block.toolCall("c", "grep", "nope")
  ]) // seq 2

  it.effect("is empty when no step is open", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(owedAfter([]), [])
      assert.deepStrictEqual(owedAfter([ev.turnStart(1)]), [])
      assert.deepStrictEqual(owedAfter(step), [])
    }))

  it.effect("lists the assistant message's calls in model order, not yet called", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(owedAfter([...step, message]), [
        owed("a", "ls", "{\"p\":1}", undefined),
        owed("b", "cat", "", undefined),
        owed("c", "grep", "nope", undefined)
      ])
    }))

  it.effect("records the tool/call seq, keeps model order, and appends calls that are not in the message", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        owedAfter([...step, message, ev.toolCall(1, 1, "b", "cat", ""), ev.toolCall(1, 1, "x", "extra", "{}")]),
        [
          owed("a", "ls", "{\"p\":1}", undefined),
          owed("b", "cat", "", 3),
          owed("c", "grep", "nope", undefined),
          owed("x", "extra", "{}", 4)
        ]
      )
    }))

  it.effect("drops answered calls, including a TOOL_NOT_STARTED answer of a call never recorded", () =>
    Effect.sync(() => {
      const inputs = [
        ...step,
        message,
        ev.toolCall(1, 1, "a", "ls", "{\"p\":1}"),
        ev.toolCall(1, 1, "b", "cat", ""),
        ev.toolResult(1, 1, "b", "cat", "ok"),
        ev.toolResult(1, 1, "c", "grep", "not started", { code: "TOOL_NOT_STARTED" })
      ]
      assert.deepStrictEqual(owedAfter(inputs), [owed("a", "ls", "{\"p\":1}", 3)])
      assert.deepStrictEqual(owedAfter([...inputs, ev.toolResult(1, 1, "a", "ls", "x")]), [])
      assert.deepStrictEqual(
        foldState(stamp(inputs)).calls.map((c) => [c.callId, c.callSeq, c.resultSeq, c.inMessage]),
        [["a", 3, undefined, true], ["b", 4, 5, true], ["c", undefined, 6, true]]
      )
    }))

  it.effect("a tool/call logged before the message moves to its place in the message", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(owedAfter([...step, ev.toolCall(1, 1, "c", "grep", "nope"), message]), [
        owed("a", "ls", "{\"p\":1}", undefined),
        owed("b", "cat", "", undefined),
        owed("c", "grep", "nope", 2)
      ])
    }))

  it.effect("unites the calls of several assistant messages of one step, in order", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        owedAfter([
          ...step,
          ev.assistant(1, 1, [block.toolCall("a", "ls", "{}")]),
          ev.assistant(1, 1, [block.toolCall("b", "ls", "{}"), block.toolCall("a", "ls", "{}")])
        ]),
        [owed("a", "ls", "{}", undefined), owed("b", "ls", "{}", undefined)]
      )
    }))

  it.effect("clears at step/end and at the next step", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(owedAfter([...step, message, ev.stepEnd(1, 1)]), [])
      assert.deepStrictEqual(owedAfter([...step, message, ev.stepEnd(1, 1), ev.stepStart(1, 2)]), [])
    }))

  it.effect("is what a live log reports", () =>
    Effect.gen(function*() {
      const log = yield* SessionLog.memory()
      yield* appendAll(log, [...step, message, ev.toolCall(1, 1, "a", "ls", "{\"p\":1}")])
      assert.deepStrictEqual((yield* log.state).owed, [
        owed("a", "ls", "{\"p\":1}", 3),
        owed("b", "cat", "", undefined),
        owed("c", "grep", "nope", undefined)
      ])
    }))
})

describe("invariants over random sessions", () => {
  // A session is a random sequence of whole turns and idle injections; the invariants: the log accepts every
  // event, checkLog finds nothing, seq is gap-free, turns are numbered 1, 2, …, the live state and history equal
  // the whole-log folds, and a seeded copy of the log continues from the same state.
  const kinds = ["prompt", "tool", "aborted", "max-tokens", "steering", "raw", "inject"] as const
  const build = (script: ReadonlyArray<(typeof kinds)[number]>): ReadonlyArray<Input> => {
    const out: Array<Input> = []
    let turn = 0
    for (const kind of script) {
      if (kind === "inject") {
        out.push(ev.user("idle context", MessageSource.plugin("p")))
        continue
      }
      turn++
      switch (kind) {
        case "prompt":
          out.push(...promptTurn(turn, `p${turn}`, `a${turn}`))
          break
        case "tool":
          out.push(...toolTurn(turn, `p${turn}`, [
            { id: `x${turn}`, name: "t", args: "{}", result: "r" },
            { id: `y${turn}`, name: "t", args: "{\"n\":1}", result: "e", isError: true }
          ], "done"))
          break
        case "aborted":
          out.push(...abortedTurn(turn))
          break
        case "max-tokens":
          out.push(...maxTokensTurn(turn))
          break
        case "steering":
          out.push(...steeringTurn(turn))
          break
        case "raw":
          out.push(...rawArgumentsTurn(turn))
          break
      }
    }
    return out
  }

  it.effect.prop(
    "every random session keeps the invariants",
    [FastCheck.array(FastCheck.constantFrom(...kinds), { maxLength: 12 })],
    ([script]) =>
      Effect.gen(function*() {
        const inputs = build(script)
        const log = yield* SessionLog.memory()
        const events = yield* appendAll(log, inputs)
        assert.deepStrictEqual(events.map((e) => e.seq), inputs.map((_, i) => i))
        const turns = events.flatMap((e) => (e.type === "turn/start" ? [e.data.turn] : []))
        assert.deepStrictEqual(turns, turns.map((_, i) => i + 1))
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        yield* assertConsistent(log)
        const seeded = yield* SessionLog.memory({ seed: events })
        assert.deepStrictEqual(yield* seeded.state, yield* log.state)
      }),
    { fastCheck: { numRuns: 40 } }
  )
})
