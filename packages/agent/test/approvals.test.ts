/**
 * Durable approvals in one process (ADR 0054): the hook's `ask` makes a pending approval that is recorded, listed and
 * published; `approve` answers it by call id; the timeout policy denies on the `Clock`; a cancel closes it; answering
 * a call that is not pending is a typed error naming it. The SIGKILL round trip is in `@harness/crashtest`.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { type AgentEvent, Ids, Message } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { Invariants, ScriptedModel as S } from "@harness/testkit"
import { type Duration, Effect, Exit, Ref, Schema, Stream, TestClock } from "effect"

const setup = (options: { readonly approvalTimeout?: Duration.DurationInput }) =>
  Effect.gen(function*() {
    const runs = yield* Ref.make(0)
    const tool = AgentTool.make(
      Tool.make("deploy", { parameters: { target: Schema.String }, success: Schema.String }),
      { approval: "required", handler: () => Effect.as(Ref.update(runs, (n) => n + 1), "deployed") }
    )
    const log = yield* SessionLog.memory()
    const agent = yield* Agent.make({
      session: log,
      tools: [tool],
      hooks: { toolApproval: () => Effect.succeed({ kind: "ask" as const }) },
      ...(options.approvalTimeout === undefined ? {} : { approvalTimeout: options.approvalTimeout })
    }).pipe(
      Effect.provide(S.layer([
        S.toolCallResponse(S.toolCall("deploy", { target: "prod" }, { id: "call-1" })),
        S.textResponse("done")
      ]))
    )
    const requested = yield* Effect.fork(
      agent.events.pipe(
        Stream.filter((e): e is AgentEvent.AgentEventOf<"agent/approval/requested"> =>
          e.type === "agent/approval/requested"
        ),
        Stream.runHead
      )
    )
    yield* Effect.yieldNow()
    yield* agent.followup(Message.make("Deploy"))
    yield* requested
    return { agent, log, runs }
  })

const resultOf = (log: SessionLog.Service) =>
  Effect.map(log.events, (events) => {
    const result = events.find((e) => e.type === "tool/result")
    return result?.type === "tool/result" ? result.data : undefined
  })

const approvalRecords = (log: SessionLog.Service) =>
  Effect.map(log.inboxRecords, (records) => records.filter((r) => r.type.startsWith("approval/")))

describe("durable approvals", () => {
  it.scoped("R164 R165 R168: ask makes a listed pending approval; approve runs the call once in its turn", () =>
    Effect.gen(function*() {
      const { agent, log, runs } = yield* setup({})
      const pending = yield* agent.approvals
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.name, p.arguments, p.live]), [
        ["call-1", "deploy", "{\"target\":\"prod\"}", true]
      ])
      assert.strictEqual(yield* Ref.get(runs), 0, "nothing runs while the approval is pending")
      yield* agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" })
      yield* agent.whenIdle
      assert.strictEqual(yield* Ref.get(runs), 1)
      assert.strictEqual((yield* resultOf(log))?.isError, false)
      assert.deepStrictEqual(yield* agent.approvals, [])
      assert.deepStrictEqual((yield* approvalRecords(log)).map((r) => r.type === "approval/answered" ? r.by : r.type), [
        "approval/requested",
        "person"
      ])
      assert.deepStrictEqual(Invariants.logWellFormed(yield* log.events), [])
    }))

  it.scoped("R168: a denial is the call's DENIED result with the person's reason; a second answer names the call", () =>
    Effect.gen(function*() {
      const { agent, log, runs } = yield* setup({})
      yield* agent.approve(Ids.ToolCallId.make("call-1"), { kind: "deny", reason: "not on a Friday" })
      yield* agent.whenIdle
      assert.strictEqual(yield* Ref.get(runs), 0)
      const result = yield* resultOf(log)
      assert.strictEqual(result?.error?.code, "DENIED")
      assert.include(JSON.stringify(result?.content), "not on a Friday")
      const again = yield* Effect.exit(agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" }))
      assert.isTrue(Exit.isFailure(again))
      if (Exit.isFailure(again)) {
        const text = JSON.stringify(again.cause)
        assert.include(text, "ApprovalError")
        assert.include(text, "not-pending")
        assert.include(text, "call-1")
      }
      assert.strictEqual(yield* Ref.get(runs), 0)
      assert.deepStrictEqual(Invariants.logWellFormed(yield* log.events), [])
    }))

  it.scoped("R170: the timeout policy denies an unanswered call on the Clock, and never before its deadline", () =>
    Effect.gen(function*() {
      const { agent, log, runs } = yield* setup({ approvalTimeout: "10 minutes" })
      const [pending] = yield* agent.approvals
      assert.strictEqual(pending!.deadline! - pending!.requestedAt, 600_000)
      yield* TestClock.adjust("9 minutes")
      assert.strictEqual((yield* agent.approvals).length, 1, "still pending before the deadline")
      yield* TestClock.adjust("1 minute")
      yield* agent.whenIdle
      assert.strictEqual(yield* Ref.get(runs), 0)
      const result = yield* resultOf(log)
      assert.strictEqual(result?.error?.code, "DENIED")
      assert.include(JSON.stringify(result?.content), "in time")
      assert.deepStrictEqual(
        (yield* approvalRecords(log)).map((r) => r.type === "approval/answered" ? `${r.decision}:${r.by}` : r.type),
        ["approval/requested", "deny:timeout"]
      )
      const late = yield* Effect.exit(agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" }))
      assert.isTrue(Exit.isFailure(late), "an answer after the timeout is refused")
      assert.deepStrictEqual(Invariants.logWellFormed(yield* log.events), [])
    }))

  it.scoped("R170: without a timeout policy the call keeps waiting", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup({})
      yield* TestClock.adjust("30 days")
      assert.strictEqual((yield* agent.approvals).length, 1)
    }))

  it.scoped("R171: a cancel closes a pending approval (recorded as a denial by cancel) and the call never runs", () =>
    Effect.gen(function*() {
      const { agent, log, runs } = yield* setup({})
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.strictEqual(yield* Ref.get(runs), 0)
      assert.deepStrictEqual(yield* agent.approvals, [])
      assert.strictEqual((yield* resultOf(log))?.error?.code, "ABORTED_BEFORE_DISPATCH")
      yield* log.flush
      assert.deepStrictEqual(
        (yield* approvalRecords(log)).map((r) => r.type === "approval/answered" ? `${r.decision}:${r.by}` : r.type),
        ["approval/requested", "deny:cancel"]
      )
      assert.deepStrictEqual(Invariants.logWellFormed(yield* log.events), [])
    }))
})
