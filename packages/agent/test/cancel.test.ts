/**
 * Cancellation (R77–R85) with its departures (R73, R81, R82, R133): cancellation is fiber interruption (the model stream
 * stops at once, no hook runs after the cancel), with `keepInbox` nothing staged is drained into the aborted turn,
 * staged injected context is never silently wiped, and the finalizer writes owed tool results → staged context →
 * `step/end` → `turn/end`.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Fiber, Ref, Schema } from "effect"
import {
  abortedMidStream,
  assertWellFormed,
  cancelAndSettle,
  claimed,
  compact,
  completedIdle,
  context,
  faultySession,
  heldAdmission,
  idleLog,
  insideCancel,
  isDurable,
  layerWithFaults,
  live,
  logTrace,
  makeHold,
  midStream,
  ofType,
  openedWith,
  prompt,
  refusingAt,
  settledReasons,
  setup,
  stageBehindRefusal,
  stagedTurnOpens,
  stageSteerContextFollowup,
  streamedStep,
  userTexts
} from "./fixtures.js"

const parked = { target: "next-turn", wakeup: false } as const

describe("cancel", () => {
  it.scoped("R79: cancel on an idle agent with nothing pending publishes nothing and arms nothing", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* agent.cancel("user")
      yield* agent.cancel("parent", { keepInbox: true })
      assert.deepStrictEqual(yield* rec.trace, [])
      assert.deepStrictEqual(yield* agent.log, [])
      // Nothing was armed: the next follow-up runs and completes normally.
      yield* model.push(S.textResponse("hi"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/cancel-requested"), [])
      assert.deepStrictEqual(settledReasons(events), [{ kind: "completed" }])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R79: cancel on an agent gone idle after a completed turn publishes nothing and arms nothing", () =>
    Effect.gen(function*() {
      // The claim of the completed turn's prompt must leave no queued or waking count behind: a cancel that still
      // saw one would publish `cancel-requested` (and a discard of nothing) or end the next turn early.
      const agent = yield* Agent.make({ model: "m" })
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("first"))
      yield* agent.followup(prompt("one"))
      yield* agent.whenIdle
      const before = yield* agent.log
      const rec = yield* EventRecorder.make(agent)
      yield* agent.cancel("user")
      yield* agent.cancel("parent", { keepInbox: true })
      assert.deepStrictEqual(yield* rec.trace, [])
      assert.deepStrictEqual(yield* agent.log, before)
      assert.strictEqual(yield* agent.status, "idle")
      // Nothing was armed: the next follow-up runs and completes normally.
      yield* model.push(S.textResponse("second"))
      yield* agent.followup(prompt("two"))
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/cancel-requested"), [])
      assert.deepStrictEqual(live(events, "agent/inbox/discard"), [])
      assert.deepStrictEqual(settledReasons(events), [{ kind: "completed" }])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R79: a keepInbox cancel with no admission or turn is a no-op; parked items stay and run later", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* agent.send(prompt("parked"), parked)
      yield* rec.clear
      yield* agent.cancel("user", { keepInbox: true })
      assert.deepStrictEqual(yield* rec.trace, [])
      yield* model.push(S.textResponse("one"), S.textResponse("two"))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "user/message").map((e) => e.data.content[0]!.text), ["parked", "go"])
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason.kind), ["completed", "completed"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R77/R79: an idle cancel with parked items is effective: cancel-requested, then one discard", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      const a = yield* agent.send(prompt("a"), parked)
      const b = yield* agent.send(prompt("b"), parked)
      yield* rec.clear
      yield* agent.cancel("user")
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), ["cancel-requested:user", "discard:2"])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [a, b])
      assert.deepStrictEqual(yield* agent.status, "idle")
      assert.deepStrictEqual(yield* agent.log, [])
      // The discarded items never run: a later follow-up is the only turn.
      yield* model.push(S.textResponse("ok"))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "user/message").map((e) => e.data.content[0]!.text), ["go"])
      assert.deepStrictEqual((yield* model.requests).length, 1)
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R83/R85: a cancel before the claim discards the follow-up: no status change, no turn, whenIdle resolves", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      const [id] = yield* agent.batch([
        { send: [prompt("go"), { target: "next-turn", wakeup: true }] },
        { cancel: ["user"] }
      ])
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), ["enqueue:queued", "cancel-requested:user", "discard:1"])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [id])
      assert.deepStrictEqual(yield* agent.log, [])
      assert.deepStrictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R77/R84/R90: cancel-requested precedes one discard listing queued items, then steering items", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("first")
      // Steering accepted before the queued items: the discard still lists queued items first.
      const s = yield* agent.steer(prompt("steer"))
      const q1 = yield* agent.followup(prompt("q1"))
      const q2 = yield* agent.send(prompt("q2"), parked)
      const events = yield* cancelAndSettle(agent, rec)
      assert.deepStrictEqual(compact(events), [
        "cancel-requested:user",
        "discard:3",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        "status:idle"
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [q1, q2, s])
      const log = yield* agent.log
      assert.deepStrictEqual(ofType(log, "turn/start").length, 1)
      assert.deepStrictEqual(ofType(log, "steering/message"), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R78: every effective cancel publishes cancel-requested with its own cause; the first cause wins", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The step hook ignores interruption until released, so the turn stays installed for both cancels.
      const { agent, rec } = yield* setup({
        hooks: {
          step: () =>
            Effect.zipRight(Deferred.succeed(entered, undefined), Effect.uninterruptible(Deferred.await(release)))
        }
      })
      yield* agent.followup(prompt("go"))
      yield* Deferred.await(entered)
      yield* agent.cancel("user")
      yield* agent.cancel("parent")
      yield* Deferred.succeed(release, undefined)
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/cancel-requested").map((e) => e.cause), ["user", "parent"])
      const log = yield* agent.log
      assert.deepStrictEqual(ofType(log, "turn/end").map((e) => e.data.reason), [{ kind: "aborted" }])
      assert.deepStrictEqual(settledReasons(events), [{ kind: "aborted" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R80: cancel during admission drops the claimed prompt (dequeued, never discarded): no turn, no settled", () =>
    Effect.gen(function*() {
      const { agent, hold, rec } = yield* heldAdmission
      const p1 = yield* agent.followup(prompt("p1"))
      yield* hold.reached
      assert.isTrue(yield* agent.acceptsNextStep)
      const p2 = yield* agent.followup(prompt("p2"))
      yield* agent.cancel("user")
      yield* agent.whenIdle
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [
        ...claimed,
        "enqueue:queued",
        "cancel-requested:user",
        "discard:1",
        "status:idle"
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [p1])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [p2])
      assert.deepStrictEqual(yield* agent.log, [])
      assert.isFalse(yield* agent.acceptsNextStep)
      assert.deepStrictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R80/R43: a default cancel during admission discards staged steering and appends staged context out of turn", () =>
    Effect.gen(function*() {
      const { agent, hold, rec } = yield* heldAdmission
      yield* agent.followup(prompt("p1"))
      yield* hold.reached
      const { followup: p2, steering: s } = yield* stageSteerContextFollowup(agent)
      const events = yield* cancelAndSettle(agent, rec)
      assert.deepStrictEqual(compact(events), ["cancel-requested:user", "discard:2", "user/message", "status:idle"])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [p2, s])
      // The staged context was never silently wiped: it is in the log, outside any turn.
      assert.deepStrictEqual(logTrace(yield* agent.log), ["user/message:ctx"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R80/R81: with keepInbox, cancel during admission claims the next waking item at once; staged input rides it", () =>
    Effect.gen(function*() {
      // Only the first admission blocks.
      const { agent, hold, model, rec } = yield* heldAdmission
      yield* model.push(S.textResponse("ok"))
      const p1 = yield* agent.followup(prompt("p1"))
      yield* hold.reached
      const { followup: p2, steering: s } = yield* stageSteerContextFollowup(agent)
      const events = yield* cancelAndSettle(agent, rec, { keepInbox: true })
      assert.deepStrictEqual(compact(events), [
        "cancel-requested:user",
        ...stagedTurnOpens,
        "request/header",
        ...streamedStep,
        ...completedIdle
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [p2, s])
      assert.deepStrictEqual(live(events, "agent/inbox/discard"), [])
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log).slice(0, 4), [
        "turn/start",
        "steering/message:steer",
        "user/message:ctx",
        "user/message:p2"
      ])
      // p1 was dropped by the cancel: never logged.
      assert.isFalse(log.some((e) => e.type === "user/message" && e.data.messageId === p1))
      assert.deepStrictEqual(ofType(log, "turn/start")[0]!.data.turn, 1)
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R82/R83: cancel from a promptSubmit hook aborts the admission: the prompt is dropped, no turn opens", () =>
    Effect.gen(function*() {
      const inside = yield* insideCancel
      const { agent, model, rec } = yield* setup({
        hooks: { promptSubmit: ({ agent }, next) => Effect.zipRight(inside.run(agent), next) }
      })
      yield* model.push(S.textResponse("must not be requested"))
      const id = yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isTrue(yield* inside.returned)
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), [...claimed, "cancel-requested:user", "status:idle"])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [id])
      assert.deepStrictEqual(yield* agent.log, [])
      assert.deepStrictEqual((yield* model.requests).length, 0)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R79/R43: an idle default cancel discards steering left staged by a blocked admission and logs its context", () =>
    Effect.gen(function*() {
      const hold = yield* makeHold
      const { agent, rec } = yield* setup({ hooks: { promptSubmit: refusingAt(hold) } })
      const s = yield* stageBehindRefusal(agent, hold)
      // The blocked admission left the steering and its context staged (R43); the agent is idle.
      assert.deepStrictEqual(yield* agent.log, [])
      assert.deepStrictEqual(yield* agent.status, "idle")
      yield* rec.clear
      yield* agent.cancel("user")
      const events = yield* rec.events
      assert.deepStrictEqual(compact(events), ["cancel-requested:user", "discard:1", "user/message"])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [s])
      assert.deepStrictEqual(logTrace(yield* agent.log), ["user/message:ctx"])
      // Nothing is left: a second cancel is a no-op.
      yield* rec.clear
      yield* agent.cancel("user")
      assert.deepStrictEqual(yield* rec.trace, [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R81: cancel mid-stream stops the stream at once; chunks stay, no assistant/message, open step closed", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("go")
      yield* agent.cancel("user")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "assistant/chunk*", "step/end", "turn/end:aborted"])
      assert.isTrue(ofType(log, "assistant/chunk").length > 0)
      const events = yield* rec.events
      assert.deepStrictEqual(live(events, "agent/error"), [])
      // Nothing was pending: no (empty) discard.
      assert.deepStrictEqual(live(events, "agent/inbox/discard"), [])
      assert.deepStrictEqual(live(events, "agent/settled").map((e) => [e.turn, e.reason]), [[1, { kind: "aborted" }]])
      assert.deepStrictEqual(yield* agent.status, "idle")
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R81: cancel while the model is still waiting (delayed reply) ends the turn without advancing the clock", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed("1 hour", S.textResponse("too late")))
      yield* agent.followup(prompt("go"))
      yield* rec.waitFor(isDurable("request/header"))
      yield* agent.cancel("user")
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "step/end", "turn/end:aborted"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R82/R83: cancel from a step hook returns without waiting; the step never opens and the turn is aborted", () =>
    Effect.gen(function*() {
      const inside = yield* insideCancel
      const { agent, model, rec } = yield* setup({ hooks: { step: ({ agent }) => inside.run(agent) } })
      yield* model.push(S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isTrue(yield* inside.returned)
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), ["turn/start", "user/message:go", "turn/end:aborted"])
      assert.deepStrictEqual((yield* model.requests).length, 0)
      const events = yield* rec.events
      assert.deepStrictEqual(settledReasons(events), [{ kind: "aborted" }])
      assert.deepStrictEqual(live(events, "agent/error"), [])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R82/R83: cancel from a turnStopping hook returns without waiting; the turn ends aborted, no further step", () =>
    Effect.gen(function*() {
      const inside = yield* insideCancel
      const { agent, model, rec } = yield* setup({ hooks: { turnStopping: ({ agent }) => inside.run(agent) } })
      yield* model.push(S.textResponse("done"), S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isTrue(yield* inside.returned)
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), ...streamedStep, "turn/end:aborted"])
      assert.deepStrictEqual((yield* model.requests).length, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(settledReasons(events), [{ kind: "aborted" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R72/R81: cancel from a tool; finalizer order: owed tool results, staged context, step/end, turn/end", () =>
    Effect.gen(function*() {
      const inside = yield* insideCancel
      const otherRan = yield* Ref.make(false)
      const stop = AgentTool.make(
        Tool.make("stop", { parameters: {}, success: Schema.String }),
        {
          handler: (_, { agent }) =>
            agent.inject(context("ctx")).pipe(
              Effect.orDie,
              Effect.zipRight(inside.run(agent)),
              Effect.zipRight(Effect.never)
            )
        }
      )
      const other = AgentTool.make(
        Tool.make("other", { parameters: {}, success: Schema.String }),
        { handler: () => Effect.as(Ref.set(otherRan, true), "ran") }
      )
      const { agent, model, rec } = yield* setup({ tools: [stop, other] })
      yield* model.push(S.toolCallResponse(S.toolCall("stop", {}), S.toolCall("other", {})))
      yield* agent.followup(prompt("go"))
      yield* agent.whenIdle
      assert.isTrue(yield* inside.returned)
      assert.isFalse(yield* Ref.get(otherRan))
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [
        ...openedWith("go"),
        "assistant/chunk*",
        "assistant/message",
        "tool/call",
        "tool/result:ABORTED",
        "tool/call",
        "tool/result:ABORTED_BEFORE_DISPATCH",
        "user/message:ctx",
        "step/end",
        "turn/end:aborted"
      ])
      assert.deepStrictEqual(ofType(log, "tool/call").map((e) => e.data.name), ["stop", "other"])
      assert.deepStrictEqual((yield* model.requests).length, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(settledReasons(events), [{ kind: "aborted" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R75/R83: cancel inside requestError ends the turn aborted; its retry answer is ignored", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({
        hooks: {
          requestError: ({ agent }) => Effect.as(Effect.uninterruptible(agent.cancel("user")), "retry" as const)
        }
      })
      yield* model.push(S.failure("SERVER"), S.textResponse("must not be requested"))
      yield* agent.followup(prompt("go"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log), [...openedWith("go"), "step/end", "turn/end:aborted"])
      assert.deepStrictEqual((yield* model.requests).length, 1)
      assert.deepStrictEqual(yield* model.remaining, 1)
      const events = yield* rec.events
      // Interruption beats error (R59, R75): no agent/error for a cancelled turn.
      assert.deepStrictEqual(live(events, "agent/error"), [])
      assert.deepStrictEqual(settledReasons(events), [{ kind: "aborted" }])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R85: whenIdle waiting before a cancel resolves after it; the agent is idle and closed", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("go")
      const waiter = yield* Effect.fork(agent.whenIdle)
      yield* agent.cancel("user")
      yield* Fiber.join(waiter)
      assert.deepStrictEqual(yield* agent.status, "idle")
      assert.isFalse(yield* agent.acceptsNextStep)
      assert.deepStrictEqual(compact(yield* rec.events).slice(-2), ["settled:aborted", "status:idle"])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R81: with keepInbox, queued and steering items survive and run next; nothing staged enters the aborted turn", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* midStream("p1", S.textResponse("two"))
      const { followup: p2, steering: s } = yield* stageSteerContextFollowup(agent)
      const events = yield* cancelAndSettle(agent, rec, { keepInbox: true })
      assert.deepStrictEqual(compact(events), [
        "cancel-requested:user",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        ...stagedTurnOpens,
        ...streamedStep,
        ...completedIdle
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/dequeue").map((e) => e.message.id), [p2, s])
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [
        ...openedWith("p1"),
        ...abortedMidStream,
        "turn/start",
        "steering/message:steer",
        "user/message:ctx",
        "user/message:p2",
        "step/start",
        ...streamedStep,
        "turn/end:completed"
      ])
      const requests = yield* model.requests
      assert.deepStrictEqual(userTexts(requests[1]!), ["p1", "steer", "ctx", "p2"])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R77/R81: a default cancel appends staged context inside the aborted turn, before step/end and turn/end", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("p1")
      yield* agent.inject(context("ctx"))
      const s = yield* agent.steer(prompt("steer"))
      const events = yield* cancelAndSettle(agent, rec)
      assert.deepStrictEqual(compact(events), [
        "cancel-requested:user",
        "discard:1",
        "user/message",
        "step/end",
        "turn/end:aborted",
        "settled:aborted",
        "status:idle"
      ])
      assert.deepStrictEqual(live(events, "agent/inbox/discard")[0]!.messages.map((m) => m.id), [s])
      const log = yield* agent.log
      assert.deepStrictEqual(logTrace(log), [
        ...openedWith("p1"),
        "assistant/chunk*",
        "user/message:ctx",
        "step/end",
        "turn/end:aborted"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R77/R81: staged context the log refuses while a cancel closes the turn stays staged; the turn still closes", () =>
    Effect.gen(function*() {
      const { faults, session } = yield* faultySession
      const agent = yield* Agent.make({ model: "m", session })
      const model = yield* S.ScriptedModel
      yield* model.push(S.hanging(S.text("partial")), S.textResponse("done"))
      yield* agent.followup(prompt("p1"))
      const rec = yield* EventRecorder.make(agent)
      yield* rec.waitFor(isDurable("assistant/chunk"))
      yield* agent.inject(context("ctx"))
      yield* faults.failWhen(
        SessionStore.anyEvent((e) => e.type === "user/message" && JSON.stringify(e).includes("ctx"))
      )
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.deepStrictEqual(logTrace(yield* agent.log), [
        ...openedWith("p1"),
        ...abortedMidStream
      ])
      assert.deepStrictEqual(live(yield* rec.events, "agent/settled").map((e) => e.reason.kind), ["aborted"])
      // Nothing accepted is lost: once the store accepts again, the context enters the next turn.
      yield* faults.clear
      yield* agent.followup(prompt("p2"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log).slice(7, 10), ["turn/start", "user/message:ctx", "user/message:p2"])
      assertWellFormed(log)
    }).pipe(Effect.provide(layerWithFaults())))

  it.scoped("R185: a cancel with ifTurn of a turn that is over interrupts nothing and discards nothing", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* midStream("first", S.hanging(S.text("second")), S.textResponse("third"))
      yield* agent.cancel("user", { ifTurn: 1 })
      yield* agent.whenIdle
      // Turn 2 is running with a follow-up queued behind it: the late `ifTurn: 1` (alone, and in a batch) misses.
      yield* agent.followup(prompt("two"))
      yield* rec.waitFor(isDurable("assistant/chunk", (e) => e.data.turn === 2))
      const queued = yield* agent.followup(prompt("three"))
      yield* agent.cancel("user", { ifTurn: 1 })
      yield* agent.batch([{ cancel: ["user", { ifTurn: 1 }] }])
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), [queued])
      assert.strictEqual(yield* agent.status, "running")
      // Aimed at the open turn it cancels as a plain cancel does.
      yield* agent.cancel("user", { ifTurn: 2, keepInbox: true })
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(logTrace(log).filter((t) => t.startsWith("turn/end")), [
        "turn/end:aborted",
        "turn/end:aborted",
        "turn/end:completed"
      ])
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))
})
