/**
 * An offline session: a scripted model, one tool, and a user who talks to the agent while it works — a follow-up,
 * steering while a tool runs, injected context, then a cancel that keeps the inbox. Prints the live events and the
 * durable log. Run with `npm run demo`.
 */
import { Tool } from "@effect/ai"
import { Message, type SessionEvent } from "@harness/domain"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Schema } from "effect"
import { Agent, AgentTool } from "../src/index.js"

const lookup = AgentTool.make(
  Tool.make("lookup", {
    description: "Looks a word up (slowly)",
    parameters: { word: Schema.String },
    success: Schema.String
  }),
  {
    handler: ({ word }) => Effect.as(Effect.sleep("300 millis"), `${word}: a small domesticated carnivore`),
    parallel: true
  }
)

/** Collapses runs of equal lines into `line ×n`. */
const collapse = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  let run = 0
  lines.forEach((line, i) => {
    run++
    if (lines[i + 1] !== line) {
      out.push(run > 1 ? `${line} ×${run}` : line)
      run = 0
    }
  })
  return out
}

const describe = (event: SessionEvent.SessionEvent): string => {
  switch (event.type) {
    case "user/message":
    case "steering/message":
      return `${event.type} (${event.data.source.kind}): ${event.data.content.map((b) => b.text).join("")}`
    case "assistant/message":
      return `${event.type}: ${
        event.data.content.map((b) => (b.type === "tool-call" ? `[call ${b.name} ${b.arguments}]` : b.text)).join(" ")
      }`
    case "tool/result":
      return `${event.type}: ${event.data.content.map((b) => b.text).join("")}`
    case "turn/end":
      return `${event.type} (${event.data.reason.kind})`
    default:
      return event.type
  }
}

const program = Effect.gen(function*() {
  const agent = yield* Agent.make({ model: "scripted", system: "You are a helpful, terse assistant.", tools: [lookup] })
  const recorder = yield* EventRecorder.make(agent)
  const model = yield* S.ScriptedModel
  yield* model.push(
    S.toolCallResponse(S.text("Let me look that up."), S.toolCall("lookup", { word: "cat" })),
    S.textResponse("A cat is a small domesticated carnivore. (And yes, briefly.)"),
    S.delayed("1 second", S.textResponse("This answer is never finished: the user cancels it.")),
    S.textResponse("Dogs are loyal companions.")
  )

  yield* agent.followup(Message.make("What is a cat?"))
  yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "tool/call")
  yield* agent.steer(Message.make("Keep it brief."))
  yield* agent.inject(Message.make("The user is on a phone.", { kind: "plugin", plugin: "device" }))
  yield* recorder.waitFor((e) => e.type === "agent/settled")

  yield* agent.followup(Message.make("Tell me a long story."))
  yield* agent.followup(Message.make("And what is a dog?"))
  yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "step/start" && e.event.data.turn === 2)
  yield* agent.cancel("user", { keepInbox: true })
  yield* agent.whenIdle

  console.log("Live and durable events, in order (runs of chunks collapsed):")
  console.log(`  ${collapse(yield* recorder.trace).join(" → ")}`)
  console.log("\nThe session log, from which every request was derived:")
  for (const line of collapse((yield* agent.log).map(describe))) console.log(`  ${line}`)
})

Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(S.layer()))).catch((error) => {
  console.error(error)
  process.exit(1)
})
