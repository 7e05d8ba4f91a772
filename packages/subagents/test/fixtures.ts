/**
 * What the subagent tests share: a stored session's events, the child a parent's call spawned, and a child whose
 * first step waits on a gate the test opens.
 */
import { Tool } from "@effect/ai"
import { assert } from "@effect/vitest"
import { type Agent, AgentTool } from "@harness/agent"
import type { Ids } from "@harness/domain"
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
