import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import { abortedTurn, block, ev, goodLogs, stamp, steeringTurn, toolTurn } from "@harness/testkit/Events"
import { Effect } from "effect"
import * as Closers from "../src/Closers.js"
import * as LogCheck from "../src/LogCheck.js"
import { foldState } from "./fixtures.js"

type Input = SessionEvent.SessionEventInput

/** The state after `inputs`, the closers for it, and the whole log with the closers appended. */
const closeAfter = (inputs: ReadonlyArray<Input>, options?: Closers.CloseOptions) => {
  const events = stamp(inputs)
  const state = foldState(events)
  const closers = options === undefined ? Closers.repair(state) : Closers.close(state, options)
  const closed = [...events, ...stamp(closers, { start: events.length })]
  return { state, closers, closed }
}

/** The agent's cancel answers: recorded calls ABORTED, never-recorded ones a synthetic pair. */
const agentAnswer = (call: Closers.OwedCallAt): Closers.Answer =>
  call.callSeq === undefined
    ? Closers.errorAnswer("ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch", {
      name: "AbortError",
      recordCall: true
    })
    : Closers.errorAnswer("ABORTED", "tool call aborted", { name: "AbortError" })

// Three calls in the step's message: "a" answered, "b" recorded (running), "c" never recorded.
const midTools: ReadonlyArray<Input> = [
  ev.user("Go", MessageSource.user, "p1"),
  ev.turnStart(1),
  ev.stepStart(1, 1),
  ev.assistant(1, 1, [
    block.toolCall("a", "ls", "{}"),
    block.toolCall("b", "read", "{}"),
    block.toolCall("c", "sh", "")
  ]),
  ev.toolCall(1, 1, "a", "ls", "{}"),
  ev.toolResult(1, 1, "a", "ls", "x"),
  ev.toolCall(1, 1, "b", "read", "{}")
]

