/**
 * Prompt admission (R39–R45): the `promptSubmit` waterfall allows (optionally rewriting the content and adding
 * contexts) or blocks; a block, a hook failure or an invalid decision means no turn and nothing written for the
 * prompt. Input staged during a rejected admission: context alone is logged at once; steering stays staged with its
 * context and enters the next admitted turn before its prompt, while input accepted during that admission enters
 * after it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import type { Turn } from "@harness/domain"
import { Message, MessageSource } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, Layer, Ref } from "effect"
import {
  assertCleanLog,
  assertReconstructable,
  firstAnswer,
  firstRequest,
  idleLog,
  logShape,
  ofType,
  requestViews,
  setup,
  statusTrace,
  textBlocksOf,
  traceOf
} from "./fixtures.js"

const plugin = MessageSource.plugin("p")
const onePrompt = (text: string) => (message: { readonly content: ReadonlyArray<{ readonly text: string }> }) =>
  message.content[0]?.text === text

/** The canonical trace of a prompt that admission refused: claimed (dequeued), nothing else, idle again. */
const refusedTrace = (text: string) => [`enqueue:queued:${text}`, "status:running", `dequeue:${text}`, "status:idle"]

describe("prompt admission", () => {
  it.scoped("R39, R41: without a hook the prompt is allowed; a hook that delegates to `next` allows too", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const bare = yield* Agent.make({ model: "m" })
      const delegating = yield* Agent.make({
        model: "m",
        hooks: { promptSubmit: (_, next) => Effect.zipRight(Ref.update(calls, (n) => n + 1), next) }
      })
      for (const agent of [bare, delegating]) {
        const recorder = yield* EventRecorder.make(agent)
        const id = yield* agent.followup(Message.make("hello", plugin))
        yield* agent.whenIdle
        assert.deepStrictEqual(traceOf(yield* recorder.events), [
          "enqueue:queued:hello",
          "status:running",
          "dequeue:hello",
          ...firstRequest("hello"),
          ...firstAnswer("ok")
        ])
        const log = yield* agent.log
        assert.deepStrictEqual(ofType(log, "turn/start")[0]?.data.trigger, { kind: "message", source: plugin })
        assert.deepStrictEqual(ofType(log, "user/message")[0]?.data, {
          messageId: id,
          content: [{ type: "text", text: "hello" }],
          source: plugin
        })
        yield* assertCleanLog(agent)
      }
      assert.strictEqual(yield* Ref.get(calls), 1)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok"), S.textResponse("ok")]))))

  it.scoped("R39: the hook receives the agent and the claimed message (its id, content and source)", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<unknown>>([])
      const agent = yield* Agent.make({
        model: "m",
        hooks: {
          promptSubmit: ({ agent, message }, next) =>
            Effect.zipRight(Ref.update(seen, (all) => [...all, agent.id, message]), next)
        }
      })
      const id = yield* agent.followup(Message.make("hello", plugin))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(seen), [
        agent.id,
        { content: [{ type: "text", text: "hello" }], id, source: plugin }
      ])
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped(
    "R41: allow with rewritten content — the log and the model hold the rewrite, the trigger keeps the original source",
    () =>
      Effect.gen(function*() {
        const agent = yield* Agent.make({
          model: "m",
          hooks: {
            promptSubmit: () => Effect.succeed({ kind: "allow", content: [{ type: "text", text: "rewritten" }] })
          }
        })
        const id = yield* agent.followup(Message.make("original", plugin))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log), [
          ...firstRequest("rewritten"),
          "assistant:ok",
          "step/end:1.1",
          "turn/end:1:completed"
        ])
        assert.deepStrictEqual(ofType(log, "turn/start")[0]?.data.trigger, { kind: "message", source: plugin })
        assert.deepStrictEqual(ofType(log, "user/message")[0]?.data, {
          messageId: id,
          content: [{ type: "text", text: "rewritten" }],
          source: plugin
        })
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(requestViews(yield* model.requests), [["user:rewritten"]])
        assertReconstructable(log, yield* model.requests)
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  it.scoped(
    "R41, R45: additional contexts are logged after the prompt, in order, each with its own source and no messageId",
    () =>
      Effect.gen(function*() {
        const a = Message.make("context A", MessageSource.plugin("a"))
        const b = Message.make("context B", MessageSource.plugin("b"))
        const agent = yield* Agent.make({
          model: "m",
          hooks: {
            promptSubmit: (_, next) =>
              Effect.map(next, (decision): Turn.PromptDecision =>
                decision.kind === "allow" ? { ...decision, additionalContexts: [a, b] } : decision)
          }
        })
        const id = yield* agent.followup(Message.make("prompt"))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log).slice(0, 5), [
          "turn/start:1",
          "user:prompt",
          "user:context A",
          "user:context B",
          "step/start:1.1"
        ])
        assert.deepStrictEqual(
          ofType(log, "user/message").map((e) =>
            e.data
          ),
          [
            { messageId: id, content: [{ type: "text", text: "prompt" }], source: MessageSource.user },
            { content: a.content, source: a.source },
            { content: b.content, source: b.source }
          ]
        )
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(requestViews(yield* model.requests), [[
          "user:prompt",
          "user:context A",
          "user:context B"
        ]])
        assertReconstructable(log, yield* model.requests)
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  it.scoped(
    "R42, R88: a blocked prompt writes nothing, opens no turn, settles nothing, reports no error; it was dequeued and is gone",
    () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup({
          hooks: {
            promptSubmit: ({ message }, next) =>
              onePrompt("blocked")(message) ? Effect.succeed({ kind: "block", reason: "not now" }) : next
          }
        })
        const blocked = yield* agent.followup(Message.make("blocked"))
        yield* agent.whenIdle
        assert.deepStrictEqual(traceOf(yield* recorder.events), refusedTrace("blocked"))
        assert.deepStrictEqual(yield* agent.log, [])
        assert.strictEqual(yield* agent.status, "idle")
        assert.isFalse(yield* agent.acceptsNextStep)
        assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])

        // Gone: the next prompt runs alone; the blocked one is neither logged nor seen by the model.
        yield* agent.followup(Message.make("next"))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log).slice(0, 2), ["turn/start:1", "user:next"])
        assert.isFalse(log.some((e) => e.type === "user/message" && e.data.messageId === blocked))
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(requestViews(yield* model.requests), [["user:next"]])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  for (
    const [name, hook] of [
      ["a failing hook", () => Effect.fail("hook exploded")],
      ["a dying hook", () => Effect.dieMessage("hook crashed")],
      // The hook is typed, but a hook can lie like any caller; the decision is decoded at the boundary.
      [
        "an invalid decision (empty content)",
        () => Effect.succeed({ kind: "allow", content: [] } as unknown as Turn.PromptDecision)
      ],
      [
        "an invalid decision (an additional context with empty content)",
        () =>
          Effect.succeed(
            {
              kind: "allow",
              additionalContexts: [{ content: [], source: { kind: "user" } }]
            } as unknown as Turn.PromptDecision
          )
      ],
      ["an unknown decision kind", () => Effect.succeed({ kind: "maybe" } as unknown as Turn.PromptDecision)]
    ] as const
  ) {
    it.scoped(`R42: ${name} counts as a failed admission — nothing written, no turn, no agent/error, no settled`, () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup({ hooks: { promptSubmit: hook } })
        yield* agent.followup(Message.make("doomed"))
        yield* agent.whenIdle
        assert.deepStrictEqual(traceOf(yield* recorder.events), refusedTrace("doomed"))
        assert.deepStrictEqual(yield* agent.log, [])
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(yield* model.requests, [])
      }).pipe(Effect.provide(S.layer([S.textResponse("never")]))))
  }

  it.scoped("R23, R43: status does not go idle between a refused admission and the next claim", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: ({ message }, next) =>
            onePrompt("blocked")(message) ? Effect.succeed({ kind: "block", reason: "no" }) : next
        }
      })
      yield* agent.sendAll([
        [Message.make("blocked"), { target: "next-turn", wakeup: true }],
        [Message.make("allowed"), { target: "next-turn", wakeup: true }]
      ])
      yield* agent.whenIdle
      assert.deepStrictEqual(traceOf(yield* recorder.events), [
        "enqueue:queued:blocked",
        "enqueue:queued:allowed",
        "status:running",
        "dequeue:blocked",
        "dequeue:allowed",
        ...firstRequest("allowed"),
        ...firstAnswer("ok")
      ])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R43, R28: context-only input staged during a blocked admission is appended at once, outside any turn", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: ({ agent }) =>
            Effect.gen(function*() {
              yield* Effect.orDie(agent.inject(Message.make("ctx 1", plugin)))
              yield* Effect.orDie(agent.inject(Message.make("ctx 2", plugin)))
              return { kind: "block", reason: "no" } as const
            })
        }
      })
      yield* agent.followup(Message.make("blocked"))
      yield* agent.whenIdle
      assert.deepStrictEqual(traceOf(yield* recorder.events), [
        "enqueue:queued:blocked",
        "status:running",
        "dequeue:blocked",
        "user:ctx 1",
        "user:ctx 2",
        "status:idle"
      ])
      const log = yield* agent.log
      assert.deepStrictEqual(logShape(log), ["user:ctx 1", "user:ctx 2"])
      assert.deepStrictEqual(log.map((e) => e.type === "user/message" ? e.data.source : undefined), [plugin, plugin])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([]))))

  it.scoped(
    "R43, R45, R88: staged steering stays staged with its context after a block; it enters the next admitted turn before its prompt, input accepted during that admission after it",
    () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup({
          hooks: {
            promptSubmit: ({ agent, message }, next) =>
              Effect.gen(function*() {
                if (onePrompt("first")(message)) {
                  yield* Effect.orDie(agent.inject(Message.make("ctx before steer", plugin)))
                  yield* Effect.orDie(agent.steer(Message.make("steer")))
                  yield* Effect.orDie(agent.inject(Message.make("ctx after steer", plugin)))
                  return { kind: "block", reason: "no" } as const
                }
                yield* Effect.orDie(agent.inject(Message.make("ctx during second", plugin)))
                yield* Effect.orDie(agent.steer(Message.make("steer during second")))
                return yield* Effect.map(next, (decision): Turn.PromptDecision =>
                  decision.kind === "allow"
                    ? { ...decision, additionalContexts: [Message.make("hook ctx", plugin)] }
                    : decision)
              })
          }
        })
        yield* agent.followup(Message.make("first"))
        yield* agent.whenIdle
        // Nothing was appended: the steering and both contexts stay staged, the agent is idle.
        assert.deepStrictEqual(yield* agent.log, [])
        assert.deepStrictEqual(traceOf(yield* recorder.events), [
          "enqueue:queued:first",
          "status:running",
          "dequeue:first",
          "enqueue:steering:steer",
          "status:idle"
        ])
        assert.isFalse(yield* agent.acceptsNextStep)
        assert.strictEqual(yield* agent.status, "idle")

        yield* recorder.clear
        yield* agent.followup(Message.make("second"))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log), [
          "turn/start:1",
          // retained from the blocked admission, in acceptance order
          "user:ctx before steer",
          "steering:steer",
          "user:ctx after steer",
          // the admitted prompt and its hook context
          "user:second",
          "user:hook ctx",
          // accepted during this admission
          "user:ctx during second",
          "steering:steer during second",
          // steering drained at turn start (D0) adds no step (R48)
          "step/start:1.1",
          "request/header:initial",
          "assistant:ok",
          "step/end:1.1",
          "turn/end:1:completed"
        ])
        assert.deepStrictEqual(traceOf(yield* recorder.events).slice(0, 13), [
          "enqueue:queued:second",
          "status:running",
          "dequeue:second",
          "enqueue:steering:steer during second",
          "turn/start:1",
          "user:ctx before steer",
          "steering:steer",
          "dequeue:steer",
          "user:ctx after steer",
          "user:second",
          "user:hook ctx",
          "user:ctx during second",
          "steering:steer during second"
        ])
        const model = yield* S.ScriptedModel
        assertReconstructable(log, yield* model.requests)
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  it.scoped(
    "R45, R48: input the hook sends during an allowed admission enters after the prompt and hook contexts, in acceptance order, without an extra step",
    () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup({
          hooks: {
            promptSubmit: ({ agent }, next) =>
              Effect.gen(function*() {
                yield* Effect.orDie(agent.inject(Message.make("A", plugin)))
                yield* Effect.orDie(agent.steer(Message.make("B")))
                yield* Effect.orDie(agent.inject(Message.make("C", plugin)))
                return yield* next
              })
          }
        })
        yield* agent.followup(Message.make("prompt"))
        const log = yield* idleLog(agent)
        assert.deepStrictEqual(logShape(log), [
          "turn/start:1",
          "user:prompt",
          "user:A",
          "steering:B",
          "user:C",
          "step/start:1.1",
          "request/header:initial",
          "assistant:ok",
          "step/end:1.1",
          "turn/end:1:completed"
        ])
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(requestViews(yield* model.requests), [["user:prompt", "user:A", "user:B", "user:C"]])
        assertReconstructable(log, yield* model.requests)
        assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
        assert.deepStrictEqual(yield* statusTrace(recorder), ["running", "idle"])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")])))
  )

  it.scoped("R43: context staged during a block is logged before the next claimed turn starts", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({
        model: "m",
        hooks: {
          promptSubmit: ({ agent, message }, next) =>
            onePrompt("blocked")(message)
              ? Effect.as(Effect.orDie(agent.inject(Message.make("ctx", plugin))), {
                kind: "block" as const,
                reason: "no"
              })
              : next
        }
      })
      yield* agent.sendAll([
        [Message.make("blocked"), { target: "next-turn", wakeup: true }],
        [Message.make("allowed"), { target: "next-turn", wakeup: true }]
      ])
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log).slice(0, 3), ["user:ctx", "turn/start:1", "user:allowed"])
      const model = yield* S.ScriptedModel
      assert.deepStrictEqual(requestViews(yield* model.requests), [["user:ctx", "user:allowed"]])
      assert.deepStrictEqual(textBlocksOf(ofType(log, "user/message")[0]!.data.content), "ctx")
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R43, R46: steering left staged by a blocked admission rides a later retry turn (which runs no admission), with its context, in order", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: ({ agent }) =>
            Effect.gen(function*() {
              yield* Effect.orDie(agent.inject(Message.make("C", plugin)))
              yield* Effect.orDie(agent.steer(Message.make("S")))
              return { kind: "block", reason: "no" } as const
            })
        }
      })
      yield* agent.followup(Message.make("blocked"))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* agent.log, [])
      yield* agent.retry
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logShape(log), [
        "turn/start:1",
        "user:C",
        "steering:S",
        "step/start:1.1",
        "request/header:initial",
        "assistant:ok",
        "step/end:1.1",
        "turn/end:1:completed"
      ])
      assert.deepStrictEqual(ofType(log, "turn/start")[0]?.data.trigger, { kind: "retry" })
      const model = yield* S.ScriptedModel
      assert.deepStrictEqual(requestViews(yield* model.requests), [["user:C", "user:S"]])
      assert.deepStrictEqual(Invariants.fifoConservation(yield* recorder.events, { outstanding: 0 }), [])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped(
    "R43, R63: when logging the context of a blocked admission fails, nothing is logged and all of it stays staged (no agent/error) and enters the next turn first, in order",
    () =>
      Effect.gen(function*() {
        const faults = yield* SessionStore.StoreFaults
        const session = yield* SessionLog.make()
        const { agent, rec: recorder } = yield* setup({
          session,
          hooks: {
            promptSubmit: ({ agent, message }, next) =>
              onePrompt("blocked")(message)
                ? Effect.gen(function*() {
                  for (const text of ["ctx 1", "ctx 2", "ctx 3"]) {
                    yield* Effect.orDie(agent.inject(Message.make(text, plugin)))
                  }
                  return { kind: "block", reason: "no" } as const
                })
                : next
          }
        })
        yield* faults.failWhen(
          SessionStore.anyEvent((e) => e.type === "user/message" && JSON.stringify(e).includes("ctx 2"))
        )
        yield* agent.followup(Message.make("blocked"))
        yield* agent.whenIdle
        // A drain is one `appendAll`: all or nothing.
        assert.deepStrictEqual(logShape(yield* agent.log), [])
        assert.deepStrictEqual(traceOf(yield* recorder.events), [
          "enqueue:queued:blocked",
          "status:running",
          "dequeue:blocked",
          "status:idle"
        ])
        yield* faults.clear
        yield* agent.followup(Message.make("next"))
        yield* agent.whenIdle
        assert.deepStrictEqual(logShape(yield* agent.log).slice(0, 5), [
          "turn/start:1",
          "user:ctx 1",
          "user:ctx 2",
          "user:ctx 3",
          "user:next"
        ])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(Layer.merge(S.layer([S.textResponse("ok")]), SessionStore.layerMemoryWithFaults)))
  )

  it.scoped("R32, R28: a followup sent by the hook during admission is its own turn, after this one", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({
        hooks: {
          promptSubmit: ({ agent, message }, next) =>
            onePrompt("first")(message)
              ? Effect.zipRight(Effect.orDie(agent.followup(Message.make("from hook"))), next)
              : next
        }
      })
      yield* agent.followup(Message.make("first"))
      yield* agent.whenIdle
      assert.deepStrictEqual(
        logShape(yield* agent.log).filter((s) => s.startsWith("user:") || s.startsWith("turn/")),
        ["turn/start:1", "user:first", "turn/end:1:completed", "turn/start:2", "user:from hook", "turn/end:2:completed"]
      )
      assert.include(traceOf(yield* recorder.events), "enqueue:queued:from hook")
      assert.deepStrictEqual(yield* statusTrace(recorder), ["running", "idle"])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("one"), S.textResponse("two")]))))
})
