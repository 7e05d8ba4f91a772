/**
 * `RemoteAgent`: the `Agent.Service` of a session on a server, over real HTTP on loopback. What a caller does with an
 * in-process agent — subscribe, followup, steer, read the inbox, withdraw, cancel keeping the inbox, wait for idle,
 * await a receipt — it does the same way here, and the session log on the server is what the in-process agent
 * would have written.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { type AgentEvent, Ids, Message } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import { Effect, Exit, Queue, Redacted, Ref, Schema } from "effect"
import { RemoteAgent } from "../src/index.js"
import { httpClient, serve } from "./support.js"

/** Takes live events until one matches; returns them all. */
const takeUntil = (
  events: Queue.Dequeue<AgentEvent.AgentEvent>,
  done: (event: AgentEvent.AgentEvent) => boolean
) =>
  Effect.gen(function*() {
    const seen: Array<AgentEvent.AgentEvent> = []
    while (true) {
      const event = yield* Queue.take(events)
      seen.push(event)
      if (done(event)) return seen
    }
  })

const connect = (baseUrl: string, session?: Ids.SessionId) =>
  RemoteAgent.make({ baseUrl, token: Redacted.make("send-secret"), session }).pipe(Effect.provide(httpClient))

describe("RemoteAgent", () => {
  it.live("drives a server's agent through the Agent interface: followup, steer, queue, withdraw, cancel keeping the inbox, whenIdle, receipts, log (R196)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.hanging(ScriptedModel.text("working")),
        ScriptedModel.textResponse("second answer")
      ])
      const agent: Agent.Service = yield* connect(server.baseUrl)
      const events = yield* agent.subscribe
      const first = yield* agent.followup(Message.make("first"))
      // The turn runs (its model hangs): its chunk arrives as a durable event over the stream.
      yield* takeUntil(events, (e) => e.type === "session/event" && e.event.type === "assistant/chunk")
      assert.strictEqual(yield* agent.status, "running")
      assert.isTrue(yield* agent.acceptsNextStep)
      const q1 = yield* agent.followup(Message.make("q1"), { id: Ids.AgentMessageId.make("q-1") })
      const q2 = yield* agent.followup(Message.make("q2"))
      assert.strictEqual(q1, "q-1")
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), [q1, q2])
      assert.strictEqual((yield* agent.withdraw(q2))._tag, "Withdrawn")
      assert.strictEqual((yield* agent.receipt(q2))._tag, "withdrawn")
      yield* agent.cancel("user", { keepInbox: true })
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.status, "idle")
      const ran = yield* agent.awaitReceipt(q1)
      assert.strictEqual(ran._tag, "ran")
      assert.strictEqual((yield* agent.receipt(first))._tag, "ran")
      // The operation's own failure comes back as itself.
      const taken = yield* Effect.flip(agent.edit(q1, Message.make("too late")))
      assert.strictEqual(taken._tag, "InboxChangeError")
      // The live events the in-process agent would publish, in order.
      const seen = yield* takeUntil(events, (e) => e.type === "agent/status" && e.status === "idle")
      assert.isTrue(seen.some((e) => e.type === "agent/settled"))
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const prompts = log.flatMap((e) =>
        e.type === "user/message" && e.data.content[0]?.type === "text" ? [e.data.content[0].text] : []
      )
      assert.deepStrictEqual(prompts, ["first", "q1"])
    }).pipe(Effect.scoped))

  it.live("a session that is not there, or a token the server refuses, is a RemoteError before anything runs (R196)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory)
      const missing = yield* Effect.flip(connect(server.baseUrl, Ids.SessionId.make("nope")))
      assert.strictEqual(missing.reason, "not-found")
      const refused = yield* Effect.flip(
        RemoteAgent.make({ baseUrl: server.baseUrl, token: Redacted.make("wrong") }).pipe(Effect.provide(httpClient))
      )
      assert.strictEqual(refused.reason, "refused")
      assert.notInclude(refused.message, "wrong")
      const exit = yield* Effect.exit(connect("http://127.0.0.1:1"))
      assert.isTrue(Exit.isFailure(exit))
    }).pipe(Effect.scoped))

  it.live("a pending approval is listed and answered over HTTP; the call runs once, a second answer is the typed ApprovalError (R168)", () =>
    Effect.gen(function*() {
      const runs = yield* Ref.make(0)
      const deploy = AgentTool.make(
        Tool.make("deploy", { parameters: { target: Schema.String }, success: Schema.String }),
        { approval: "required", handler: () => Effect.as(Ref.update(runs, (n) => n + 1), "deployed") }
      )
      const server = yield* serve(
        SessionStore.layerMemory,
        [
          ScriptedModel.toolCallResponse(ScriptedModel.toolCall("deploy", { target: "prod" }, { id: "call-1" })),
          ScriptedModel.textResponse("done")
        ],
        {
          makeAgent: (log) =>
            Agent.make({
              session: log,
              tools: [deploy],
              hooks: { toolApproval: () => Effect.succeed({ kind: "ask" as const }) }
            })
        }
      )
      const agent = yield* connect(server.baseUrl)
      const events = yield* agent.subscribe
      yield* agent.followup(Message.make("Deploy"))
      yield* takeUntil(events, (e) => e.type === "agent/approval/requested")
      const pending = yield* agent.approvals
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.name]), [["call-1", "deploy"]])
      assert.strictEqual(yield* Ref.get(runs), 0, "nothing runs while the approval is pending")
      yield* agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" })
      yield* agent.whenIdle
      assert.strictEqual(yield* Ref.get(runs), 1)
      assert.deepStrictEqual(yield* agent.approvals, [])
      const again = yield* Effect.flip(agent.approve(Ids.ToolCallId.make("call-1"), { kind: "deny" }))
      assert.strictEqual(again._tag, "ApprovalError")
      assert.deepStrictEqual(LogCheck.checkLog(yield* agent.log), [])
    }).pipe(Effect.scoped))
})
