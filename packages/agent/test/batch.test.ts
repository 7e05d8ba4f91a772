/**
 * Idle wake-up follows acceptance (R30), tested through `batch`/`sendAll` (the Effect form of "one synchronous
 * caller stack"); idempotent acceptance by caller-supplied id; and `batch`'s own contract: all-or-nothing
 * validation, ordered results, "interrupt and redirect", `BatchError` on a failing idle injection, disposal.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentError } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { MessageSource } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { ev, promptTurn, stamp, steeringTurn } from "@harness/testkit/Events"
import { Cause, Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import {
  claimed,
  coarseTrace,
  coarseTurn,
  conversation,
  ctx,
  idleLog,
  isDurable,
  lie,
  makeHold,
  mid,
  promptsByTurn,
  routes,
  sendBatch,
  setup,
  shape,
  textOf,
  user
} from "./fixtures.js"

const failureTag = <A, E>(exit: Exit.Exit<A, E>): string | undefined =>
  Exit.isFailure(exit)
    ? Option.getOrUndefined(Option.map(Cause.failureOption(exit.cause), (e) => (e as { readonly _tag?: string })._tag))
    : undefined

/** Every inbox event's kind and message ids, compactly. */
const inbox = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  events.flatMap((e) => {
    switch (e.type) {
      case "agent/inbox/enqueue":
        return [`enqueue:${e.placement}:${e.message.id}`]
      case "agent/inbox/dequeue":
        return [`dequeue:${e.message.id}`]
      case "agent/inbox/discard":
        return [`discard:${e.messages.map((m) => m.id).join(",")}`]
      default:
        return []
    }
  })

describe("idle wake-up follows acceptance (R30)", () => {
  it.scoped("R30 R32: two idle steers in one batch are two turns (both placements queued)", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"), S.textResponse("a2"))
      const ids = yield* sendBatch(agent, ["s1", "steer"], ["s2", "steer"])
      assert.strictEqual(ids.length, 2)
      yield* agent.whenIdle

      const events = yield* recorder.events
      assert.deepStrictEqual(
        events.flatMap((e) => (e.type === "agent/inbox/enqueue" ? [[e.placement, e.message.id]] : [])),
        [["queued", ids[0]], ["queued", ids[1]]]
      )
      assert.deepStrictEqual(yield* coarseTrace(recorder), [
        "enqueue:queued",
        ...claimed,
        ...coarseTurn,
        "dequeue",
        ...coarseTurn,
        "status:idle"
      ])
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["s1"]], [2, ["s2"]]])
      assert.isFalse(log.some((e) => e.type === "steering/message"), "the second steer was not captured as steering")
      assert.deepStrictEqual((yield* model.requests).map(conversation), [["user:s1"], [
        "user:s1",
        "assistant:a1",
        "user:s2"
      ]])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R30 R28: an inject after an idle followup in one batch lands before that follow-up's turn/start", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"))
      const [f, c] = yield* agent.batch([{ send: [user("go"), routes.followup] }, {
        send: [ctx("ctx"), routes.inject]
      }])
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(shape(log, { ids: true }), [
        `user:ctx@${c}`,
        "turn/start:1",
        `user:go@${f}`,
        "step/start:1",
        "assistant:a1",
        "step/end:1",
        "turn/end:1:completed"
      ])
      assert.deepStrictEqual(yield* coarseTrace(recorder), [
        "enqueue:queued",
        "user/message",
        "status:running",
        "dequeue",
        ...coarseTurn,
        "status:idle"
      ])
      assert.deepStrictEqual((yield* model.requests).map(conversation), [["user:ctx", "user:go"]])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R30: sendAll is a batch: two idle steers are two turns; an inject after an idle followup lands before its turn", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"), S.textResponse("a2"), S.textResponse("a3"))
      const first = yield* agent.sendAll([[user("s1"), routes.steer], [user("s2"), routes.steer]])
      yield* agent.whenIdle
      const second = yield* agent.sendAll([[user("go"), routes.followup], [ctx("ctx"), routes.inject]])
      yield* agent.whenIdle
      assert.strictEqual(first.length, 2)
      assert.strictEqual(second.length, 2)
      const events = yield* recorder.events
      assert.deepStrictEqual(
        events.flatMap((e) => (e.type === "agent/inbox/enqueue" ? [e.placement] : [])),
        ["queued", "queued", "queued"]
      )
      const log = yield* agent.log
      assert.deepStrictEqual(shape(log), [
        "turn/start:1",
        "user:s1",
        "step/start:1",
        "assistant:a1",
        "step/end:1",
        "turn/end:1:completed",
        "turn/start:2",
        "user:s2",
        "step/start:1",
        "assistant:a2",
        "step/end:1",
        "turn/end:2:completed",
        "user:ctx",
        "turn/start:3",
        "user:go",
        "step/start:1",
        "assistant:a3",
        "step/end:1",
        "turn/end:3:completed"
      ])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))
})

