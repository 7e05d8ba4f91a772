/**
 * Model-request failures and retry (R52, R57–R60, R74–R76): a provider failure closes its step before recovery,
 * publishes `agent/error`, ends the turn with the `LlmFailure`; `requestError` may answer `retry`; `max-tokens`
 * drops truncated tool calls; hook and log failures are ordinary turn failures, never offered to recovery.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Ref, Schema, TestClock } from "effect"
import {
  abortedMidStream,
  assertWellFormed,
  claimed,
  compact,
  completedIdle,
  context,
  faultySession,
  idleLog,
  isDurable,
  layerWithFaults,
  live,
  logTrace,
  ofType,
  opened,
  openedWith,
  prompt,
  refusedTurnEnd,
  settledReasons,
  setup,
  setupWithFaults,
  streamedStep,
  userTexts
} from "./fixtures.js"

describe("request failures and retry", () => {
  it.scoped("R52/R59/R75: a provider failure: step/end before recovery, agent/error, turn/end and settled carry the failure", () =>
    Effect.gen(function*() {
      const seenByHook = yield* Ref.make<ReadonlyArray<string>>([])
      const { agent, model, rec } = yield* setup({
        hooks: {
          requestError: ({ agent, failure, step, turn }, next) =>
            Effect.gen(function*() {
              const log = yield* agent.log
              yield* Ref.set(seenByHook, [log[log.length - 1]!.type, `${turn}/${step}`, failure.code])
              return yield* next
            })
        }
      })
      yield* model.push(S.failure("RATE_LIMIT"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      // The step was closed before the hook ran.
      assert.deepStrictEqual(yield* Ref.get(seenByHook), ["step/end", "1/1", "RATE_LIMIT"])
      const failure = { code: "RATE_LIMIT", message: "scripted RATE_LIMIT failure" } as const
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "step/end", "turn/end:request-error"])
      assert.deepStrictEqual(ofType(log, "turn/end")[0]!.data.reason, { kind: "request-error", step: 1, failure })
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error").map(({ error, step, turn }) => ({ turn, step, error })), [
        { turn: 1, step: 1, error: { message: failure.message, code: "RATE_LIMIT" } }
      ])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason]), [
        [1, { kind: "error", message: failure.message, failure }]
      ])
      assert.deepStrictEqual(compact(events).slice(-5), [
        "step/end",
        "error",
        "turn/end:request-error",
        "settled:error",
        "status:idle"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R52: a failure after partial output keeps the chunks and writes no assistant/message", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const model = yield* S.ScriptedModel
      yield* model.push(S.failureAfter([S.text("half an ans")], "SERVER"))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [
        ...openedWith("go"),
        "assistant/chunk*",
        "step/end",
        "turn/end:request-error"
      ])
      const chunks = ofType(log, "assistant/chunk")
      assert.isTrue(chunks.some((e) => JSON.stringify(e.data.chunk).includes("half an ans")))
      assert.deepStrictEqual(ofType(log, "assistant/message"), [])
      const reason = ofType(log, "turn/end")[0]!.data.reason
      assert.deepStrictEqual(reason.kind === "request-error" ? reason.failure.code : undefined, "SERVER")
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R57/R75/R91: requestError answering retry starts a retry turn at once; it re-derives its request and drains what was staged", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({
        hooks: {
          requestError: ({ agent }) =>
            Effect.gen(function*() {
              // The window stays open during recovery: both are staged and ride the retry turn.
              yield* agent.steer(prompt("fix"))
              yield* agent.inject(context("ctx"))
              return "retry" as const
            }).pipe(Effect.orDie)
        }
      })
      yield* model.push(S.failureAfter([S.text("half")], "SERVER"), S.textResponse("ok"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [
        ...claimed,
        ...opened,
        "assistant/chunk*",
        "step/end",
        "enqueue:steering",
        "error",
        "turn/end:request-error",
        "turn/start",
        "steering/message",
        "dequeue",
        "user/message",
        "step/start",
        ...streamedStep,
        ...completedIdle
      ])
      // agent/error is published for the failed turn even though a retry follows; only the retry turn settles.
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.step, e.error.code]), [[1, 1, "SERVER"]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => e.turn), [2])
      const log = yield* agent.log
      assert.deepStrictEqual(ofType(log, "turn/start").map((e) => [e.data.turn, e.data.trigger.kind]), [
        [1, "message"],
        [2, "retry"]
      ])
      const requests = yield* model.requests
      assert.deepStrictEqual(requests.length, 2)
      // Derived from the log: the prompt and what the recovery staged; the failed partial output is no message.
      assert.deepStrictEqual(userTexts(requests[1]!), ["go", "fix", "ctx"])
      assert.deepStrictEqual(requests[1]!.prompt.content.map((m) => m.role), ["user", "user", "user"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R75: a failing requestError hook counts as fail: no retry, the turn ends with the failure", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({
        hooks: { requestError: () => Effect.fail("the recovery broke") }
      })
      yield* model.push(S.failure("OVERLOADED"), S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "turn/start").length, 1)
      assert.deepStrictEqual(ofType(log, "turn/end")[0]!.data.reason, {
        kind: "request-error",
        step: 1,
        failure: { code: "OVERLOADED", message: "scripted OVERLOADED failure" }
      })
      assert.deepStrictEqual(yield* model.remaining, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error").map((e) => e.error.code), ["OVERLOADED"])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => e.reason.kind), ["error"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R75/R83: a cancel while requestError runs wins over its retry: aborted, no agent/error, no retry turn", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const hold = yield* Deferred.make<void>()
      const { agent, model, rec } = yield* setup({
        hooks: {
          requestError: () =>
            Effect.zipRight(Deferred.succeed(entered, undefined), Effect.as(Deferred.await(hold), "retry" as const))
        }
      })
      yield* model.push(S.failure("SERVER"), S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      yield* Deferred.await(entered)
      // The window stays open during recovery.
      assert.isTrue(yield* agent.acceptsNextStep)
      yield* agent.cancel("user")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "step/end", "turn/end:aborted"])
      assert.deepStrictEqual(yield* model.remaining, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error"), [])
      assert.deepStrictEqual(compact(events).slice(-5), [
        "step/end",
        "cancel-requested:user",
        "turn/end:aborted",
        "settled:aborted",
        "status:idle"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R26/R45/R46: agent.retry when idle starts a retry turn over the current log; when busy it fails", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.failure("SERVER"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      yield* model.push(S.textResponse("recovered"))
      yield* rec.clear
      yield* agent.retry
      yield* agent.whenIdle
      assert.deepStrictEqual(compact(yield* rec.events), [
        "status:running",
        "turn/start",
        "step/start",
        ...streamedStep,
        ...completedIdle
      ])
      const log = yield* agent.log
      const starts = ofType(log, "turn/start")
      assert.deepStrictEqual(starts.map((e) => [e.data.turn, e.data.trigger.kind]), [[1, "message"], [2, "retry"]])
      // No new prompt: the request is the log as it is.
      assert.deepStrictEqual(userTexts((yield* model.requests)[1]!), ["go"])
      assertWellFormed(log)

      // Busy: a turn is running.
      yield* model.push(S.hanging(S.text("partial")))
      yield* rec.clear
      yield* agent.followup(prompt("busy"))
      yield* rec.waitFor(isDurable("assistant/chunk"))
      const busy = yield* Effect.flip(agent.retry)
      assert.deepStrictEqual(busy._tag, "AgentBusyError")
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.deepStrictEqual(ofType(yield* agent.log, "turn/start").length, 3)
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R26: agent.retry during an admission fails with AgentBusyError", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup({
        hooks: {
          promptSubmit: ({ agent }, next) =>
            Effect.flatMap(Effect.flip(agent.retry), (error) =>
              error._tag === "AgentBusyError" ? Effect.succeed({ kind: "block", reason: "busy seen" } as const) : next)
        }
      })
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      // The hook saw AgentBusyError and blocked: no turn at all.
      assert.deepStrictEqual(yield* agent.log, [])
      assert.deepStrictEqual(compact(yield* rec.events), ["enqueue:queued", "status:running", "dequeue", "status:idle"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R52/R58: max-tokens ends the turn with that reason, drops truncated tool calls and settles completed", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make(false)
      const echo = AgentTool.make(
        Tool.make("echo", { parameters: { text: Schema.String }, success: Schema.String }),
        { handler: ({ text }) => Effect.as(Ref.set(ran, true), text) }
      )
      const { agent, model, rec } = yield* setup({ tools: [echo] })
      yield* model.push(S.maxTokensResponse(S.text("truncated"), S.toolCall("echo", { text: "a" })))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), ...streamedStep, "turn/end:max-tokens"])
      assert.deepStrictEqual(ofType(log, "assistant/message")[0]!.data.content, [{ type: "text", text: "truncated" }])
      assert.deepStrictEqual(ofType(log, "tool/call"), [])
      assert.isFalse(yield* Ref.get(ran))
      assert.deepStrictEqual((yield* model.requests).length, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(settledReasons(events), [{ kind: "completed" }])
      assert.deepStrictEqual(live(events, "agent/error"), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R52: max-tokens stays the turn's reason when steering forces a later step that completes", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed("1 second", S.maxTokensResponse(S.text("trunc"))), S.textResponse("more"))
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("request/header"))
      yield* agent.steer(prompt("continue"))
      yield* TestClock.adjust("1 second")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [
        ...openedWith("go"),
        "assistant/chunk*",
        "assistant/message",
        "steering/message:continue",
        "step/end",
        "step/start",
        ...streamedStep,
        "turn/end:max-tokens"
      ])
      const events = yield* rec.events
      assert.deepStrictEqual(settledReasons(events), [{ kind: "completed" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R50/R59/R74: a step hook failure is an ordinary turn failure, never offered to requestError", () =>
    Effect.gen(function*() {
      const offered = yield* Ref.make(false)
      const { agent, model, rec } = yield* setup({
        hooks: {
          step: () => Effect.fail("the step hook broke"),
          requestError: () => Effect.as(Ref.set(offered, true), "retry" as const)
        }
      })
      yield* model.push(S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isFalse(yield* Ref.get(offered))
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), ["turn/start", "user/message:go", "turn/end:error"])
      const reason = ofType(log, "turn/end")[0]!.data.reason
      assert.deepStrictEqual(reason.kind === "error" ? [reason.step, "failure" in reason] : undefined, [1, false])
      assert.deepStrictEqual((yield* model.requests).length, 0)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.step]), [[1, 1]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => e.reason.kind), ["error"])
      assert.deepStrictEqual(compact(events).slice(-5), [
        "user/message",
        "error",
        "turn/end:error",
        "settled:error",
        "status:idle"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R52/R59/R74: a refused assistant/message append is an ordinary turn failure, never offered to requestError", () =>
    Effect.gen(function*() {
      const { faults, session } = yield* faultySession
      const offered = yield* Ref.make(false)
      const { agent, model, rec } = yield* setup({
        session,
        hooks: { requestError: () => Effect.as(Ref.set(offered, true), "retry" as const) }
      })
      yield* model.push(S.textResponse("lost"), S.textResponse("must not be requested"))
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "assistant/message"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isFalse(yield* Ref.get(offered))
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "assistant/chunk*", "step/end", "turn/end:error"])
      const reason = ofType(log, "turn/end")[0]!.data.reason
      assert.deepStrictEqual(
        reason.kind === "error" ? [reason.step, reason.code] : undefined,
        [1, "SESSION_LOG"]
      )
      assert.deepStrictEqual(yield* model.remaining, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.step, e.error.code]), [[
        1,
        1,
        "SESSION_LOG"
      ]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => e.reason.kind), ["error"])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R38/R60: a refused turn/start: agent/error at step 0, nothing durable, no turn/end or settled; the number is reused", () =>
    Effect.gen(function*() {
      const { agent, faults, model, rec } = yield* setupWithFaults
      yield* model.push(S.textResponse("ok"))
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "turn/start"))
      yield* agent.followup(prompt("lost"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), ["enqueue:queued", "status:running", "dequeue", "error", "status:idle"])
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.step]), [[1, 0]])
      assert.deepStrictEqual(yield* agent.log, [])
      assert.deepStrictEqual((yield* model.requests).length, 0)
      yield* faults.clear
      yield* agent.followup(prompt("second"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "turn/start").map((e) => e.data.turn), [1])
      assert.deepStrictEqual(ofType(log, "user/message").map((e) => e.data.content[0]!.text), ["second"])
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["completed"])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R57: a refused turn/end is reported once with agent/error; the turn settles with its own reason, and the next turn first closes it in the log", () =>
    Effect.gen(function*() {
      const { agent, events, faults, model } = yield* refusedTurnEnd
      assert.deepStrictEqual(live(events, "agent/error").map((e) => [e.turn, e.error.code]), [[1, "SESSION_LOG"]])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason.kind]), [[1, "completed"]])
      assert.deepStrictEqual(compact(events).slice(-1), ["status:idle"])
      assert.deepStrictEqual(ofType(yield* agent.log, "turn/end"), [])
      // Once the store accepts again, the agent closes turn 1 (with the reason it had) before turn 2 opens.
      yield* faults.clear
      yield* model.push(S.textResponse("again"))
      yield* agent.followup(prompt("next"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(
        log.flatMap((e) => e.type === "turn/start" || e.type === "turn/end" ? [`${e.type}:${e.data.turn}`] : []),
        ["turn/start:1", "turn/end:1", "turn/start:2", "turn/end:2"]
      )
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["completed", "completed"])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R57, R72: a close refused half-way is finished before an idle injection: owed calls answered, step and turn closed", () =>
    Effect.gen(function*() {
      const { agent, faults, model, rec } = yield* setupWithFaults
      yield* model.push(S.hanging(S.text("partial")))
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("assistant/chunk"))
      yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "step/end"))
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.deepStrictEqual(live(yield* rec.events, "agent/settled").map((e) => e.reason.kind), ["aborted"])
      assert.deepStrictEqual(logTrace(yield* agent.log).slice(-1), ["assistant/chunk*"])
      yield* faults.clear
      yield* agent.inject(prompt("note"))
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log).slice(-4), [
        ...abortedMidStream,
        "user/message:note"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))
})
