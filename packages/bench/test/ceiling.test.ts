/**
 * The shape's ceiling (ADR 0057) is a measuring stick only if it does the work Harness does: for the same W1 turns
 * (five-token replies) and W4 turns (a no-op tool call, then five tokens), queued one by one and in a burst, its log
 * holds every fact Harness's log holds, of the same type and in the same order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { AgentOptions, BenchRuntime } from "../src/Runtime.js"
import { fiveTokens, noopToolName } from "../src/Runtime.js"
import * as Ceiling from "../src/runtimes/ceiling.js"
import * as Harness from "../src/runtimes/harness.js"

const w1: AgentOptions = { script: () => fiveTokens }
const w4: AgentOptions = {
  tools: true,
  script: ({ index }) => (index % 2 === 0 ? { _tag: "tool-call", name: noopToolName, arguments: "{}" } : fiveTokens)
}

/** Three turns awaited one by one, then three queued in one burst; the log's entry types and the transcript. */
const logOf = (runtime: BenchRuntime, options: AgentOptions) =>
  Effect.promise(async () => {
    const agent = await runtime.createAgent(options)
    for (const text of ["a", "b", "c"]) {
      await agent.followUp(text)
      await agent.waitIdle()
    }
    await agent.followUpAll(["d", "e", "f"])
    await agent.waitIdle()
    const transcript = await agent.transcript()
    await agent.dispose()
    return transcript
  })

describe("the shape's ceiling", () => {
  for (const [name, options] of [["W1", w1], ["W4", w4]] as const) {
    it.live(`logs every fact Harness logs for ${name} turns, in Harness's order`, () =>
      Effect.gen(function*() {
        const harness = yield* logOf(yield* Effect.promise(() => Harness.make()), options)
        const ceiling = yield* logOf(yield* Effect.promise(() => Ceiling.make()), options)
        assert.isAbove(harness.types?.length ?? 0, 6 * 10, "Harness logged the turns")
        assert.deepStrictEqual(ceiling.types, harness.types)
        assert.deepStrictEqual(ceiling.prompts, ["a", "b", "c", "d", "e", "f"])
        assert.deepStrictEqual(
          [ceiling.completedTurns, ceiling.textReplies, ceiling.toolResults],
          [harness.completedTurns, harness.textReplies, harness.toolResults]
        )
      }))
  }
})