describe("idempotent acceptance (R9, R20)", () => {
  it.scoped("presets and send accept a caller-supplied id: it is the returned id, the enqueued id and the logged messageId", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"), S.textResponse("a2"))
      assert.strictEqual(yield* agent.inject(ctx("c"), { id: mid("c-1") }), mid("c-1"))
      assert.strictEqual(yield* agent.followup(user("f"), { id: mid("f-1") }), mid("f-1"))
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.steer(user("s"), { id: mid("s-1") }), mid("s-1"))
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.send(user("p"), { ...routes.park, id: mid("p-1") }), mid("p-1"))
      assert.deepStrictEqual(inbox(yield* recorder.events), [
        "enqueue:queued:f-1",
        "dequeue:f-1",
        "enqueue:queued:s-1",
        "dequeue:s-1",
        "enqueue:queued:p-1"
      ])
      assert.deepStrictEqual(shape(yield* agent.log, { ids: true }).filter((e) => e.startsWith("user:")), [
        "user:c@c-1",
        "user:f@f-1",
        "user:s@s-1"
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped(
    "re-sending an accepted id (pending parked, pending queued, staged, logged, discarded, dropped at a blocked admission) returns it and changes nothing",
    () =>
      Effect.gen(function*() {
        const hold = yield* makeHold
        const { agent, model, rec: recorder } = yield* setup({
          hooks: {
            promptSubmit: (input, next) => {
              const text = textOf(input.message.content)
              return text === "blocked"
                ? Effect.succeed({ kind: "block" as const, reason: "no" })
                : text === "held"
                ? Effect.zipRight(hold.wait, next)
                : next
            }
          }
        })
        yield* model.push(S.textResponse("a1"), S.textResponse("a2"), S.textResponse("a3"), S.textResponse("a4"))
        // Every way an id can have been accepted.
        yield* agent.inject(ctx("logged context"), { id: mid("logged-ctx") })
        yield* agent.followup(user("blocked"), { id: mid("blocked") })
        yield* agent.whenIdle
        yield* agent.send(user("to discard"), { ...routes.park, id: mid("discarded") })
        yield* agent.cancel("user")
        yield* agent.followup(user("logged prompt"), { id: mid("logged-prompt") })
        yield* agent.whenIdle
        yield* agent.send(user("parked"), { ...routes.park, id: mid("parked") })
        yield* agent.followup(user("held"), { id: mid("held") })
        yield* hold.reached
        yield* agent.steer(user("steering"), { id: mid("staged-steer") })
        yield* agent.inject(ctx("staged context"), { id: mid("staged-ctx") })
        yield* agent.followup(user("queued"), { id: mid("queued") })
        const logBefore = yield* agent.log
        const requestsBefore = (yield* model.requests).length
        yield* recorder.clear

        // Re-send each id with every kind of send, alone and in a batch: the same id comes back, nothing happens.
        const ids = [
          "logged-ctx",
          "blocked",
          "discarded",
          "logged-prompt",
          "parked",
          "held",
          "staged-steer",
          "staged-ctx",
          "queued"
        ].map(mid)
        for (const id of ids) {
          assert.strictEqual(yield* agent.followup(user(`again ${id}`), { id }), id)
          assert.strictEqual(yield* agent.steer(user(`again ${id}`), { id }), id)
          assert.strictEqual(yield* agent.inject(ctx(`again ${id}`), { id }), id)
          assert.strictEqual(yield* agent.send(user(`again ${id}`), { ...routes.park, id }), id)
          assert.deepStrictEqual(
            yield* agent.batch([{ send: [user(`again ${id}`), { ...routes.followup, id }] }, {
              send: [ctx(`again ${id}`), { ...routes.inject, id }]
            }]),
            [id, id]
          )
        }
        assert.deepStrictEqual(yield* recorder.events, [], "no event of any kind")
        assert.deepStrictEqual(yield* agent.log, logBefore, "no append")
        assert.strictEqual((yield* model.requests).length, requestsBefore)

        yield* hold.release
        const log = yield* idleLog(agent)
        assert.isFalse(shape(log).some((e) => e.includes("again")), "no re-sent message reached the log")
        // Each accepted message ran once, in FIFO order: "parked" ahead of the waking "held" behind it (R31), then
        // "held" (with its staged steering and context), then "queued".
        assert.deepStrictEqual(promptsByTurn(log), [
          [1, ["logged prompt"]],
          [2, ["parked"]],
          [3, ["held", "staged context"]],
          [4, ["queued"]]
        ])
        assert.deepStrictEqual(shape(log).filter((e) => e.startsWith("steer:")), ["steer:steering"])
        assert.deepStrictEqual(
          inbox(yield* recorder.events).filter((e) => e.startsWith("enqueue")),
          [],
          "still no second enqueue"
        )
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
      }).pipe(Effect.provide(S.layer()))
  )

  it.scoped("R31: re-sending a parked item's id as a waking send neither duplicates nor wakes it", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"), S.textResponse("a2"))
      yield* agent.send(user("parked"), { ...routes.park, id: mid("p") })
      assert.strictEqual(yield* agent.followup(user("wake it"), { id: mid("p") }), mid("p"))
      assert.strictEqual(yield* agent.steer(user("wake it"), { id: mid("p") }), mid("p"))
      assert.deepStrictEqual(yield* agent.sendAll([[user("wake it"), { ...routes.followup, id: mid("p") }]]), [
        mid("p")
      ])
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* recorder.trace, ["enqueue:queued"])
      assert.strictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(yield* agent.log, [])
      // Still parked, once: a new waking send runs it, then itself.
      yield* agent.followup(user("w"))
      yield* agent.whenIdle
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["parked"]], [2, ["w"]]])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a seeded log's ids (prompts, steering, context) count as accepted", () =>
    Effect.gen(function*() {
      const session = yield* SessionLog.memory({
        seed: stamp([
          ev.user("seeded context", MessageSource.plugin("p"), "seeded-ctx"),
          ...promptTurn(1, "Hi", "Hello!"),
          ...steeringTurn(2)
        ])
      })
      const { agent, rec: recorder } = yield* setup({ session })
      const before = yield* agent.log
      for (const id of ["seeded-ctx", "prompt-1", "prompt-2", "steer-2"].map(mid)) {
        assert.strictEqual(yield* agent.followup(user("again"), { id }), id)
        assert.strictEqual(yield* agent.inject(ctx("again"), { id }), id)
        assert.strictEqual(yield* agent.steer(user("again"), { id }), id)
        assert.deepStrictEqual(yield* agent.sendAll([[user("again"), { ...routes.park, id }]]), [id])
      }
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* recorder.events, [])
      assert.deepStrictEqual(yield* agent.log, before)
      assert.strictEqual((yield* (yield* S.ScriptedModel).requests).length, 0)
      // An id the seed does not hold is new.
      assert.strictEqual(yield* agent.inject(ctx("new"), { id: mid("fresh") }), mid("fresh"))
      assert.deepStrictEqual(shape((yield* agent.log).slice(before.length), { ids: true }), ["user:new@fresh"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("the same id twice in one batch is accepted once", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"))
      const results = yield* agent.batch([
        { send: [user("one"), { ...routes.followup, id: mid("dup") }] },
        { send: [user("two"), { ...routes.followup, id: mid("dup") }] },
        { send: [ctx("three"), { ...routes.inject, id: mid("dup") }] }
      ])
      assert.deepStrictEqual(results, [mid("dup"), mid("dup"), mid("dup")])
      yield* agent.whenIdle
      assert.deepStrictEqual(inbox(yield* recorder.events), ["enqueue:queued:dup", "dequeue:dup"])
      assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["one"]]])
      assert.deepStrictEqual(shape(yield* agent.log).filter((e) => e.startsWith("user:")), ["user:one"])
    }).pipe(Effect.provide(S.layer())))
})

