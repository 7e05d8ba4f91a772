/**
 * The agent appends what it builds itself without a schema pass (`SessionLog.appendTrusted`, ADR 0023). These tests
 * keep that trust honest: every event of a session that goes through every trusted path (turn and step records,
 * prompts, steering, idle and in-turn injection, a hook's additional context, a tool's context, stream chunks, the
 * model's messages once checked by hand, a cancel, and a cancel's closing records with owed calls) is exactly what the
 * schema would have let through, and what comes from outside is still refused.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message, MessageSource, SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Either, Schema, TestClock } from "effect"

const strict = Schema.validateEither(SessionEvent.SessionEvent, { onExcessProperty: "error" })

/** Each event that the schema would refuse, or that does not survive JSON unchanged, as a readable line. */
const untrustworthy = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  log.flatMap((event) => {
    const checked = strict(event)
    if (Either.isLeft(checked)) return [`seq ${event.seq} (${event.type}): ${checked.left.message}`]
    try {
      assert.deepStrictEqual(JSON.parse(JSON.stringify(event)), event)
      return []
    } catch {
      return [`seq ${event.seq} (${event.type}) does not survive JSON unchanged`]
    }
  })

const annotate = AgentTool.make(
  Tool.make("annotate", { description: "adds a note", success: Schema.String }),
  {
    handler: () =>
      Effect.succeed(AgentTool.outcome("noted", { contexts: [Message.make("a note", MessageSource.plugin("notes"))] }))
  }
)

describe("trusted appends (ADR 0023)", () => {
  it.scoped("every event the agent appends on its trusted paths is one the schema accepts, unchanged by JSON", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({
        tools: [annotate],
        hooks: {
          promptSubmit: (_, next) =>
            Effect.map(next, (decision) =>
              decision.kind === "allow"
                ? { ...decision, additionalContexts: [Message.make("hook context", MessageSource.plugin("hook"))] }
                : decision)
        }
      })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.delayed(100, S.toolCallResponse(S.toolCall("annotate", {}, { id: "c1" }))),
        S.reply(S.reasoning("thinking"), S.text("done")),
        S.textResponse("second"),
        S.hanging(S.text("never"))
      )
      const rec = yield* EventRecorder.make(agent)
      yield* agent.inject(Message.make("idle context", MessageSource.plugin("ctx")))
      yield* agent.followup(Message.make("first"))
      yield* TestClock.adjust(0)
      yield* agent.steer(Message.make("steer me"))
      yield* agent.inject(Message.make("in-turn context", MessageSource.plugin("ctx")))
      yield* TestClock.adjust(100)
      yield* agent.whenIdle
      yield* agent.followup(Message.make("second"))
      yield* agent.whenIdle
      yield* agent.followup(Message.make("third"))
      yield* rec.waitFor((e) =>
        e.type === "session/event" && e.event.type === "assistant/chunk" && e.event.data.turn === 3
      )
      yield* agent.cancel("user")
      yield* agent.whenIdle
      const log = yield* agent.log
      const types = new Set(log.map((e) => e.type))
      for (
        const type of [
          "turn/start",
          "turn/end",
          "step/start",
          "step/end",
          "user/message",
          "steering/message",
          "assistant/chunk",
          "tool/result"
        ] as const
      ) assert.isTrue(types.has(type), `the session never logged ${type}`)
      assert.isTrue(log.some((e) => e.type === "turn/end" && e.data.reason.kind === "aborted"))
      assert.deepStrictEqual(untrustworthy(log), [])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a cancel's close (a finished call, aborted calls, staged context) is what the schema accepts", () =>
    Effect.gen(function*() {
      // `wait` runs until the cancel; `annotate` finishes first but waits behind it (model order); `note` is
      // exclusive, so it is never dispatched while the other two run.
      const wait = AgentTool.make(Tool.make("wait", { success: Schema.String }), {
        handler: () => Effect.never,
        parallel: true
      })
      const parallelAnnotate = AgentTool.make(Tool.make("annotate", { success: Schema.String }), {
        handler: () =>
          Effect.succeed(AgentTool.outcome("noted", { contexts: [Message.make("a note", MessageSource.plugin("n"))] })),
        parallel: true
      })
      const note = AgentTool.make(Tool.make("note", { success: Schema.String }), {
        handler: () => Effect.succeed("never runs")
      })
      const agent = yield* Agent.make({ tools: [wait, parallelAnnotate, note] })
      const model = yield* S.ScriptedModel
      yield* model.push(S.toolCallResponse(
        S.toolCall("wait", {}, { id: "c1" }),
        S.toolCall("annotate", {}, { id: "c2" }),
        S.toolCall("note", {}, { id: "c3" })
      ))
      const rec = yield* EventRecorder.make(agent)
      yield* agent.followup(Message.make("go"))
      yield* rec.waitFor((e) => e.type === "session/event" && e.event.type === "tool/call")
      yield* TestClock.adjust(0)
      yield* agent.inject(Message.make("staged context", MessageSource.plugin("ctx")))
      yield* agent.cancel("user")
      yield* agent.whenIdle
      const log = yield* agent.log
      const results = new Map<string, SessionEvent.SessionEventOf<"tool/result">["data"]>(
        log.flatMap((e) => e.type === "tool/result" ? [[e.data.callId, e.data] as const] : [])
      )
      assert.strictEqual(results.get("c1")?.error?.code, "ABORTED")
      assert.deepStrictEqual(results.get("c2")?.content, [{ type: "text", text: "noted" }])
      assert.strictEqual(results.get("c3")?.error?.code, "ABORTED_BEFORE_DISPATCH")
      // A default cancel logs staged context and the finished call's context before `step/end` (R68).
      const logged = (text: string) =>
        log.some((e) => e.type === "user/message" && JSON.stringify(e.data.content).includes(text))
      assert.isTrue(logged("staged context"), "the staged context was not logged by the close")
      assert.isTrue(logged("a note"), "the finished call's context was not logged by the close")
      assert.isTrue(log.some((e) => e.type === "turn/end" && e.data.reason.kind === "aborted"))
      assert.deepStrictEqual(untrustworthy(log), [])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.effect("an invalid event from outside the agent is still refused by the log with a typed error", () =>
    Effect.gen(function*() {
      const log = yield* SessionLog.memory()
      const error = yield* Effect.flip(log.append(
        // What a careless caller could hand over: a message with no content.
        { type: "user/message", data: { content: [], source: MessageSource.user } } as never
      ))
      assert.strictEqual(error._tag, "SessionLogError")
      assert.strictEqual(error.reason, "invalid-event")
      assert.include(error.message, "user/message")
      assert.deepStrictEqual(yield* log.events, [])
    }))
})
