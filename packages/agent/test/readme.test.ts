/**
 * The agent README's code blocks that claim to be complete: each is a file under `examples/`, compiled
 * by `tsc -b`; this test checks the README shows that file verbatim and runs it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { readme } from "../examples/readme-tool.js"
import { tracedTurn } from "../examples/readme-tracing.js"

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8")

/** The first `ts` block after a heading of the README. */
const blockAfter = (heading: string): string => {
  const text = read("../README.md")
  const from = text.indexOf(`\n${heading}\n`)
  assert.isAtLeast(from, 0, `README has no "${heading}"`)
  const open = text.indexOf("```ts\n", from)
  return text.slice(open + "```ts\n".length, text.indexOf("```\n", open + 6))
}

describe("agent README", () => {
  it("the Tools example is examples/readme-tool.ts, verbatim", () => {
    assert.strictEqual(blockAfter("## Tools"), read("../examples/readme-tool.ts"))
  })

  it.scoped("the Tools example runs: the model calls read_readme and reads the file", () =>
    Effect.gen(function*() {
      const model = yield* S.ScriptedModel
      yield* model.push(S.toolCallResponse(S.toolCall("read_readme", {})), S.textResponse("done"))
      const agent = yield* Agent.make({ tools: [readme] })
      yield* agent.followup(Message.make("read the readme"))
      yield* agent.whenIdle
      const results = (yield* agent.log).flatMap((event) => (event.type === "tool/result" ? [event.data] : []))
      assert.strictEqual(results.length, 1)
      const result = results[0]!
      assert.isFalse(result.isError, JSON.stringify(result))
      assert.match(result.content.map((block) => block.text).join(""), /^# @harness\/agent|^# /)
    }).pipe(Effect.provide(S.layer())))

  it("the Tracing example is examples/readme-tracing.ts, verbatim", () => {
    assert.strictEqual(blockAfter("## Tracing"), read("../examples/readme-tracing.ts"))
  })

  it.effect("the Tracing example runs: the turn's spans reach the in-memory exporter, nested", () =>
    Effect.gen(function*() {
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("hi"))
      const spans = yield* tracedTurn
      const parentOf = (name: string) => {
        const span = spans.find((s) => s.name === name)
        assert.isDefined(span, `no ${name} span`)
        return spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId)?.name
      }
      assert.isUndefined(parentOf("Agent.turn"))
      assert.strictEqual(parentOf("Agent.step"), "Agent.turn")
      assert.strictEqual(parentOf("Agent.request"), "Agent.step")
      assert.strictEqual(spans.find((s) => s.name === "Agent.turn")?.attributes["harness.turn.outcome"], "completed")
    }).pipe(Effect.provide(S.layer())))
})