describe("batch (R30, R131)", () => {
  it.scoped("R30: validation is all-or-nothing: one invalid operation and nothing is applied", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      const good = [
        { send: [ctx("c"), routes.inject] },
        { send: [user("f"), routes.followup] },
        { cancel: ["user"] }
      ] as const
      const bad: ReadonlyArray<readonly [string, unknown]> = [
        ["invalid content", { send: [{ content: [], source: { kind: "user" } }, routes.followup] }],
        ["an unknown source kind", {
          send: [{ content: [{ type: "text", text: "x" }], source: { kind: "tool" } }, routes.inject]
        }],
        ["a non-JSON value", {
          send: [{
            content: [{ type: "text", text: "x" }],
            source: { kind: "goal", goalId: "g", revision: 1, round: 0, change: { n: 1n } }
          }, routes.inject]
        }],
        ["bad send options", { send: [user("x"), { target: "later", wakeup: true }] }],
        ["send options with an unknown key", {
          send: [user("x"), { target: "next-turn", wakeup: true, urgent: true }]
        }],
        ["an unknown cancel cause", { cancel: ["because"] }],
        ["a send without its options", { send: [user("x")] }]
      ]
      for (const [what, op] of bad) {
        for (const position of [0, 1, 3]) {
          const ops = [...good]
          const all: Array<unknown> = [...ops.slice(0, position), op, ...ops.slice(position)]
          const exit = yield* Effect.exit(agent.batch(lie(all)))
          assert.strictEqual(
            failureTag(exit),
            "InvalidMessageError",
            `${what} at ${position}: ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "accepted"}`
          )
        }
      }
      assert.deepStrictEqual(yield* recorder.events, [])
      assert.deepStrictEqual(yield* agent.log, [])
      assert.strictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R30: an operation that is neither a send nor a cancel fails the batch with InvalidMessageError (not a defect), nothing applied", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      for (const op of [{ sned: [user("x"), routes.followup] }, {}, null, "send"]) {
        const exit = yield* Effect.exit(agent.batch(lie([{ send: [ctx("c"), routes.inject] }, op])))
        assert.strictEqual(
          failureTag(exit),
          "InvalidMessageError",
          `${JSON.stringify(op)}: ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "accepted"}`
        )
      }
      assert.deepStrictEqual(yield* recorder.events, [])
      assert.deepStrictEqual(yield* agent.log, [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("results come in order, undefined for a cancel; the operations apply in order against one state", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"))
      const results = yield* agent.batch([
        { send: [user("dropped"), routes.followup] },
        { cancel: ["user"] },
        { send: [ctx("context"), routes.inject] },
        { send: [user("kept"), routes.followup] }
      ])
      assert.deepStrictEqual(yield* agent.batch([]), [])
      assert.strictEqual(results.length, 4)
      assert.strictEqual(results[1], undefined)
      assert.isTrue(results[0] !== undefined && results[2] !== undefined && results[3] !== undefined)
      assert.strictEqual(new Set(results).size, 4)
      yield* agent.whenIdle
      // The cancel found the first follow-up pending (not yet claimed) and discarded it (R79, R83).
      assert.deepStrictEqual(inbox(yield* recorder.events), [
        `enqueue:queued:${results[0]}`,
        `discard:${results[0]}`,
        `enqueue:queued:${results[3]}`,
        `dequeue:${results[3]}`
      ])
      assert.deepStrictEqual(shape(yield* agent.log, { ids: true }), [
        `user:context@${results[2]}`,
        "turn/start:1",
        `user:kept@${results[3]}`,
        "step/start:1",
        "assistant:a1",
        "step/end:1",
        "turn/end:1:completed"
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R81 R90 R23: cancel then followup in one batch interrupts the running turn and redirects: the follow-up runs next", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.hanging(S.text("partial")), S.textResponse("redirected"))
      yield* agent.followup(user("first"))
      yield* recorder.waitFor(isDurable("assistant/chunk"))
      const queuedBefore = yield* agent.followup(user("stale"))
      const [cancelled, redirect] = yield* agent.batch([{ cancel: ["user"] }, {
        send: [user("redirect"), routes.followup]
      }])
      assert.strictEqual(cancelled, undefined)
      yield* agent.whenIdle

      const events = yield* recorder.events
      assert.deepStrictEqual(
        inbox(events).filter((e) => e.includes(queuedBefore) || e.includes(redirect!)),
        [
          `enqueue:queued:${queuedBefore}`,
          `discard:${queuedBefore}`,
          `enqueue:queued:${redirect}`,
          `dequeue:${redirect}`
        ]
      )
      const trace = yield* coarseTrace(recorder)
      assert.deepStrictEqual(trace, [
        ...claimed,
        "turn/start",
        "user/message",
        "step/start",
        "enqueue:queued",
        "cancel-requested:user",
        "discard:1",
        "enqueue:queued",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        "dequeue",
        ...coarseTurn,
        "status:idle"
      ])
      const log = yield* agent.log
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["first"]], [2, ["redirect"]]])
      assert.deepStrictEqual((yield* model.requests).map(conversation)[1], ["user:first", "user:redirect"])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("an idle injection's append failing mid-batch stops the batch with BatchError { applied, cause }, keeping what was applied", () =>
    Effect.gen(function*() {
      const faults = yield* SessionStore.StoreFaults
      const session = yield* SessionLog.make()
      const { agent, model, rec: recorder } = yield* setup({ session })
      yield* model.push(S.textResponse("a1"))
      yield* faults.failWhen(
        SessionStore.anyEvent((e) => e.type === "user/message" && JSON.stringify(e).includes("boom"))
      )
      const exit = yield* Effect.exit(agent.batch([
        { send: [ctx("before"), { ...routes.inject, id: mid("before") }] },
        { send: [user("queued"), { ...routes.followup, id: mid("queued") }] },
        { cancel: ["parent", { keepInbox: true }] },
        { send: [ctx("boom"), { ...routes.inject, id: mid("boom") }] },
        { send: [user("after"), { ...routes.followup, id: mid("after") }] },
        { send: [ctx("after too"), { ...routes.inject, id: mid("after-ctx") }] }
      ]))
      assert.strictEqual(failureTag(exit), "BatchError")
      if (Exit.isFailure(exit)) {
        const error = Option.getOrThrow(Cause.failureOption(exit.cause))
        assert.strictEqual(error._tag, "BatchError")
        if (error._tag === "BatchError") {
          assert.deepStrictEqual(error.applied, [mid("before"), mid("queued"), undefined])
          // `cause` is typed (ADR 0018): the refused append's SessionLogError, which survives the wire intact.
          assert.instanceOf(error.cause, SessionLog.SessionLogError)
          assert.strictEqual(error.cause.reason, "store")
          const wire = JSON.parse(JSON.stringify(Schema.encodeSync(AgentError.AgentError)(error)))
          const decoded = Schema.decodeUnknownSync(AgentError.AgentError)(wire)
          assert.instanceOf(decoded, AgentError.BatchError)
          assert.instanceOf((decoded as AgentError.BatchError).cause, SessionLog.SessionLogError)
          assert.deepStrictEqual(decoded, error)
        }
      }
      yield* agent.whenIdle
      yield* faults.clear
      const log = yield* agent.log
      // What was applied stays applied: the context is logged, the follow-up ran; nothing after the failure exists.
      assert.deepStrictEqual(shape(log, { ids: true }), [
        "user:before@before",
        "turn/start:1",
        "user:queued@queued",
        "step/start:1",
        "assistant:a1",
        "step/end:1",
        "turn/end:1:completed"
      ])
      assert.deepStrictEqual(inbox(yield* recorder.events), ["enqueue:queued:queued", "dequeue:queued"])
      // The ids after the failure were never accepted: they can be used now.
      assert.strictEqual(yield* agent.inject(ctx("boom, retried"), { id: mid("boom") }), mid("boom"))
      assert.strictEqual(yield* agent.inject(ctx("after, retried"), { id: mid("after") }), mid("after"))
      assert.deepStrictEqual(shape((yield* agent.log).slice(log.length), { ids: true }), [
        "user:boom, retried@boom",
        "user:after, retried@after"
      ])
      assert.deepStrictEqual(LogCheck.checkLog(yield* agent.log), [])
    }).pipe(Effect.provide(Layer.merge(S.layer(), SessionStore.layerMemoryWithFaults))))

  it.scoped("after disposal send, the presets, batch and sendAll fail with AgentDisposedError; cancel is a no-op", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* Agent.make({ model: "m" }).pipe(Scope.extend(scope))
      yield* agent.inject(ctx("before disposal"))
      const recorder = yield* EventRecorder.make(agent)
      yield* Scope.close(scope, Exit.void)
      yield* recorder.waitFor((e) => e.type === "agent/disposed")
      yield* recorder.clear
      const logBefore = yield* agent.log

      const attempts: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
        ["send", agent.send(user("x"), routes.followup)],
        ["send inject", agent.send(ctx("x"), routes.inject)],
        ["followup", agent.followup(user("x"))],
        ["steer", agent.steer(user("x"))],
        ["inject", agent.inject(ctx("x"))],
        ["batch", sendBatch(agent, ["x", "followup"])],
        ["batch of a cancel and a send", agent.batch([{ cancel: ["user"] }, { send: [user("x"), routes.followup] }])],
        ["sendAll", agent.sendAll([[ctx("x"), routes.inject]])]
      ]
      for (const [what, attempt] of attempts) {
        assert.strictEqual(failureTag(yield* Effect.exit(attempt)), "AgentDisposedError", what)
      }
      yield* agent.cancel("user")
      yield* agent.cancel("parent", { keepInbox: true })
      // A batch of cancels only is a no-op, as a plain cancel is (R79, R86).
      assert.deepStrictEqual(yield* agent.batch([{ cancel: ["user"] }]), [undefined])
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* recorder.events, [])
      assert.deepStrictEqual(yield* agent.log, logBefore)
      assert.deepStrictEqual(shape(logBefore), ["user:before disposal"])
    }).pipe(Effect.provide(S.layer())))
})
