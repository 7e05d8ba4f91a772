/**
 * W4 tool round trip: N turns, each a tool call to a no-op tool followed by a text reply (two model requests per
 * turn), sent one at a time and awaited to idle.
 */
import { finish, prompts, sequentialTurns, timed, warmUp } from "../Measure.js"
import { type AgentOptions, fiveTokens, noopToolName } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { checkEqual, throughput, throughputMetrics, turnChecks } from "../Workload.js"

export const W4: Workload = {
  id: "W4",
  title: "tool round trips",
  description: "N turns of (tool call → no-op tool → 5-token text), sequential",
  sizes: { full: 500, quick: 200, smoke: 3 },
  metrics: [
    ...throughputMetrics,
    { id: "usPerTurn", label: "µs/turn", unit: "µs", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    const options: AgentOptions = {
      tools: true,
      served: true,
      script: ({ index }) => (index % 2 === 0 ? { _tag: "tool-call", name: noopToolName, arguments: "{}" } : fiveTokens)
    }
    if (size !== "smoke") await warmUp(runtime, options)
    const agent = await runtime.createAgent(options)
    const texts = prompts("w4-", n)
    const { cpuUs, elapsedUs } = await timed(() => sequentialTurns(agent, texts))
    const transcript = await finish(agent)
    return {
      figures: { ...throughput(n, elapsedUs, cpuUs), usPerTurn: elapsedUs / n },
      checks: [...turnChecks(transcript, texts), checkEqual("tool results", transcript.toolResults, n)]
    }
  }
}
