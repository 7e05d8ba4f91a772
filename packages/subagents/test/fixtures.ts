/**
 * What the subagent tests share: a stored session's events, the child a parent's call spawned, a child whose first
 * step waits on a gate the test opens, and a parent that calls one `worker` subagent.
 */
import { type LanguageModel, Tool } from "@effect/ai"
import { assert } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { type Ids, Message } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Schema } from "effect"
import * as Subagents from "../src/Subagents.js"
import * as SubagentTool from "../src/SubagentTool.js"

/** A stored session's events, read without disturbing anything. */
export const stored = (id: Ids.SessionId) =>
  Effect.flatMap(SessionLog.open(id, { readOnly: true }), (log) => log.events)

/** The session id of the child the parent's call `callId` spawned (its `tool/call` is in the parent's log). */
export const childOf = (parent: Agent.Service, callId: string) =>
  Effect.map(parent.log, (events) => {
    const call = events.findLast((event) => event.type === "tool/call" && event.data.callId === callId)
    assert.isDefined(call, `no tool/call ${callId}`)
    return Subagents.childIdOf(parent.id, call!.seq)
  })

/** A tool that says it started, then waits for `release` (never, when absent). */
export const gate = (name: string, started: Deferred.Deferred<void>, release?: Deferred.Deferred<void>) =>
  AgentTool.make(Tool.make(name, { success: Schema.String }), {
    handler: () =>
      Deferred.succeed(started, undefined).pipe(
        Effect.zipRight(release === undefined ? Effect.never : Deferred.await(release)),
        Effect.as("released")
      )
  })

/**
 * A subagent tool (`config`, its model and tools aside) whose child first calls `wait` — which says so on
 * `started`, then waits for `release` — and then replies `answers`, one per request; `script` is its model's.
 */
export const gatedChild = (
  answers: ReadonlyArray<string>,
  config: Omit<SubagentTool.Config, "languageModel" | "tools">
) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const [model, script] = yield* S.make([
      S.toolCallResponse(S.toolCall("wait", {}, { id: "w" })),
      ...answers.map((answer) => S.textResponse(answer))
    ])
    const tool = SubagentTool.make({ ...config, languageModel: model, tools: [gate("wait", started, release)] })
    return { tool, started, release, script }
  })

/**
 * A parent agent on a new log with the one subagent tool `tool` (named `worker`), its children going to
 * `subagents`, whose model calls `worker` once (call `c`, task `work`); it has been sent `go`.
 */
export const workerParent = (
  tool: AgentTool.AgentTool<Subagents.Subagents | LanguageModel.LanguageModel>,
  subagents: Subagents.Service
) =>
  Effect.gen(function*() {
    const parent = yield* Agent.make({ tools: [tool], session: yield* SessionLog.make() }).pipe(
      Effect.provideService(Subagents.Subagents, subagents),
      Effect.provide(S.layer([S.toolCallResponse(S.toolCall("worker", { task: "work" }, { id: "c" }))]))
    )
    yield* parent.followup(Message.make("go"))
    return parent
  })
