/**
 * Steering checkpoints and what makes another step (R47–R56, R103): steering sent during a `step` hook joins that
 * step's request (D1); steering sent while the model streams or tools run lands after the assistant message and the
 * whole tool-result batch, before `step/end` (D2), and forces another step; injected context at the same points
 * never forces a step but is visible to the next request; `turnStopping` steering forces a step, its context is
 * logged in the turn without one (D3). Steering and context share one ordered outbox.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message, MessageSource } from "@harness/domain"
import { Invariants, ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Ref, Schema, TestClock } from "effect"
import {
  assertCleanLog,
  assertReconstructable,
  awaitSleeper,
  firstRequest,
  gatedTool,
  idleLog,
  isDurable,
  logShape,
  noop,
  requestViews,
  setup,
  traceOf
} from "./fixtures.js"

const plugin = MessageSource.plugin("p")

describe("steering checkpoints", () => {
  it.scoped("R48 (D1), R49, R56, R103: steering and context sent from a step hook join this step's request, no extra step", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          step: ({ agent, step, turn }) =>
            turn === 1 && step === 1
              ? Effect.orDie(Effect.zipRight(agent.steer(Message.make("S")), agent.inject(Message.make("C", plugin))))
              : Effect.void
        }
      })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log), [
        "turn/start:1",
        "user:P",
        "steering:S",
        "user:C",
        "step/start:1.1",
        "request/header:initial",
        "assistant:A1",
        "step/end:1.1",
        "turn/end:1:completed"
      ])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests), [["user:P", "user:S", "user:C"]])
      assertReconstructable(log, requests)
      assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("A1")]))))

  it.scoped("R48 (D2), R49, R54, R103: steering sent while the model streams lands before step/end and forces another step", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      yield* agent.followup(Message.make("P"))
      yield* recorder.waitFor(isDurable("request/header"))
      yield* awaitSleeper // the model is inside its (virtual) delay: step 1 is streaming
      yield* agent.steer(Message.make("S"))
      yield* TestClock.adjust("1 second")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log), [
        ...firstRequest("P"),
        "assistant:A1",
        "steering:S",
        "step/end:1.1",
        "step/start:1.2",
        "assistant:A2",
        "step/end:1.2",
        "turn/end:1:completed"
      ])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests), [["user:P"], ["user:P", "assistant:A1", "user:S"]])
      assertReconstructable(log, requests)
      assert.deepStrictEqual(
        traceOf(yield* recorder.events).filter((t) => t.includes(":S")),
        ["enqueue:steering:S", "steering:S", "dequeue:S"]
      )
      assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.delayed("1 second", S.textResponse("A1")), S.textResponse("A2")]))))

  it.scoped(
    "R48, R54, R56, R103: context injected while the model streams never forces a step; the next request sees it",
    () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup()
        yield* agent.followup(Message.make("P"))
        yield* recorder.waitFor(isDurable("request/header"))
        yield* awaitSleeper
        yield* agent.inject(Message.make("C", plugin))
        yield* TestClock.adjust("1 second")
        yield* agent.whenIdle
        assert.deepStrictEqual(logShape(yield* agent.log), [
          ...firstRequest("P"),
          "assistant:A1",
          "user:C",
          "step/end:1.1",
          "turn/end:1:completed"
        ])
        const model = yield* S.ScriptedModel
        assert.strictEqual((yield* model.requests).length, 1, "the injected context made no request")

        yield* agent.followup(Message.make("P2"))
        const log = yield* idleLog(agent)
        const requests = yield* model.requests
        assert.deepStrictEqual(requestViews(requests)[1], ["user:P", "assistant:A1", "user:C", "user:P2"])
        assertReconstructable(log, requests)
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.delayed("1 second", S.textResponse("A1")), S.textResponse("A2")])))
  )

  it.scoped(
    "R48 (D2), R56, R68: steering and context sent while tools run wait for the whole result batch; the running tool is not interrupted",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const { agent, rec: recorder } = yield* setup({ tools: [gatedTool("wait", { started, release }), noop] })
        yield* agent.followup(Message.make("P"))
        yield* Deferred.await(started)
        yield* agent.steer(Message.make("S"))
        yield* agent.inject(Message.make("C", plugin))
        yield* Deferred.succeed(release, undefined)
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log), [
          ...firstRequest("P"),
          "assistant:",
          "tool/call:wait",
          "tool/call:noop",
          "tool/result:wait",
          "tool/result:noop",
          "steering:S",
          "user:C",
          "step/end:1.1",
          "step/start:1.2",
          "assistant:done",
          "step/end:1.2",
          "turn/end:1:completed"
        ])
        const results = log.flatMap((e) => e.type === "tool/result" ? [e.data] : [])
        assert.deepStrictEqual(results.map((r) => [r.isError, r.content]), [
          [false, [{ type: "text", text: "released" }]],
          [false, [{ type: "text", text: "ok" }]]
        ])
        const model = yield* S.ScriptedModel
        const requests = yield* model.requests
        assert.deepStrictEqual(requestViews(requests)[1], [
          "user:P",
          "assistant:+call:wait+call:noop",
          "tool:wait",
          "tool:noop",
          "user:S",
          "user:C"
        ])
        assertReconstructable(log, requests)
        assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
        yield* assertCleanLog(agent)
      }).pipe(
        Effect.provide(S.layer([S.toolCallResponse(S.toolCall("wait"), S.toolCall("noop")), S.textResponse("done")]))
      )
  )

  it.scoped("R47, R132: inject A, steer B, inject C staged in that order (from inside a tool) are logged A, B, C", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* Deferred.succeed(release, undefined)
      const { agent, rec: recorder } = yield* setup({
        tools: [
          gatedTool("work", {
            started,
            release,
            during: (agent) =>
              Effect.gen(function*() {
                yield* agent.inject(Message.make("A", plugin))
                yield* agent.steer(Message.make("B"))
                yield* agent.inject(Message.make("C", plugin))
              })
          })
        ]
      })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log).slice(5, 10), [
        "tool/call:work",
        "tool/result:work",
        "user:A",
        "steering:B",
        "user:C"
      ])
      assert.deepStrictEqual(traceOf(yield* recorder.events).filter((t) => /:(A|B|C)$/.test(t)), [
        "enqueue:steering:B",
        "user:A",
        "steering:B",
        "dequeue:B",
        "user:C"
      ])
      assert.deepStrictEqual(logShape(log).slice(10), [
        "step/end:1.1",
        "step/start:1.2",
        "assistant:done",
        "step/end:1.2",
        "turn/end:1:completed"
      ])
      const model = yield* S.ScriptedModel
      assertReconstructable(log, yield* model.requests)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("work")), S.textResponse("done")]))))

  it.scoped("R54 (D3), R88, R103: steering sent by turnStopping forces another step; it is enqueued and dequeued", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          turnStopping: ({ agent }) =>
            Effect.gen(function*() {
              if ((yield* Ref.getAndUpdate(calls, (n) => n + 1)) === 0) {
                yield* Effect.orDie(agent.steer(Message.make("S")))
              }
            })
        }
      })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log), [
        ...firstRequest("P"),
        "assistant:A1",
        "step/end:1.1",
        "steering:S",
        "step/start:1.2",
        "assistant:A2",
        "step/end:1.2",
        "turn/end:1:completed"
      ])
      assert.strictEqual(yield* Ref.get(calls), 2, "turnStopping runs again after the extra step")
      assert.deepStrictEqual(traceOf(yield* recorder.events).filter((t) => t.endsWith(":S")), [
        "enqueue:steering:S",
        "steering:S",
        "dequeue:S"
      ])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests)[1], ["user:P", "assistant:A1", "user:S"])
      assertReconstructable(log, requests)
      assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("A1"), S.textResponse("A2")]))))

  it.scoped("R54 (D3), R56: context injected by turnStopping is logged in this turn, before turn/end, without a step", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({
        model: "m",
        hooks: {
          turnStopping: ({ agent, turn }) =>
            turn === 1 ? Effect.orDie(agent.inject(Message.make("C", plugin))) : Effect.void
        }
      })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(logShape(yield* agent.log), [
        ...firstRequest("P"),
        "assistant:A1",
        "step/end:1.1",
        "user:C",
        "turn/end:1:completed"
      ])
      const model = yield* S.ScriptedModel
      assert.strictEqual((yield* model.requests).length, 1)
      yield* agent.followup(Message.make("P2"))
      yield* agent.whenIdle
      assert.deepStrictEqual(requestViews(yield* model.requests)[1], ["user:P", "assistant:A1", "user:C", "user:P2"])
      assertReconstructable(yield* agent.log, yield* model.requests)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("A1"), S.textResponse("A2")]))))

  it.scoped(
    "R48, R54: steering sent from the request hook (after step/start) lands at D2 and forces a step; from a later step hook at D1",
    () =>
      Effect.gen(function*() {
        const agent = yield* Agent.make({
          model: "m",
          hooks: {
            request: ({ agent, step }, next) =>
              step === 1 ? Effect.zipRight(Effect.orDie(agent.steer(Message.make("from request"))), next) : next,
            step: ({ agent, step }) => step === 2 ? Effect.orDie(agent.steer(Message.make("from step 2"))) : Effect.void
          }
        })
        yield* agent.followup(Message.make("P"))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log), [
          ...firstRequest("P"),
          "assistant:A1",
          "steering:from request",
          "step/end:1.1",
          "steering:from step 2",
          "step/start:1.2",
          "assistant:A2",
          "step/end:1.2",
          "turn/end:1:completed"
        ])
        const model = yield* S.ScriptedModel
        assertReconstructable(log, yield* model.requests)
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("A1"), S.textResponse("A2")])))
  )

  it.scoped("R54, R70: steering drained after a concluding tool stays in the log and feeds the next turn's request", () =>
    Effect.gen(function*() {
      const finish = AgentTool.make(Tool.make("finish", { success: Schema.String }), {
        handler: (_, { agent }) =>
          Effect.as(Effect.orDie(agent.steer(Message.make("S"))), AgentTool.outcome("bye", { concludeTurn: true }))
      })
      const agent = yield* Agent.make({ model: "m", tools: [finish] })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(logShape(yield* agent.log), [
        ...firstRequest("P"),
        "assistant:",
        "tool/call:finish",
        "tool/result:finish",
        "steering:S",
        "step/end:1.1",
        "turn/end:1:completed"
      ])
      const model = yield* S.ScriptedModel
      assert.strictEqual((yield* model.requests).length, 1, "a concluded turn makes no further request")
      yield* agent.followup(Message.make("P2"))
      yield* agent.whenIdle
      assert.deepStrictEqual(requestViews(yield* model.requests)[1], [
        "user:P",
        "assistant:+call:finish",
        "tool:finish",
        "user:S",
        "user:P2"
      ])
      assertReconstructable(yield* agent.log, yield* model.requests)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("finish")), S.textResponse("A2")]))))
})
