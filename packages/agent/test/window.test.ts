/**
 * The next-step acceptance window (R24, R35, R57): it opens when the driver claims a queued prompt — before
 * `promptSubmit` runs — stays open through the turn, and closes right before `turn/end`; `acceptsNextStep` reports
 * it exactly. Steering that arrives after it closed becomes its own queued turn.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message } from "@harness/domain"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Fiber, Queue, Ref, Schema, Scope } from "effect"
import {
  assertCleanLog,
  firstAnswer,
  firstRequest,
  gatedTool,
  isDurable,
  logShape,
  noop,
  probedSession,
  setup,
  statusTrace,
  traceOf
} from "./fixtures.js"

/** A tool that records what `acceptsNextStep` says while it runs. */
const probeTool = (note: (what: string, agent: Agent.Service) => Effect.Effect<void>) =>
  AgentTool.make(
    Tool.make("probe", { success: Schema.String }),
    { handler: (_, { agent }) => Effect.as(note("tool", agent), "ok") }
  )

describe("acceptance window", () => {
  it.scoped("R24, R35: the window opens at claim, before promptSubmit runs; it is closed while idle", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: ({ agent }, next) =>
            Effect.gen(function*() {
              const open = yield* agent.acceptsNextStep
              const status = yield* agent.status
              yield* Ref.update(seen, (all) => [...all, `promptSubmit:${open}:${status}`])
              return yield* next
            })
        }
      })
      assert.isFalse(yield* agent.acceptsNextStep, "closed before any work")
      assert.strictEqual(yield* agent.status, "idle")
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(seen), ["promptSubmit:true:running"])
      assert.isFalse(yield* agent.acceptsNextStep, "closed again once idle")
      assert.strictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(traceOf(yield* recorder.events), [
        "enqueue:queued:go",
        "status:running",
        "dequeue:go",
        ...firstRequest("go"),
        ...firstAnswer("ok")
      ])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R24: the window stays open through the turn (step hook, tool, turnStopping)", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const note = (what: string, agent: Agent.Service) =>
        Effect.flatMap(agent.acceptsNextStep, (open) => Ref.update(seen, (all) => [...all, `${what}:${open}`]))
      const probe = probeTool(note)
      const agent = yield* Agent.make({
        model: "m",
        tools: [probe],
        hooks: {
          step: ({ agent, step }) => note(`step${step}`, agent),
          turnStopping: ({ agent }) => note("turnStopping", agent)
        }
      })
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(seen), ["step1:true", "tool:true", "step2:true", "turnStopping:true"])
      assert.isFalse(yield* agent.acceptsNextStep)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("probe")), S.textResponse("done")]))))

  it.scoped("R24: the window is open while the model streams (hanging stream), and closed after the cancel", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      yield* agent.followup(Message.make("go"))
      yield* recorder.waitFor(isDurable("assistant/chunk"))
      assert.isTrue(yield* agent.acceptsNextStep, "open while the stream hangs")
      assert.strictEqual(yield* agent.status, "running")
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.isFalse(yield* agent.acceptsNextStep)
      assert.deepStrictEqual(logShape(yield* agent.log), [...firstRequest("go"), "step/end:1.1", "turn/end:1:aborted"])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.hanging(S.text("partial"))]))))

  it.scoped(
    "R24, R57: at the instant each row is written the window is open inside the turn and closed for turn/end (completed, failed, aborted, between turns)",
    () =>
      Effect.gen(function*() {
        const probed = yield* probedSession
        const failStep = yield* Ref.make(false)
        const { agent, rec: recorder } = yield* setup({
          session: probed.session,
          tools: [noop],
          hooks: {
            step: () => Effect.flatMap(Ref.get(failStep), (fail) => (fail ? Effect.fail("step refused") : Effect.void))
          }
        })
        yield* probed.attach(agent)
        // Two turns claimed back to back: the first has a tool step, the second answers at once.
        yield* agent.sendAll([
          [Message.make("one"), { target: "next-turn", wakeup: true }],
          [Message.make("two"), { target: "next-turn", wakeup: true }]
        ])
        yield* agent.whenIdle
        assert.deepStrictEqual(yield* probed.seen, [
          "turn/start:open",
          "user/message:open",
          "step/start:open",
          "request/header:open",
          "assistant/message:open",
          "tool/call:open",
          "tool/result:open",
          "step/end:open",
          "step/start:open",
          "assistant/message:open",
          "step/end:open",
          "turn/end:closed",
          // between turns: the second claim re-opens it
          "turn/start:open",
          "user/message:open",
          "step/start:open",
          "assistant/message:open",
          "step/end:open",
          "turn/end:closed"
        ])
        // One running interval across both turns (R23).
        assert.deepStrictEqual(yield* statusTrace(recorder), ["running", "idle"])

        // A failed turn (the step hook fails): turn/end is written with the window closed.
        yield* Ref.set(failStep, true)
        yield* agent.followup(Message.make("three"))
        yield* agent.whenIdle
        assert.deepStrictEqual((yield* probed.seen).slice(18), [
          "turn/start:open",
          "user/message:open",
          "turn/end:closed"
        ])
        yield* Ref.set(failStep, false)

        // An aborted turn: the closers (`Closers.close`, one `appendAll`: one store commit) are written with the
        // window already closed.
        yield* S.ScriptedModel.pipe(Effect.flatMap((model) => model.push(S.hanging(S.text("…")))))
        yield* agent.followup(Message.make("four"))
        yield* recorder.waitFor(isDurable("assistant/chunk", (e) => e.data.turn === 4))
        yield* agent.cancel("user")
        yield* agent.whenIdle
        assert.deepStrictEqual((yield* probed.seen).slice(21), [
          "turn/start:open",
          "user/message:open",
          "step/start:open",
          "step/end:closed",
          "turn/end:closed"
        ])
        assert.isFalse(yield* agent.acceptsNextStep)
        yield* assertCleanLog(agent)
      }).pipe(
        Effect.provide(S.layer([S.toolCallResponse(S.toolCall("noop")), S.textResponse("a"), S.textResponse("b")]))
      )
  )

  it.scoped(
    "R24, R43: after a blocked admission the window is closed before the staged context is logged, and re-opens at the next claim",
    () =>
      Effect.gen(function*() {
        const probed = yield* probedSession
        const { agent, rec: recorder } = yield* setup({
          session: probed.session,
          hooks: {
            promptSubmit: ({ agent, message }, next) =>
              message.content[0]?.text === "blocked"
                ? Effect.as(Effect.orDie(agent.inject(Message.make("ctx", { kind: "plugin", plugin: "p" }))), {
                  kind: "block" as const,
                  reason: "no"
                })
                : next
          }
        })
        yield* probed.attach(agent)
        yield* agent.sendAll([
          [Message.make("blocked"), { target: "next-turn", wakeup: true }],
          [Message.make("allowed"), { target: "next-turn", wakeup: true }]
        ])
        yield* agent.whenIdle
        assert.deepStrictEqual(yield* probed.seen, [
          "user/message:closed", // the staged context, logged outside any turn
          "turn/start:open",
          "user/message:open",
          "step/start:open",
          "request/header:open",
          "assistant/message:open",
          "step/end:open",
          "turn/end:closed"
        ])
        assert.deepStrictEqual(logShape(yield* agent.log).slice(0, 3), ["user:ctx", "turn/start:1", "user:allowed"])
        assert.deepStrictEqual(yield* statusTrace(recorder), ["running", "idle"])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  it.scoped(
    "R24, R57, R28, R23: steering sent after turn/end (by an observer of the turn/end session/event) is its own queued turn; status stays running",
    () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup()
        // An observer with its own subscription: it reacts to turn 1's `turn/end` by reading the window and steering.
        const events = yield* agent.subscribe
        const observer = yield* Effect.fork(Effect.gen(function*() {
          while (true) {
            const event = yield* Queue.take(events)
            if (event.type === "session/event" && event.event.type === "turn/end" && event.event.data.turn === 1) {
              const open = yield* agent.acceptsNextStep
              yield* agent.steer(Message.make("late"))
              return open
            }
          }
        }))
        yield* agent.followup(Message.make("first"))
        const openAtTurnEnd = yield* Fiber.join(observer)
        yield* agent.whenIdle
        assert.isFalse(openAtTurnEnd, "the window is closed once turn/end is in the log")
        const trace = traceOf(yield* recorder.events)
        assert.deepStrictEqual(trace, [
          "enqueue:queued:first",
          "status:running",
          "dequeue:first",
          ...firstRequest("first"),
          "assistant:one",
          "step/end:1.1",
          "turn/end:1:completed",
          "enqueue:queued:late",
          "settled:completed",
          "dequeue:late",
          "turn/start:2",
          "user:late",
          "step/start:2.1",
          "assistant:two",
          "step/end:2.1",
          "turn/end:2:completed",
          "settled:completed",
          "status:idle"
        ])
        // The late steer is the prompt of turn 2 (a user/message), never steering in the closed turn 1.
        const log = yield* agent.log
        assert.deepStrictEqual(log.filter((e) => e.type === "steering/message"), [])
        const start2 = log.find((e) => e.type === "turn/start" && e.data.turn === 2)
        assert.deepStrictEqual(start2?.type === "turn/start" ? start2.data.trigger : undefined, {
          kind: "message",
          source: { kind: "user" }
        })
        assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
        assert.deepStrictEqual(Invariants.steeringInOpenTurn(log), [])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("one"), S.textResponse("two")])))
  )

  it.scoped(
    "R24, R57: steering sent after the window closed by a fiber a turnStopping hook started is its own queued turn",
    () =>
      Effect.gen(function*() {
        const scope = yield* Effect.scope
        const sent = yield* Deferred.make<boolean>()
        const started = yield* Ref.make(false)
        const agent: Agent.Service = yield* Agent.make({
          model: "m",
          hooks: {
            // On the first turn-stopping, start a fiber that waits for turn 1's end, then steers.
            turnStopping: ({ agent, turn }) =>
              Effect.gen(function*() {
                if (turn !== 1 || (yield* Ref.getAndSet(started, true))) return
                const events = yield* Effect.provideService(agent.subscribe, Scope.Scope, scope)
                yield* Effect.forkIn(
                  Effect.gen(function*() {
                    while (true) {
                      const event = yield* Queue.take(events)
                      if (event.type === "session/event" && event.event.type === "turn/end") break
                    }
                    const open = yield* agent.acceptsNextStep
                    yield* Effect.orDie(agent.steer(Message.make("after")))
                    yield* Deferred.succeed(sent, open)
                  }),
                  scope
                )
              })
          }
        })
        const recorder = yield* EventRecorder.make(agent)
        yield* agent.followup(Message.make("first"))
        assert.isFalse(yield* Deferred.await(sent))
        yield* agent.whenIdle
        const trace = traceOf(yield* recorder.events)
        assert.include(trace, "enqueue:queued:after")
        assert.notInclude(trace, "enqueue:steering:after")
        assert.deepStrictEqual(logShape(yield* agent.log), [
          ...firstRequest("first"),
          "assistant:one",
          "step/end:1.1",
          "turn/end:1:completed",
          "turn/start:2",
          "user:after",
          "step/start:2.1",
          "assistant:two",
          "step/end:2.1",
          "turn/end:2:completed"
        ])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("one"), S.textResponse("two")])))
  )

  it.scoped("R24: the window is open while a tool runs; a steer there is placed `steering`", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const { agent, rec: recorder } = yield* setup({ tools: [gatedTool("wait", { started, release })] })
      yield* agent.followup(Message.make("go"))
      yield* Deferred.await(started)
      assert.isTrue(yield* agent.acceptsNextStep)
      yield* agent.steer(Message.make("mid-tool"))
      yield* Deferred.succeed(release, undefined)
      yield* agent.whenIdle
      assert.include(traceOf(yield* recorder.events), "enqueue:steering:mid-tool")
      assert.isFalse(yield* agent.acceptsNextStep)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("wait")), S.textResponse("done")]))))

  it.scoped("R24, R45: the window is open through an idle-started retry turn and closed after it", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<boolean>>([])
      const agent = yield* Agent.make({
        model: "m",
        hooks: {
          step: ({ agent }) =>
            Effect.flatMap(agent.acceptsNextStep, (open) => Ref.update(seen, (all) => [...all, open]))
        }
      })
      assert.isFalse(yield* agent.acceptsNextStep)
      yield* agent.retry
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(seen), [true])
      assert.isFalse(yield* agent.acceptsNextStep)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))
})
