/**
 * Known defects, each pinned by a test written before its fix: a tool call starts (is logged,
 * prepared, approved) only once the pool admits it; a tool's own error code survives; a refused `turn/end` is
 * reported once and settles with the turn's real reason; waking work stranded by a `keepInbox` cancel or a failed
 * turn runs next by itself; after disposal a batch of cancels is a no-op and `retry` fails as disposed.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { type SessionEvent } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit, Ref, Schema, Scope, TestClock } from "effect"
import {
  assertWellFormed,
  cancelAndSettle,
  compact,
  faultySession,
  idleLog,
  isDurable,
  layerWithFaults,
  live,
  logTrace,
  midStream,
  noop,
  ofType,
  prompt,
  refusedTurnEnd,
  setup,
  streamedStep,
  userTexts
} from "./fixtures.js"

/** The tool calls and results of a log, in log order. */
const toolTrace = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.flatMap((e) =>
    e.type === "tool/call" ? [`call:${e.data.callId}`] : e.type === "tool/result" ? [`result:${e.data.callId}`] : []
  )

/** The largest number of calls started (logged) and not yet answered at one point of the log. */
const maxStarted = (log: ReadonlyArray<SessionEvent.SessionEvent>) => {
  let open = 0
  let max = 0
  for (const e of log) {
    if (e.type === "tool/call") max = Math.max(max, ++open)
    if (e.type === "tool/result") open--
  }
  return max
}

const sleepTool = Tool.make("sleep", { parameters: { ms: Schema.Number }, success: Schema.String })
const sleeper = (parallel: boolean) =>
  AgentTool.make(sleepTool, { handler: ({ ms }) => Effect.as(Effect.sleep(ms), "slept"), parallel })

