/**
 * `Compact`, `Approve` and `ListApprovals` through the entity's test client (answers and schemas round-tripped), and
 * `ClusterAgent` on a real `Sharding` (`TestRunner.layer`, the test clock driven) behaving as a local agent: send → turn → log,
 * cancel, inbox edits, `sendAll`, compaction and approvals, the durable events once and in order.
 */
import { type LanguageModel, Tool } from "@effect/ai"
import type { Sharding } from "@effect/cluster"
import { ClusterSchema, Entity, ShardingConfig, TestRunner } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { Ids, Operations } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import type { Scope } from "effect"
import { Context, Effect, Fiber, Layer, Option, Queue, Schema, Stream, TestClock } from "effect"
import { AgentEntity, ClusterAgent } from "../src/index.js"
import { mid, prompt, roundTrip, sessionId, storedEvents } from "./fixtures.js"

/** An agent whose one tool needs a person's approval (the hook asks for every call). */
const withApprovals: AgentEntity.MakeAgent<LanguageModel.LanguageModel> = (log) =>
  Agent.make({
    session: log,
    tools: [
      AgentTool.make(
        Tool.make("deploy", { parameters: { target: Schema.String }, success: Schema.String }),
        { approval: "required", handler: () => Effect.succeed("deployed") }
      )
    ],
    hooks: { toolApproval: () => Effect.succeed({ kind: "ask" as const }) }
  })

const deploy = S.toolCallResponse(S.toolCall("deploy", { target: "prod" }, { id: "call-1" }))

/** Takes events from the queue, one at a time, up to and including the first that matches. */
const takeUntil = (queue: Queue.Dequeue<AgentEvent.AgentEvent>, match: (e: AgentEvent.AgentEvent) => boolean) =>
  Stream.fromQueue(queue, { maxChunkSize: 1 }).pipe(Stream.takeUntil(match), Stream.runDrain)

const isStatus = (status: AgentEvent.AgentStatus) => (e: AgentEvent.AgentEvent) =>
  e.type === "agent/status" && e.status === status

const assertLogClean = (store: SessionStore.Service) =>
  Effect.map(storedEvents(store), (events) => assert.deepStrictEqual(LogCheck.checkLog(events), []))

describe("AgentEntity: compact and approvals", () => {
  it.scoped("R246: Compact and Approve are persisted messages, ListApprovals a read; each round-trips", () =>
    Effect.gen(function*() {
      const makeClient = yield* Entity.makeTestClient(
        AgentEntity.AgentEntity,
        AgentEntity.layer({ makeAgent: withApprovals })
      )
      const client = yield* makeClient(sessionId)
      const model = yield* S.ScriptedModel
      const store = yield* SessionStore.SessionStore
      const call = <A, E>(rpc: AgentEntity.Rpcs, payload: unknown, effect: Effect.Effect<A, E>) =>
        Effect.exit(effect).pipe(Effect.tap((exit) => roundTrip(rpc, payload, exit)), Effect.flatten)
      for (const rpc of [AgentEntity.Compact, AgentEntity.Approve]) {
        assert.isTrue(Context.get(rpc.annotations, ClusterSchema.Persisted), rpc._tag)
      }
      assert.isFalse(Context.get(AgentEntity.ListApprovals.annotations, ClusterSchema.Persisted))

      yield* model.push(S.textResponse("the summary"))
      const compact = { id: mid("k-1"), operation: new Operations.Compact({}) }
      yield* call(AgentEntity.Compact, compact, client.Compact(compact))
      yield* client.WhenIdle(undefined)
      assert.isTrue((yield* storedEvents(store)).some((e) => e.type === "compaction"))

      yield* model.push(deploy, S.textResponse("done"))
      const ask = { id: mid("m-1"), operation: new Operations.Followup({ message: prompt("Deploy") }) }
      yield* client.Followup(ask)
      const list = new Operations.ListApprovals({})
      let pending = yield* call(AgentEntity.ListApprovals, list, client.ListApprovals(list))
      while (pending.length === 0) {
        yield* Effect.yieldNow()
        pending = yield* client.ListApprovals(list)
      }
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.name]), [["call-1", "deploy"]])
      const approve = {
        id: mid("a-1"),
        operation: new Operations.Approve({ callId: Ids.ToolCallId.make("call-1"), answer: { kind: "allow" } })
      }
      yield* call(AgentEntity.Approve, approve, client.Approve(approve))
      yield* client.WhenIdle(undefined)
      assert.deepStrictEqual(yield* client.ListApprovals(list), [])
      // A second answer is the operation's own failure, naming the call, and it round-trips.
      const again = { id: mid("a-2"), operation: approve.operation }
      const refused = yield* Effect.flip(call(AgentEntity.Approve, again, client.Approve(again)))
      assert.strictEqual(refused._tag, "ApprovalError")
      const result = (yield* storedEvents(store)).find((e) => e.type === "tool/result")
      assert.strictEqual(result?.type === "tool/result" ? result.data.isError : undefined, false)
      yield* assertLogClean(store)
    }).pipe(Effect.provide(Layer.mergeAll(ShardingConfig.layer(), SessionStore.layerMemory, S.layer()))))
})

/** A cluster of one runner in memory hosting the agent entity, over `SessionStore.layerMemory` and a scripted model. */
const Cluster = (makeAgent?: AgentEntity.MakeAgent<LanguageModel.LanguageModel>) =>
  AgentEntity.layer(makeAgent === undefined ? {} : { makeAgent }).pipe(
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(Layer.mergeAll(SessionStore.layerMemory, S.layer()))
  )

