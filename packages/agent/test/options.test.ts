/**
 * The agent's options are validated by a Schema at creation: a bad option fails `Agent.make` with an
 * `AgentConfigError` whose `option` names it and whose message says what is expected; nothing starts.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Schema } from "effect"

const tool = (name: string) => AgentTool.make(Tool.make(name), { handler: () => Effect.void })

describe("options (a Schema at creation)", () => {
  it.scoped("each bad option is refused with an AgentConfigError naming it", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Agent.Options, string, string]> = [
        [{ maxParallelToolCalls: 0 }, "maxParallelToolCalls", "positive integer"],
        [{ maxParallelToolCalls: 2.5 }, "maxParallelToolCalls", "got 2.5"],
        [{ model: "" }, "model", "non-empty route label"],
        // A caller without types can pass anything: it is refused, not trusted.
        [{ provider: 42 as unknown as string }, "provider", "string"],
        [{ restoredInbox: "later" as unknown as "wake" }, "restoredInbox", "\"wake\" or \"park\", got \"later\""],
        [{ tools: [tool("read file")] }, "tools", "tool name \"read file\" is invalid"],
        [{ tools: [tool("ls"), tool("cat"), tool("ls")] }, "tools", "two tools are named \"ls\""]
      ]
      for (const [options, option, text] of cases) {
        const error = yield* Effect.flip(Agent.make(options))
        assert.strictEqual(error._tag, "AgentConfigError")
        assert.strictEqual(error.reason, "InvalidOption")
        assert.strictEqual(error.option, option, JSON.stringify(options))
        assert.include(error.message, text)
      }
      // A tool whose parameter schema cannot be advertised as JSON (a NaN in it) is refused for that reason.
      const stringly = AgentTool.make(
        Tool.make("stringly").setParameters(
          Schema.Struct({}).annotations({ jsonSchema: { type: "object", default: Number.NaN } })
        ),
        { handler: () => Effect.void }
      )
      const unusable = yield* Effect.flip(Agent.make({ tools: [stringly] }))
      assert.deepStrictEqual([unusable.reason, unusable.option], ["UnusableToolSchema", "tools"])
      assert.include(unusable.message, "tool \"stringly\" has a parameter schema that is not a JSON object schema")
      // Valid options build an agent.
      const agent = yield* Agent.make({
        maxParallelToolCalls: 1,
        model: "m",
        restoredInbox: "park",
        tools: [tool("ls")]
      })
      assert.strictEqual(yield* agent.status, "idle")
    }).pipe(Effect.provide(S.layer())))
})
