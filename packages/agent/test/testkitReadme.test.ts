/**
 * The complete example test of the testkit README, kept here (the testkit cannot depend on the agent) so the README
 * stays true.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Schema, TestClock } from "effect"

const weather = AgentTool.make(
  Tool.make("weather", { parameters: { city: Schema.String }, success: Schema.String }),
  { handler: ({ city }) => Effect.as(Effect.sleep("2 seconds"), `${city}: sunny`) }
)

describe("my agent", () => {
  it.scoped("answers with the tool's result, and a steer joins the running turn", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ tools: [weather] })
      const recorder = yield* EventRecorder.make(agent) // subscribed before acting: nothing is missed
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(S.toolCall("weather", { city: "Lisbon" })),
        S.textResponse("It is sunny in Lisbon.")
      )
      yield* agent.followup(Message.make("Weather in Lisbon?"))
      yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "tool/call")
      yield* agent.steer(Message.make("In one sentence, please."))
      yield* TestClock.adjust("2 seconds") // the tool's sleep, on the test clock
      yield* agent.whenIdle

      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.deepStrictEqual(
        log.flatMap((e) => (e.type === "steering/message" ? [e.data.content[0].text] : [])),
        ["In one sentence, please."]
      )
      const trace = yield* recorder.trace
      assert.deepStrictEqual(trace.slice(-3), ["turn/end:completed", "settled:completed", "status:idle"])
      // The model's second request saw the tool result and the steering.
      const requests = yield* (yield* S.ScriptedModel).requests
      assert.deepStrictEqual(requests[1]!.prompt.content.map((m) => m.role), ["user", "assistant", "tool", "user"])
    }).pipe(Effect.provide(S.layer())))
})