/**
 * Runs `test` on the cluster, in its own scope, while the test clock moves on in 100 ms steps until it is done: the
 * cluster's own timers (shard acquisition, reply polling) need the clock to move. The outcome is `test`'s.
 */
const onCluster = (makeAgent?: AgentEntity.MakeAgent<LanguageModel.LanguageModel>) =>
<A, E>(
  test: Effect.Effect<A, E, Scope.Scope | Sharding.Sharding | SessionStore.SessionStore | S.ScriptedModel>
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.scoped(Effect.provide(test, Cluster(makeAgent))))
    while (Option.isNone(yield* fiber.poll)) yield* TestClock.adjust("100 millis")
    return yield* Fiber.join(fiber)
  })

/** The session's agent on the cluster, the scripted model and the runners' store. */
const setup = Effect.all({
  agent: ClusterAgent.make(sessionId),
  model: S.ScriptedModel,
  store: SessionStore.SessionStore
})

describe("ClusterAgent on TestRunner", () => {
  it.effect(
    "R246: send → turn → log as a local agent; the durable events come once, in seq order",
    () =>
      Effect.gen(function*() {
        const { agent, model, store } = yield* setup
        assert.deepStrictEqual(yield* agent.log, [], "a session not stored yet has no events")
        const events = yield* agent.subscribe
        yield* model.push(S.textResponse("hello"), S.textResponse("again"))
        const first = yield* agent.followup(prompt("one"))
        yield* takeUntil(events, isStatus("idle"))
        yield* agent.followup(prompt("two"))
        yield* agent.whenIdle
        assert.strictEqual(yield* agent.status, "idle")
        assert.isFalse(yield* agent.acceptsNextStep)
        const log = yield* agent.log
        assert.deepStrictEqual(log, yield* storedEvents(store))
        assert.deepStrictEqual(log.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : []), [
          "completed",
          "completed"
        ])
        assert.strictEqual((yield* agent.awaitReceipt(first))._tag, "ran")
        yield* assertLogClean(store)
      }).pipe(onCluster()),
    60_000
  )

  it.effect(
    "R246: durable events through subscribe: every seq once, in order, the same as the log",
    () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup
        const events = yield* agent.subscribe
        const after = (yield* agent.log).length
        yield* model.push(S.textResponse("a"), S.textResponse("b"))
        yield* agent.sendAll([[prompt("x"), { target: "next-turn", wakeup: true }], [prompt("y"), {
          target: "next-turn",
          wakeup: true
        }]])
        yield* agent.whenIdle
        const log = yield* agent.log
        const durable: Array<number> = []
        while (durable.length < log.length - after) {
          const event = yield* Queue.take(events)
          if (event.type === "session/event") durable.push(event.event.seq)
        }
        assert.deepStrictEqual(durable, log.slice(after).map((e) => e.seq))
      }).pipe(onCluster()),
    60_000
  )

  it.effect("R246: cancel, sendAll and inbox edits answer as the local agent's", () =>
    Effect.gen(function*() {
      const agent = yield* ClusterAgent.make(sessionId)
      const model = yield* S.ScriptedModel
      const store = yield* SessionStore.SessionStore
      const events = yield* agent.subscribe
      yield* model.push(S.hanging(S.text("working")))
      yield* agent.followup(prompt("long"))
      yield* takeUntil(events, isStatus("running"))
      assert.isTrue(yield* agent.acceptsNextStep)
      const parked = { target: "next-turn", wakeup: false } as const
      const [a, b] = yield* agent.sendAll([[prompt("a"), parked], [prompt("b"), parked]])
      const edited = yield* agent.edit(a!, prompt("a, edited"))
      assert.deepStrictEqual(edited.content, [{ type: "text", text: "a, edited" }])
      yield* agent.move(b!, 0)
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), [b, a])
      assert.strictEqual((yield* agent.withdraw(b!))._tag, "Withdrawn")
      const cancelled = yield* agent.cancel("user")
      assert.deepStrictEqual(cancelled.discarded, [a!])
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* agent.inbox, [])
      const log = yield* agent.log
      assert.deepStrictEqual(log.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : []), ["aborted"])
      assert.strictEqual((yield* agent.receipt(a!))._tag, "discarded")
      yield* assertLogClean(store)
    }).pipe(onCluster()), 60_000)

  it.effect(
    "R246: approvals are listed, answered and run through the cluster; compact logs a compaction",
    () =>
      Effect.gen(function*() {
        const { agent, model, store } = yield* setup
        const events = yield* agent.subscribe
        yield* model.push(deploy, S.textResponse("done"))
        yield* agent.followup(prompt("Deploy"))
        yield* takeUntil(events, (e) => e.type === "agent/approval/requested")
        assert.deepStrictEqual((yield* agent.approvals).map((p) => p.callId), ["call-1"])
        yield* agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" })
        yield* agent.whenIdle
        assert.deepStrictEqual(yield* agent.approvals, [])
        const result = (yield* agent.log).find((e) => e.type === "tool/result")
        assert.include(JSON.stringify(result?.type === "tool/result" ? result.data : undefined), "deployed")
        yield* model.push(S.textResponse("the summary"))
        yield* agent.compact()
        yield* agent.whenIdle
        assert.isTrue((yield* agent.log).some((e) => e.type === "compaction"))
        yield* assertLogClean(store)
      }).pipe(onCluster(withApprovals)),
    60_000
  )
})
