/**
 * `whenBusy: "rollback"` (ADR 0061, R207–R213): the running turn is cancelled keeping the inbox, this message runs
 * next, and the cancelled turn — its prompt, its answers, its tool calls and results — is left out of every later
 * request by a durable `turn/rollback` record. The log keeps every event (checkLog clean), a resume derives the same
 * history, and receipts are unchanged. Holds are latches; nothing sleeps.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Agent } from "@harness/agent"
import { Ids, type SessionEvent } from "@harness/domain"
import { History, SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect } from "effect"
import {
  agentOn,
  assertWellFormed,
  durableStore,
  gatedTool,
  heldAdmission,
  isDurable,
  mid,
  noop,
  prompt,
  promptsByTurn,
  routes,
  setup
} from "./fixtures.js"

/** Every text a request carried (messages as JSON: prompts, answers, tool calls and results). */
const carried = (request: S.Request): string => JSON.stringify(request.prompt.content)

const rollbacks = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.flatMap((event) => event.type === "turn/rollback" ? [event.data] : [])

/** Turn 1 answered "hi there"; turn 2 called `noop`, then hangs mid-answer in its second step. */
const script = [
  S.textResponse("hi there"),
  S.toolCallResponse(S.toolCall("noop")),
  S.hanging(S.text("partial answer")),
  S.textResponse("redone"),
  S.textResponse("after done")
]

/** Runs turn 1, then turn 2 until it hangs in its second step; returns once that step's chunk is logged. */
const twoTurnsThenHang = (agent: Agent.Service, rec: EventRecorder.Recorder) =>
  Effect.gen(function*() {
    yield* agent.followup(prompt("before"), { id: mid("before") })
    yield* agent.whenIdle
    yield* agent.followup(prompt("do the thing"), { id: mid("thing") })
    yield* rec.waitFor(isDurable("assistant/chunk", (e) => e.data.step === 2))
  })