describe("defects (R26, R57, R66, R67, R69)", () => {
  it.scoped("R66: with a cap of 1 the log never shows two calls started at once; each call is logged when it starts", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m", tools: [sleeper(true)], maxParallelToolCalls: 1 })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(
          S.toolCall("sleep", { ms: 100 }, { id: "a" }),
          S.toolCall("sleep", { ms: 100 }, { id: "b" }),
          S.toolCall("sleep", { ms: 100 }, { id: "c" })
        ),
        S.textResponse("done")
      )
      const rec = yield* EventRecorder.make(agent)
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("tool/call"))
      // Call a runs; b and c wait for the pool and are not in the log yet.
      assert.deepStrictEqual(toolTrace(yield* agent.log), ["call:a"])
      yield* TestClock.adjust(100)
      yield* TestClock.adjust(100)
      yield* TestClock.adjust(100)
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(toolTrace(log), ["call:a", "result:a", "call:b", "result:b", "call:c", "result:c"])
      assert.strictEqual(maxStarted(log), 1)
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R66/R67: an exclusive call waiting for the pool to drain is neither logged nor sent for approval meanwhile", () =>
    Effect.gen(function*() {
      const asked = yield* Ref.make<ReadonlyArray<string>>([])
      const guarded = AgentTool.make(
        Tool.make("guarded", { parameters: {}, success: Schema.String }),
        { handler: () => Effect.succeed("ran"), parallel: false, approval: "required" }
      )
      const agent = yield* Agent.make({
        model: "m",
        tools: [sleeper(true), guarded],
        hooks: {
          toolApproval: ({ agent, callId }) =>
            Effect.gen(function*() {
              // What the log shows when the person is asked.
              const trace = toolTrace(yield* agent.log)
              yield* Ref.update(asked, (all) => [...all, `${callId}:${trace.join(",")}`])
              return { kind: "allow" } as const
            })
        }
      })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(S.toolCall("sleep", { ms: 100 }, { id: "x" }), S.toolCall("guarded", {}, { id: "g" })),
        S.textResponse("done")
      )
      const rec = yield* EventRecorder.make(agent)
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("tool/call"))
      assert.deepStrictEqual(toolTrace(yield* agent.log), ["call:x"])
      assert.deepStrictEqual(yield* Ref.get(asked), [])
      yield* TestClock.adjust(100)
      yield* agent.whenIdle
      // The approval was asked after x finished, with g's own call already logged (the call has started).
      assert.deepStrictEqual(yield* Ref.get(asked), ["g:call:x,result:x,call:g"])
      const log = yield* agent.log
      assert.deepStrictEqual(toolTrace(log), ["call:x", "result:x", "call:g", "result:g"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R72: a call cancelled while waiting for the pool is answered ABORTED_BEFORE_DISPATCH (a synthetic pair)", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m", tools: [sleeper(true)], maxParallelToolCalls: 1 })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(S.toolCall("sleep", { ms: 100 }, { id: "a" }), S.toolCall("sleep", { ms: 1 }, { id: "b" }))
      )
      const rec = yield* EventRecorder.make(agent)
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("tool/call"))
      yield* agent.cancel("user")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(toolTrace(log), ["call:a", "result:a", "call:b", "result:b"])
      assert.deepStrictEqual(
        ofType(log, "tool/result").map((e) => e.data.error?.code),
        ["ABORTED", "ABORTED_BEFORE_DISPATCH"]
      )
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R69: a tool failure carrying its own code keeps it; TOOL_FAILED stays the default", () =>
    Effect.gen(function*() {
      class Quota extends Schema.TaggedError<Quota>()("Quota", { message: Schema.String, code: Schema.String }) {}
      class Plain extends Schema.TaggedError<Plain>()("Plain", { message: Schema.String }) {}
      const failing = AgentTool.make(
        Tool.make("failing", {
          parameters: { coded: Schema.Boolean },
          success: Schema.String,
          failure: Schema.Union(Quota, Plain)
        }),
        {
          handler: ({ coded }) =>
            coded
              ? Effect.fail(new Quota({ message: "over quota", code: "QUOTA_EXCEEDED" }))
              : Effect.fail(new Plain({ message: "plain failure" })),
          parallel: true
        }
      )
      const agent = yield* Agent.make({ model: "m", tools: [failing] })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(
          S.toolCall("failing", { coded: true }, { id: "coded" }),
          S.toolCall("failing", { coded: false }, { id: "plain" })
        ),
        S.textResponse("noted")
      )
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const errors = ofType(yield* agent.log, "tool/result").map((e) => [e.data.callId as string, e.data.error])
      assert.deepStrictEqual(errors, [
        ["coded", { name: "Quota", code: "QUOTA_EXCEEDED" }],
        ["plain", { name: "Plain", code: "TOOL_FAILED" }]
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R57: a refused turn/end is reported once and settles with the turn's real reason; repair writes that reason", () =>
    Effect.gen(function*() {
      const { agent, events, faults, model } = yield* refusedTurnEnd
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.error.code]), [[1, "SESSION_LOG"]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason]), [[1, {
        kind: "completed"
      }]])
      assert.deepStrictEqual(compact(events).slice(-3), ["error", "settled:completed", "status:idle"])
      yield* faults.clear
      yield* model.push(S.textResponse("again"))
      yield* agent.followup(prompt("next"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => [e.data.turn, e.data.reason.kind]), [
        [1, "completed"],
        [2, "completed"]
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R68: a refused tool/result fails the turn once; the log stays well-formed and the next turn runs", () =>
    Effect.gen(function*() {
      const { faults, session } = yield* faultySession
      const { agent, model, rec } = yield* setup({ session, tools: [noop] })
      yield* model.push(S.toolCallResponse(S.toolCall("noop")))
      // The handler's commit is refused once; the close answers the call.
      const isResult = SessionStore.anyEvent((e) => e.type === "tool/result")
      let refused = 0
      yield* faults.failWhen((commit) => isResult(commit) && refused++ === 0)
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.error.code]), [[1, "SESSION_LOG"]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason.kind]), [[1, "error"]])
      assert.deepStrictEqual(logTrace(yield* agent.log).slice(-4), [
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end:error"
      ])
      yield* faults.clear
      yield* model.push(S.textResponse("again"))
      yield* agent.followup(prompt("next"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => [e.data.turn, e.data.reason.kind]), [
        [1, "error"],
        [2, "completed"]
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R81: steering stranded by a keepInbox cancel runs next as its own turn, without an unrelated send", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* midStream("p1", S.textResponse("steered"))
      const s = yield* agent.steer(prompt("steer"))
      const events = yield* cancelAndSettle(agent, rec, { keepInbox: true })
      // The steering's enqueue is balanced by exactly one dequeue, published as it is logged in the next turn.
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [s])
      assert.deepStrictEqual(compact(events).slice(-2), ["settled:completed", "status:idle"])
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log).slice(-8), [
        "turn/end:aborted",
        "turn/start",
        "steering/message:steer",
        "step/start",
        ...streamedStep,
        "turn/end:completed"
      ])
      assert.deepStrictEqual(userTexts((yield* model.requests)[1]!), ["p1", "steer"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R56: steering left staged by a failed turn runs next as its own turn", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({
        model: "m",
        hooks: {
          // The first turn's stop hook steers and then fails: the steering is staged when the turn fails.
          turnStopping: ({ agent, turn }) =>
            turn === 1
              ? Effect.zipRight(agent.steer(prompt("late steer")), Effect.fail("stop hook failed"))
              : Effect.void
        }
      })
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("one"), S.textResponse("two"))
      yield* agent.followup(prompt("p1"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["error", "completed"])
      assert.deepStrictEqual(ofType(log, "steering/message").map((e) => [e.data.turn, e.data.content[0].text]), [
        [2, "late steer"]
      ])
      assert.deepStrictEqual((yield* model.requests).length, 2)
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R86: after disposal a batch of cancels only is a no-op, and retry fails as disposed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* Agent.make({ model: "m" }).pipe(Scope.extend(scope))
      yield* Scope.close(scope, Exit.void)
      const results = yield* agent.batch([{ cancel: ["user"] }, { cancel: ["parent", { keepInbox: true }] }])
      assert.deepStrictEqual(results, [undefined, undefined])
      const retry = yield* Effect.flip(agent.retry)
      assert.strictEqual(retry._tag, "AgentDisposedError")
      // A batch that sends still fails as disposed.
      const send = yield* Effect.flip(
        agent.batch([{ cancel: ["user"] }, { send: [prompt("late"), { target: "next-turn", wakeup: true }] }])
      )
      assert.strictEqual(send._tag, "AgentDisposedError")
    }).pipe(Effect.provide(S.layer())))
})
