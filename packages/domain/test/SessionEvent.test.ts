import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as SessionEvent from "../src/SessionEvent.js"
import { decodeError, roundTrip, sessionEvents } from "./fixtures.js"

/** The compiler insists on every wire name here. */
const wireNames: Record<SessionEvent.SessionEventType, true> = {
  "turn/start": true,
  "turn/end": true,
  "step/start": true,
  "step/end": true,
  "user/message": true,
  "steering/message": true,
  "assistant/chunk": true,
  "assistant/message": true,
  "tool/call": true,
  "tool/result": true,
  "request/header": true,
  "compaction": true,
  "turn/rollback": true
}

const envelope = (type: string, data: unknown) => ({ seq: 0, time: 0, type, data })

describe("SessionEvent round trips", () => {
  it("the samples cover every durable wire name", () => {
    assert.deepStrictEqual(
      [...new Set(sessionEvents.map(([, event]) => event.type))].sort(),
      Object.keys(wireNames).sort()
    )
  })

  for (const [name, event] of sessionEvents) {
    it.effect(name, () => roundTrip(SessionEvent.SessionEvent, event))
  }

  it.effect("a whole log survives one JSON text (the JSONL line shape)", () =>
    Effect.gen(function*() {
      const log = sessionEvents.map(([, event]) => event)
      const Log = Schema.Array(SessionEvent.SessionEvent)
      const lines = (yield* Schema.encode(Log)(log)).map((event) => JSON.stringify(event))
      const back = yield* Schema.decodeUnknown(Log)(lines.map((line): unknown => JSON.parse(line)))
      assert.deepStrictEqual(back, log)
    }))
})

describe("SessionEvent refuses", () => {
  it.effect("an unknown wire name, listing the known ones (there is no durable `error` event, R99)", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(SessionEvent.SessionEvent, envelope("error", { message: "x" }))
      assert.include(message, "[\"type\"]")
      assert.include(message, "\"turn/start\"")
      assert.include(message, "actual \"error\"")
    }))

  it.effect("turn and step numbers that are not positive integers", () =>
    Effect.gen(function*() {
      const turn = yield* decodeError(SessionEvent.SessionEvent, envelope("step/start", { turn: 0, step: 1 }))
      assert.include(turn, "[\"data\"]")
      assert.include(turn, "[\"turn\"]")
      assert.include(turn, "expected a positive integer, got 0")
      const step = yield* decodeError(SessionEvent.SessionEvent, envelope("step/end", { turn: 1, step: 1.5 }))
      assert.include(step, "[\"step\"]")
      assert.include(step, "expected a positive integer, got 1.5")
    }))

  it.effect("a bad envelope: negative seq, fractional time, a bad cited seq", () =>
    Effect.gen(function*() {
      const data = { turn: 1, step: 1 }
      const seq = yield* decodeError(SessionEvent.SessionEvent, { seq: -1, time: 0, type: "step/start", data })
      assert.include(seq, "[\"seq\"]")
      assert.include(seq, "expected a non-negative integer, got -1")
      const time = yield* decodeError(SessionEvent.SessionEvent, { seq: 0, time: 1.5, type: "step/start", data })
      assert.include(time, "[\"time\"]")
      const cites = yield* decodeError(SessionEvent.SessionEvent, {
        ...envelope("step/start", data),
        sourceEventSeqs: [1, -0]
      })
      assert.include(cites, "[\"sourceEventSeqs\"]")
      assert.include(cites, "got -0")
    }))

  it.effect("a user/message with empty content or an empty messageId", () =>
    Effect.gen(function*() {
      const empty = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("user/message", { content: [], source: { kind: "user" } })
      )
      assert.include(empty, "[\"content\"]")
      const id = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("user/message", { messageId: "", content: [{ type: "text", text: "x" }], source: { kind: "user" } })
      )
      assert.include(id, "[\"messageId\"]")
      assert.include(id, "an id must be a non-empty string")
    }))

  it.effect("a steering/message without its messageId", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("steering/message", { turn: 1, content: [{ type: "text", text: "x" }], source: { kind: "user" } })
      )
      assert.include(message, "[\"messageId\"]")
      assert.include(message, "is missing")
    }))

  it.effect("non-JSON in a chunk, in replayState, in meta and in tool parameters", () =>
    Effect.gen(function*() {
      const chunk = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("assistant/chunk", { turn: 1, step: 1, chunk: { n: NaN } })
      )
      assert.include(chunk, "[\"chunk\"]")
      assert.include(chunk, "n is NaN, which JSON cannot represent losslessly")

      const replay = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("assistant/message", {
          turn: 1,
          step: 1,
          content: [],
          provenance: { model: "m", replayState: { f: 1n } }
        })
      )
      assert.include(replay, "[\"replayState\"]")
      assert.include(replay, "f is the bigint 1n")

      const meta = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("tool/result", {
          turn: 1,
          step: 1,
          callId: "c",
          name: "x",
          content: [],
          isError: false,
          meta: { at: new Date(0) }
        })
      )
      assert.include(meta, "[\"meta\"]")
      assert.include(meta, "at is an instance of Date")

      const params = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("request/header", {
          header: { config: { model: "m" }, tools: [{ name: "t", parameters: { default: undefined } }] },
          reason: "initial"
        })
      )
      assert.include(params, "[\"tools\"]")
      assert.include(params, "default is undefined")
    }))

  it.effect("an assistant message holding a tool result, and an unknown header reason", () =>
    Effect.gen(function*() {
      const block = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("assistant/message", {
          turn: 1,
          step: 1,
          content: [{ type: "tool-result", toolCallId: "c", content: [] }],
          provenance: { model: "m" }
        })
      )
      assert.include(block, "[\"content\"]")
      assert.include(block, "actual \"tool-result\"")
      const reason = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("request/header", { header: { config: { model: "m" } }, reason: "fallback" })
      )
      assert.include(reason, "[\"reason\"]")
      assert.include(reason, "actual \"fallback\"")
    }))

  it.effect("a tool call without its id", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(
        SessionEvent.SessionEvent,
        envelope("tool/call", { turn: 1, step: 1, callId: "", name: "x", arguments: "{}" })
      )
      assert.include(message, "[\"callId\"]")
      assert.include(message, "an id must be a non-empty string")
    }))
})
