import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AgentEvent from "../src/AgentEvent.js"
import * as Ids from "../src/Ids.js"
import type { AgentMessage } from "../src/Message.js"
import {
  agentMessage,
  decodeError,
  fullFailure,
  goalContinuation,
  otherMessageId,
  roundTrip,
  sessionEvents
} from "./fixtures.js"

const steering: AgentMessage = {
  content: [{ type: "text", text: "also run the tests" }],
  id: otherMessageId,
  source: goalContinuation
}

/** Every live event type, each variant the contract names. */
const agentEvents: ReadonlyArray<readonly [string, AgentEvent.AgentEvent]> = [
  ["agent/status idle", { type: "agent/status", status: "idle" }],
  ["agent/status running", { type: "agent/status", status: "running" }],
  ["agent/inbox/enqueue queued", { type: "agent/inbox/enqueue", message: agentMessage, placement: "queued" }],
  ["agent/inbox/enqueue steering", { type: "agent/inbox/enqueue", message: steering, placement: "steering" }],
  ["agent/inbox/dequeue", { type: "agent/inbox/dequeue", message: agentMessage }],
  ["agent/inbox/discard", { type: "agent/inbox/discard", messages: [agentMessage, steering] }],
  ["agent/approval/requested", {
    type: "agent/approval/requested",
    approval: {
      callId: Ids.ToolCallId.make("call-1"),
      turn: 1,
      step: 1,
      name: "write",
      arguments: "{}",
      requestedAt: 5,
      deadline: 60_005,
      live: true
    }
  }],
  ["agent/approval/answered", {
    type: "agent/approval/answered",
    callId: Ids.ToolCallId.make("call-1"),
    decision: "deny",
    by: "timeout"
  }],
  ["agent/cancel-requested user", { type: "agent/cancel-requested", cause: "user" }],
  ["agent/cancel-requested parent", { type: "agent/cancel-requested", cause: "parent" }],
  ["agent/settled completed", { type: "agent/settled", turn: 1, reason: { kind: "completed" } }],
  ["agent/settled aborted", { type: "agent/settled", turn: 2, reason: { kind: "aborted" } }],
  ["agent/settled error with a failure", {
    type: "agent/settled",
    turn: 3,
    reason: { kind: "error", message: fullFailure.message, failure: fullFailure }
  }],
  ["agent/settled error with a code", {
    type: "agent/settled",
    turn: 3,
    reason: { kind: "error", message: "x", code: "C" }
  }],
  ["agent/error with a code", {
    type: "agent/error",
    turn: 1,
    step: 2,
    error: { message: "step/end append failed", code: "APPEND_FAILED" }
  }],
  ["agent/error without a code", { type: "agent/error", turn: 0, step: 0, error: { message: "admission failed" } }],
  ["agent/disposed", { type: "agent/disposed" }],
  ["agent/inbox/edit", { type: "agent/inbox/edit", message: agentMessage }],
  ["agent/inbox/move", {
    type: "agent/inbox/move",
    message: agentMessage,
    position: 0
  }],
  ["agent/inbox/place", {
    type: "agent/inbox/place",
    message: steering,
    placement: "steering"
  }],
  ...sessionEvents.map(([name, event]) => [`session/event wrapping ${name}`, { type: "session/event", event }] as const)
]

/** The compiler insists on every live name here. */
const liveNames: Record<AgentEvent.AgentEvent["type"], true> = {
  "agent/status": true,
  "agent/inbox/enqueue": true,
  "agent/inbox/dequeue": true,
  "agent/inbox/discard": true,
  "agent/inbox/edit": true,
  "agent/inbox/move": true,
  "agent/inbox/place": true,
  "agent/approval/requested": true,
  "agent/approval/answered": true,
  "agent/cancel-requested": true,
  "agent/settled": true,
  "agent/error": true,
  "agent/disposed": true,
  "session/event": true
}

describe("AgentEvent round trips", () => {
  it("the samples cover every live event name", () => {
    assert.deepStrictEqual(
      [...new Set(agentEvents.map(([, event]) => event.type))].sort(),
      Object.keys(liveNames).sort()
    )
  })

  for (const [name, event] of agentEvents) {
    it.effect(name, () => roundTrip(AgentEvent.AgentEvent, event))
  }

  it.effect("the cause vocabularies", () =>
    Effect.gen(function*() {
      for (const cause of AgentEvent.CancelCause.literals) yield* roundTrip(AgentEvent.CancelCause, cause)
      for (const reason of AgentEvent.InterruptReason.literals) yield* roundTrip(AgentEvent.InterruptReason, reason)
      for (const status of AgentEvent.AgentStatus.literals) yield* roundTrip(AgentEvent.AgentStatus, status)
    }))
})

describe("AgentEvent refuses", () => {
  it.effect("`disposed` as a caller's cancel cause (it is internal to teardown)", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(AgentEvent.AgentEvent, { type: "agent/cancel-requested", cause: "disposed" })
      assert.include(message, "[\"cause\"]")
      assert.include(message, "actual \"disposed\"")
    }))

  it.effect("a discard of no messages", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(AgentEvent.AgentEvent, { type: "agent/inbox/discard", messages: [] })
      assert.include(message, "[\"messages\"]")
      assert.include(message, "is missing")
    }))

  it.effect("an enqueue whose message has no id, or an unknown placement", () =>
    Effect.gen(function*() {
      const noId = yield* decodeError(AgentEvent.AgentEvent, {
        type: "agent/inbox/enqueue",
        message: { content: agentMessage.content, source: agentMessage.source },
        placement: "queued"
      })
      assert.include(noId, "[\"message\"]")
      assert.include(noId, "[\"id\"]")
      const placement = yield* decodeError(AgentEvent.AgentEvent, {
        type: "agent/inbox/enqueue",
        message: agentMessage,
        placement: "front"
      })
      assert.include(placement, "[\"placement\"]")
    }))

  it.effect("a status that is not idle or running, and an unknown live name", () =>
    Effect.gen(function*() {
      assert.include(
        yield* decodeError(AgentEvent.AgentEvent, { type: "agent/status", status: "disposed" }),
        "actual \"disposed\""
      )
      const unknown = yield* decodeError(AgentEvent.AgentEvent, { type: "agent/queued" })
      assert.include(unknown, "[\"type\"]")
      assert.include(unknown, "actual \"agent/queued\"")
    }))

  it.effect("a session/event whose event is not a valid durable event", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(AgentEvent.AgentEvent, {
        type: "session/event",
        event: { seq: 0, time: 0, type: "turn/start", data: { turn: 0, trigger: { kind: "retry" } } }
      })
      assert.include(message, "[\"event\"]")
      assert.include(message, "expected a positive integer, got 0")
    }))
})
