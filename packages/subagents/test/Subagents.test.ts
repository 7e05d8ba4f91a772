/**
 * Subagents in one process over a memory store: a parent whose scripted model spawns two children at once; the test
 * steers one mid-turn and cancels the other through `Subagents`, and checks all three logs.
 */
import { LanguageModel, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import { Ids, Message } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Ref, Schema, Stream } from "effect"
import * as Subagents from "../src/Subagents.js"
import * as SubagentTool from "../src/SubagentTool.js"
import { childOf, gate, gatedChild, stored, workerParent } from "./fixtures.js"

const textOf = (event: SessionEvent.SessionEvent): string =>
  event.type === "user/message" || event.type === "steering/message" || event.type === "tool/result"
    ? event.data.content.map((block) => block.text).join("")
    : ""

const outcomeOf = (events: ReadonlyArray<SessionEvent.SessionEvent>, callId: string) => {
  const result = events.find((event) => event.type === "tool/result" && event.data.callId === callId)
  assert.isDefined(result)
  return Schema.decodeUnknownSync(Schema.parseJson(Subagents.Outcome))(textOf(result!))
}

describe("Subagents", () => {
  it.scoped(
    "R175, R176, R177, R178: two children at once; one steered mid-turn, one cancelled; three well-formed logs",
    () =>
      Effect.gen(function*() {
        const { release: aRelease, script: scriptA, started: aStarted, tool: researcher } = yield* gatedChild(
          ["A: done, tests checked too"],
          { name: "researcher", description: "researches", system: "You research.", model: "child-a" }
        )
        const bStarted = yield* Deferred.make<void>()
        const [modelB] = yield* S.make([S.toolCallResponse(S.toolCall("block", {}, { id: "k" }))])
        const reviewer = SubagentTool.make({
          name: "reviewer",
          description: "reviews",
          languageModel: modelB,
          tools: [gate("block", bStarted)]
        })
        const subagents = yield* Subagents.make()
        const parent = yield* Agent.make({ tools: [researcher, reviewer], session: yield* SessionLog.make() }).pipe(
          Effect.provideService(Subagents.Subagents, subagents)
        )
        yield* parent.followup(Message.make("split the work"))
        yield* Deferred.await(aStarted)
        yield* Deferred.await(bStarted)

        const a = yield* childOf(parent, "a")
        const b = yield* childOf(parent, "b")
        assert.deepStrictEqual(
          (yield* subagents.list).map((child) => [child.id, child.agent, child.state]).sort(),
          [[a, "researcher", "running"], [b, "reviewer", "running"]]
        )
        // Steer A while its first step's tool runs; cancel B while its tool blocks.
        const childA = yield* subagents.get(a)
        yield* childA.steer(Message.make("also check the tests"))
        yield* Deferred.succeed(aRelease, undefined)
        const childB = yield* subagents.get(b)
        yield* childB.cancel("user")
        yield* parent.whenIdle

        const parentLog = yield* parent.log
        assert.deepStrictEqual(outcomeOf(parentLog, "a"), {
          session: a,
          agent: "researcher",
          status: "completed",
          answer: "A: done, tests checked too"
        })
        assert.deepStrictEqual(outcomeOf(parentLog, "b"), {
          session: b,
          agent: "reviewer",
          status: "cancelled",
          answer: "",
          reason: "its turn was aborted"
        })

        // The steering landed in A's log in its turn, before its next step, and that step's request carried it.
        const aLog = yield* stored(a)
        const steering = aLog.findIndex((event) => event.type === "steering/message")
        assert.strictEqual(textOf(aLog[steering]!), "also check the tests")
        const nextStep = aLog.findIndex((event, i) => i > steering && event.type === "step/start")
        assert.isAbove(nextStep, steering)
        assert.deepStrictEqual(aLog[nextStep]!.type === "step/start" && aLog[nextStep]!.data, { turn: 1, step: 2 })
        const requests = yield* scriptA.requests
        assert.include(JSON.stringify(requests[1]!.prompt.content), "also check the tests")
        assert.notInclude(JSON.stringify(requests[0]!.prompt.content), "also check the tests")

        // The child's prompt carries its durable link to the parent.
        const prompt = aLog.find((event) => event.type === "user/message")
        assert.deepStrictEqual(prompt?.type === "user/message" && prompt.data.source, {
          kind: "subagent",
          parent: parent.id,
          callId: Ids.ToolCallId.make("a"),
          agent: "researcher"
        })
        const bLog = yield* stored(b)
        assert.deepStrictEqual(
          bLog.filter((event) => event.type === "turn/end").map((event) =>
            event.type === "turn/end" && event.data.reason
          ),
          [{ kind: "aborted" }]
        )
        for (const log of [parentLog, aLog, bLog]) assert.deepStrictEqual(LogCheck.checkLog(log), [])
        // Both runs are over: the handles are gone, the list keeps their outcomes.
        assert.deepStrictEqual((yield* subagents.list).map((child) => child.state).sort(), ["cancelled", "completed"])
        const gone = yield* Effect.flip(subagents.get(a))
        assert.strictEqual(gone.reason, "finished")
      }).pipe(
        Effect.provide(S.layer([
          S.toolCallResponse(
            S.toolCall("researcher", { task: "research it" }, { id: "a" }),
            S.toolCall("reviewer", { task: "review it" }, { id: "b" })
          ),
          S.textResponse("both back")
        ])),
        Effect.provide(SessionStore.layerMemory)
      )
  )

  it.scoped("R179: the parent's cancel cancels a child under `interrupt` and lets it finish under `finish`", () =>
    Effect.gen(function*() {
      const run = (onCancel: "interrupt" | "finish") =>
        Effect.gen(function*() {
          const { release, started, tool } = yield* gatedChild(["finished anyway"], {
            name: "worker",
            description: "works",
            onCancel
          })
          const subagents = yield* Subagents.make()
          const parent = yield* workerParent(tool, subagents)
          yield* Deferred.await(started)
          yield* parent.cancel("user")
          if (onCancel === "finish") yield* Deferred.succeed(release, undefined)
          yield* parent.whenIdle
          const child = yield* childOf(parent, "c")
          // A `finish` call ends with its real result once the child is done: wait for the child's run to end.
          const childLog = yield* stored(child)
          const parentLog = yield* parent.log
          for (const log of [parentLog, childLog]) assert.deepStrictEqual(LogCheck.checkLog(log), [])
          return { parentLog, childLog, children: yield* subagents.list }
        })

      const interrupted = yield* run("interrupt")
      const result = interrupted.parentLog.find((event) => event.type === "tool/result")
      assert.strictEqual(result?.type === "tool/result" && result.data.error?.code, "ABORTED")
      assert.deepStrictEqual(
        interrupted.childLog.flatMap((event) => event.type === "turn/end" ? [event.data.reason] : []),
        [{ kind: "aborted" }]
      )
      assert.deepStrictEqual(interrupted.children.map((child) => child.state), ["cancelled"])

      const finished = yield* run("finish")
      assert.deepStrictEqual(outcomeOf(finished.parentLog, "c").status, "completed")
      assert.deepStrictEqual(outcomeOf(finished.parentLog, "c").answer, "finished anyway")
      assert.deepStrictEqual(
        finished.childLog.flatMap((event) => event.type === "turn/end" ? [event.data.reason] : []),
        [{ kind: "completed" }]
      )
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.scoped("R180: a child's tool approvals go to the parent's approval hook, which sees the child's agent", () =>
    Effect.gen(function*() {
      const asked: Array<[string, string]> = []
      const [model] = yield* S.make([
        S.toolCallResponse(S.toolCall("danger", {}, { id: "d1" })),
        S.toolCallResponse(S.toolCall("danger", {}, { id: "d2" })),
        S.textResponse("done")
      ])
      const danger = AgentTool.make(Tool.make("danger", { success: Schema.String }), {
        handler: () => Effect.succeed("did it"),
        approval: "required"
      })
      const allowed = yield* Ref.make(1)
      const subagents = yield* Subagents.make({
        approval: ({ agent, callId }) => {
          asked.push([agent.id, callId])
          return Ref.getAndUpdate(allowed, (n) => n - 1).pipe(
            Effect.map((n) => n > 0 ? { kind: "allow" as const } : { kind: "deny" as const, reason: "not twice" })
          )
        }
      })
      const tool = SubagentTool.make({ name: "worker", description: "works", languageModel: model, tools: [danger] })
      const parent = yield* workerParent(tool, subagents)
      yield* parent.whenIdle
      const child = yield* childOf(parent, "c")
      assert.deepStrictEqual(asked, [[child, "d1"], [child, "d2"]])
      const results = (yield* stored(child)).flatMap((event) =>
        event.type === "tool/result" ? [[event.data.callId, event.data.error?.code ?? textOf(event)]] : []
      )
      assert.deepStrictEqual(results, [["d1", "did it"], ["d2", "DENIED"]])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.scoped("R182: a background child answers `started` at once; its outcome arrives in the parent as context", () =>
    Effect.gen(function*() {
      const { release, started, tool } = yield* gatedChild(["background answer"], {
        name: "scout",
        description: "scouts",
        background: true
      })
      const subagents = yield* Subagents.make()
      const [parentModel, parentScript] = yield* S.make([
        S.toolCallResponse(S.toolCall("scout", { task: "look around" }, { id: "s" })),
        S.textResponse("I will wait for the scout")
      ])
      const parent = yield* Agent.make({ tools: [tool], session: yield* SessionLog.make() }).pipe(
        Effect.provideService(Subagents.Subagents, subagents),
        Effect.provideService(LanguageModel.LanguageModel, parentModel)
      )
      yield* parent.followup(Message.make("go"))
      yield* Deferred.await(started)
      yield* parent.whenIdle
      const child = yield* childOf(parent, "s")
      // The parent's turn is over while the child still works.
      assert.deepStrictEqual(outcomeOf(yield* parent.log, "s"), {
        session: child,
        agent: "scout",
        status: "started",
        answer: ""
      })
      assert.deepStrictEqual((yield* subagents.list).map((c) => c.state), ["running"])
      const events = yield* parent.subscribe
      yield* Deferred.succeed(release, undefined)
      yield* Stream.fromQueue(events).pipe(
        Stream.filter((event) =>
          event.type === "session/event" && event.event.type === "user/message" &&
          event.event.data.source.kind === "plugin"
        ),
        Stream.runHead
      )
      const log = yield* parent.log
      const context = log.at(-1)
      assert.deepStrictEqual(context?.type === "user/message" && { ...context.data, messageId: undefined }, {
        messageId: undefined,
        content: [{ type: "text", text: `[subagent scout · session ${child} · completed]\nbackground answer` }],
        source: { kind: "plugin", plugin: `subagent:${child}` }
      })
      // Injected context never runs the parent's model.
      assert.strictEqual(yield* parentScript.requestCount, 2)
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.deepStrictEqual(LogCheck.checkLog(yield* stored(child)), [])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.scoped("R176, R177: a followup sent to a running child is part of its work; an item withdrawn from its inbox never runs", () =>
    Effect.gen(function*() {
      const { release, script, started, tool } = yield* gatedChild(["first part done", "summary: all done"], {
        name: "worker",
        description: "works"
      })
      const subagents = yield* Subagents.make()
      const parent = yield* workerParent(tool, subagents)
      yield* Deferred.await(started)
      const id = yield* childOf(parent, "c")
      const child = yield* subagents.get(id)
      yield* child.followup(Message.make("then summarise"))
      const dropped = yield* child.followup(Message.make("and translate it"))
      const withdrawn = yield* child.withdraw(dropped)
      assert.strictEqual(withdrawn._tag, "Withdrawn")
      yield* Deferred.succeed(release, undefined)
      yield* parent.whenIdle

      assert.deepStrictEqual(outcomeOf(yield* parent.log, "c"), {
        session: id,
        agent: "worker",
        status: "completed",
        answer: "summary: all done"
      })
      const childLog = yield* stored(id)
      assert.deepStrictEqual(
        childLog.flatMap((event) => event.type === "user/message" ? [textOf(event)] : []),
        ["work", "then summarise"]
      )
      assert.strictEqual(yield* script.requestCount, 3)
      assert.deepStrictEqual(LogCheck.checkLog(childLog), [])
      const unknown = yield* Effect.flip(subagents.get(Ids.SessionId.make("nobody")))
      assert.strictEqual(unknown.reason, "unknown")
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.scoped("R175: a provider that reuses a call id across steps still gets one child per call", () =>
    Effect.gen(function*() {
      const [model] = yield* S.make([S.textResponse("first"), S.textResponse("second")])
      const tool = SubagentTool.make({ name: "worker", description: "works", languageModel: model })
      const subagents = yield* Subagents.make()
      const parent = yield* Agent.make({ tools: [tool], session: yield* SessionLog.make() }).pipe(
        Effect.provideService(Subagents.Subagents, subagents),
        Effect.provide(S.layer([
          S.toolCallResponse(S.toolCall("worker", { task: "one" }, { id: "same" })),
          S.toolCallResponse(S.toolCall("worker", { task: "two" }, { id: "same" })),
          S.textResponse("done")
        ]))
      )
      yield* parent.followup(Message.make("go"))
      yield* parent.whenIdle
      const log = yield* parent.log
      const outcomes = log.flatMap((event) =>
        event.type === "tool/result"
          ? [Schema.decodeUnknownSync(Schema.parseJson(Subagents.Outcome))(textOf(event))]
          : []
      )
      assert.deepStrictEqual(outcomes.map((outcome) => [outcome.status, outcome.answer]), [
        ["completed", "first"],
        ["completed", "second"]
      ])
      assert.notStrictEqual(outcomes[0]!.session, outcomes[1]!.session)
      assert.deepStrictEqual(
        (yield* Subagents.tree(parent.id)).children.map((child) => child.id),
        outcomes.map((outcome) => outcome.session)
      )
    }).pipe(Effect.provide(SessionStore.layerMemory)))
})