describe("Closers", () => {
  it.effect("R106: no open turn, nothing to close", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(Closers.repair(LogCheck.initial), [])
      assert.deepStrictEqual(
        closeAfter(toolTurn(1, "q", [{ id: "c", name: "n", args: "{}", result: "r" }], "a")).closers,
        []
      )
      // an out-of-turn user/message after the last turn/end opens nothing
      assert.deepStrictEqual(closeAfter([...abortedTurn(1), ev.user("later")]).closers, [])
    }))

  it.effect("R106: a turn open outside a step gets only turn/end { interrupted }", () =>
    Effect.sync(() => {
      const { closed, closers } = closeAfter([ev.user("Hi"), ev.turnStart(1), ev.header()])
      assert.deepStrictEqual(closers, [ev.turnEnd(1, { kind: "interrupted" })])
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
    }))

  it.effect("R106: an open step without calls gets step/end, then turn/end", () =>
    Effect.sync(() => {
      const { closed, closers } = closeAfter([
        ev.turnStart(1, { kind: "retry" }),
        ev.stepStart(1, 1),
        ev.chunk(1, 1, { type: "text-delta", delta: "par" })
      ])
      assert.deepStrictEqual(closers, [ev.stepEnd(1, 1), ev.turnEnd(1, { kind: "interrupted" })])
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
    }))

  it.effect("R106: a recorded call without a result is TOOL_OUTCOME_UNKNOWN (citing its call), an unrecorded one TOOL_NOT_STARTED", () =>
    Effect.sync(() => {
      const { closed, closers, state } = closeAfter(midTools)
      assert.deepStrictEqual(closers.map((c) => c.type), ["tool/result", "tool/result", "step/end", "turn/end"])
      const [b, c] = closers as ReadonlyArray<SessionEvent.SessionEventInputOf<"tool/result">>
      assert.strictEqual(b!.data.callId, "b")
      assert.deepStrictEqual(b!.data.error, { name: "ToolError", code: "TOOL_OUTCOME_UNKNOWN" })
      assert.deepStrictEqual(b!.sourceEventSeqs, [6])
      assert.include(b!.data.content[0]!.text, "outcome is unknown")
      assert.strictEqual(c!.data.callId, "c")
      assert.deepStrictEqual(c!.data.error, { name: "ToolError", code: "TOOL_NOT_STARTED" })
      assert.strictEqual(c!.sourceEventSeqs, undefined)
      assert.include(c!.data.content[0]!.text, "may be retried")
      assert.isTrue(b!.data.isError && c!.data.isError)
      assert.deepStrictEqual(state.owed.map((o) => o.callId), ["b", "c"])
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
      assert.deepStrictEqual(foldState(closed).openTurn, undefined)
    }))

  it.effect("R172: a recorded call whose tool/call says replay: \"safe\" is TOOL_REPLAY_PENDING (a plain one stays TOOL_OUTCOME_UNKNOWN)", () =>
    Effect.sync(() => {
      const safe = midTools.map((input) =>
        input.type === "tool/call" && input.data.callId === "b"
          ? { ...input, data: { ...input.data, replay: "safe" as const } }
          : input
      )
      const { closed, closers, state } = closeAfter(safe)
      const [b, c] = closers as ReadonlyArray<SessionEvent.SessionEventInputOf<"tool/result">>
      assert.deepStrictEqual(state.owed.map((o) => [o.callId, o.replay]), [["b", "safe"], ["c", undefined]])
      assert.deepStrictEqual(b!.data.error, { name: "ToolError", code: "TOOL_REPLAY_PENDING" })
      assert.strictEqual(b!.data.content[0]!.text, Closers.replayPendingText)
      assert.deepStrictEqual(b!.sourceEventSeqs, [6])
      assert.deepStrictEqual(c!.data.error, { name: "ToolError", code: "TOOL_NOT_STARTED" })
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
    }))

  it.effect("R72: the agent's answers — ABORTED for a started call, a synthetic pair for an unstarted one, staged context before step/end", () =>
    Effect.sync(() => {
      const context = ev.user("Context: staged", MessageSource.plugin("p"))
      const { closed, closers } = closeAfter(midTools, {
        reason: { kind: "aborted" },
        answer: agentAnswer,
        afterResults: [context]
      })
      assert.deepStrictEqual(closers.map((c) => c.type), [
        "tool/result",
        "tool/call",
        "tool/result",
        "user/message",
        "step/end",
        "turn/end"
      ])
      const stamped = closed.slice(midTools.length)
      const syntheticCall = stamped[1]!
      assert.strictEqual(syntheticCall.type, "tool/call")
      assert.strictEqual(syntheticCall.type === "tool/call" ? syntheticCall.data.callId : undefined, "c")
      // the synthetic result cites the synthetic call's seq, computed from state.nextSeq
      assert.deepStrictEqual(stamped[2]!.sourceEventSeqs, [syntheticCall.seq])
      assert.deepStrictEqual(stamped[0]!.sourceEventSeqs, [6])
      assert.deepStrictEqual(stamped.at(-1)!.data, { turn: 1, reason: { kind: "aborted" } })
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
    }))

  it.effect("R106: repair answers closed calls in model order and leaves answered ones alone", () =>
    Effect.sync(() => {
      const inputs: ReadonlyArray<Input> = [
        ev.turnStart(1),
        ev.stepStart(1, 1),
        ev.toolCall(1, 1, "late", "x"),
        ev.assistant(1, 1, [block.toolCall("m1", "y", "{}"), block.toolCall("m2", "z", "{}")]),
        ev.toolCall(1, 1, "m2", "z"),
        ev.toolResult(1, 1, "m2", "z", "done")
      ]
      const { closed, closers } = closeAfter(inputs)
      const ids = closers.flatMap((c) => c.type === "tool/result" ? [c.data.callId] : [])
      // message calls first (content order), then calls known only from tool/call events
      assert.deepStrictEqual(ids, ["m1", "late"])
      assert.deepStrictEqual(LogCheck.checkLog(closed), [])
    }))

  it.effect("R106/R72: at every cut of every good log, both closers leave a log checkLog accepts", () =>
    Effect.sync(() => {
      let cuts = 0
      const logs = [...goodLogs, { name: "steering twice", inputs: [...steeringTurn(1), ...steeringTurn(2)] }]
      for (const { inputs, name } of logs) {
        for (let cut = 0; cut <= inputs.length; cut++) {
          const prefix = inputs.slice(0, cut)
          for (const options of [undefined, { reason: { kind: "aborted" as const }, answer: agentAnswer }]) {
            const { closed, closers, state } = closeAfter(prefix, options)
            assert.deepStrictEqual(LogCheck.checkLog(closed), [], `${name}, cut at ${cut}`)
            assert.strictEqual(closers.length === 0, state.openTurn === undefined, `${name}, cut at ${cut}`)
            cuts++
          }
        }
      }
      assert.isAbove(cuts, 100)
    }))
})