describe("whenBusy: rollback", () => {
  it.scoped("the running turn is cancelled and left out of every later request; the log keeps it, marked, and checks clean", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({ tools: [noop] })
      yield* model.push(...script)
      yield* twoTurnsThenHang(agent, rec)
      yield* agent.send(prompt("instead"), { ...routes.followup, whenBusy: "rollback", id: mid("redo") })
      yield* agent.whenIdle
      yield* agent.followup(prompt("after"))
      yield* agent.whenIdle

      const requests = yield* model.requests
      assert.strictEqual(requests.length, 5)
      for (const request of requests.slice(3)) {
        const text = carried(request)
        assert.include(text, "before")
        assert.include(text, "hi there")
        assert.include(text, "instead")
        // Neither the turn's own prompt, nor its tool call and result, nor the answer it was streaming.
        assert.notInclude(text, "do the thing")
        assert.notInclude(text, "noop")
        assert.notInclude(text, "partial answer")
      }
      assert.include(carried(requests[4]!), "redone")

      const log = yield* agent.log
      assertWellFormed(log)
      // The log keeps the rolled-back turn: its prompt, its tool step, its cut answer, and the record inside it.
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["before"]], [2, ["do the thing"]], [3, ["instead"]], [4, [
        "after"
      ]]])
      assert.deepStrictEqual(rollbacks(log).map(({ by, turn }) => ({ by, turn })), [{ turn: 2, by: mid("redo") }])
      const end = log.find((e) => e.type === "turn/end" && e.data.turn === 2)
      assert.strictEqual(end?.type === "turn/end" ? end.data.reason.kind : undefined, "aborted")
      assert.isTrue(log.some((e) => e.type === "tool/result" && e.data.turn === 2))
      // The derivation of the whole log is what the last request carried before its own prompt and answer.
      const derived = JSON.stringify(History.deriveMessages(log))
      assert.notInclude(derived, "do the thing")
      assert.include(derived, "after done")
      // Receipts are unchanged: the cut turn's prompt ran, the rollback's message ran next.
      assert.deepStrictEqual(yield* agent.receipt(mid("thing")), { _tag: "ran", turn: 2 })
      assert.deepStrictEqual(yield* agent.receipt(mid("redo")), { _tag: "ran", turn: 3 })
      assert.include((yield* rec.events).map(EventRecorder.describe), "cancel-requested:user")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("what the cut turn adds after the record — a running tool's synthetic result — is left out too; the queue keeps its order", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const { agent, model } = yield* setup({ tools: [gatedTool("gate", { started, release })] })
      yield* model.push(S.toolCallResponse(S.toolCall("gate")), S.textResponse("redone"), S.textResponse("queued done"))
      yield* agent.followup(prompt("do the thing"), { id: mid("thing") })
      yield* Deferred.await(started)
      yield* agent.followup(prompt("queued"), { id: mid("queued") })
      yield* agent.send(prompt("instead"), { ...routes.followup, whenBusy: "rollback", id: mid("redo") })
      yield* agent.whenIdle
      const log = yield* agent.log
      assertWellFormed(log)
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["do the thing"]], [2, ["instead"]], [3, ["queued"]]])
      // The tool's result was written by the cancel's close, after the record, inside the cut turn.
      const record = log.findIndex((e) => e.type === "turn/rollback")
      const result = log.findIndex((e) => e.type === "tool/result" && e.data.turn === 1)
      assert.isAbove(result, record)
      const requests = yield* model.requests
      for (const request of requests.slice(1)) {
        const text = carried(request)
        assert.notInclude(text, "do the thing")
        assert.notInclude(text, "gate")
      }
      assert.include(carried(requests[2]!), "redone")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("an idle agent routes it as a plain send (no record); an admission that opened no turn is interrupted, no record", () =>
    Effect.gen(function*() {
      const { agent, hold, model } = yield* heldAdmission
      yield* model.push(S.textResponse("one"), S.textResponse("two"))
      yield* agent.followup(prompt("held"), { id: mid("held") })
      yield* hold.reached
      yield* agent.send(prompt("instead"), { ...routes.followup, whenBusy: "rollback", id: mid("redo") })
      yield* hold.release
      yield* agent.whenIdle
      yield* agent.send(prompt("idle"), { ...routes.followup, whenBusy: "rollback" })
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(rollbacks(log), [])
      assert.deepStrictEqual(promptsByTurn(log), [[1, ["instead"]], [2, ["idle"]]])
      assert.deepStrictEqual(yield* agent.receipt(mid("held")), { _tag: "rejected", reason: "user" })
      assertWellFormed(log)
    }).pipe(Effect.provide(S.layer())))

  const sid = Ids.SessionId.make("rollback")

  /** An agent over `log` with a scripted model and the `noop` tool. */
  const agentWithNoop = (log: SessionLog.Service, replies: ReadonlyArray<S.Reply>) =>
    agentOn(log, replies, { tools: [noop] })

  for (const snapshotEvery of [0, 4]) {
    it.effect(`a resume derives the same history past the record (${snapshotEvery === 0 ? "replayed" : "from a snapshot"})`, () =>
      Effect.gen(function*() {
        const store = yield* durableStore
        const commit = { snapshotEvery }
        const before = yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid, commit })
          const { agent } = yield* agentWithNoop(log, script.slice(0, 4))
          const rec = yield* EventRecorder.make(agent)
          yield* twoTurnsThenHang(agent, rec)
          yield* agent.send(prompt("instead"), { ...routes.followup, whenBusy: "rollback", id: mid("redo") })
          yield* agent.whenIdle
          return History.messages(yield* log.history)
        })).pipe(Effect.provideService(SessionStore.SessionStore, store))
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.open(sid, { commit })
          assert.deepStrictEqual(JSON.stringify(History.messages(yield* log.history)), JSON.stringify(before))
          const { agent, model } = yield* agentWithNoop(log, [S.textResponse("after done")])
          yield* agent.followup(prompt("after"))
          yield* agent.whenIdle
          const text = carried((yield* model.requests)[0]!)
          assert.include(text, "redone")
          assert.notInclude(text, "do the thing")
          assert.notInclude(text, "partial answer")
          assertWellFormed(yield* agent.log)
          assert.deepStrictEqual(yield* agent.receipt(mid("redo")), { _tag: "ran", turn: 3 })
        })).pipe(Effect.provideService(SessionStore.SessionStore, store))
      }).pipe(Effect.orDie))
  }

  it.effect("the record is durable with the send: a process that ends right after it resumes without the cut turn", () =>
    Effect.gen(function*() {
      const store = yield* durableStore
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        const { agent } = yield* agentWithNoop(log, script.slice(0, 3))
        const rec = yield* EventRecorder.make(agent)
        yield* twoTurnsThenHang(agent, rec)
        // The process ends before the rollback's message runs: its inbox record and the record are on disk.
        yield* agent.send(prompt("instead"), { ...routes.followup, whenBusy: "rollback", id: mid("redo") })
      })).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* SessionLog.open(sid)
        const { agent, model } = yield* agentWithNoop(log, [S.textResponse("redone")])
        yield* agent.whenIdle
        const text = carried((yield* model.requests)[0]!)
        assert.include(text, "instead")
        assert.notInclude(text, "do the thing")
        assert.notInclude(text, "partial answer")
        const events = yield* agent.log
        assertWellFormed(events)
        assert.strictEqual(rollbacks(events).length, 1)
        assert.isTrue(events.some((e) => e.type === "turn/end" && e.data.turn === 2))
      })).pipe(Effect.provideService(SessionStore.SessionStore, store))
    }).pipe(Effect.orDie))
})
