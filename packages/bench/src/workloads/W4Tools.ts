/**
 * W4 tool round trip: N turns, each a tool call to a no-op tool followed by a text reply (two model requests per
 * turn), sent one at a time and awaited to idle.
 */
import { cpuUs, nowUs, prompts, sequentialTurns, warmUp } from "../Measure.js"
import { type AgentOptions, fiveTokens, noopToolName } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { checkEqual, checkOrder } from "../Workload.js"

export const W4: Workload = {
  id: "W4",
  title: "tool round trips",
  description: "N turns of (tool call → no-op tool → 5-token text), sequential",
  sizes: { full: 500, quick: 200, smoke: 3 },
  metrics: [
    { id: "turnsPerSecond", label: "turns/s", unit: "turns/s", better: "higher", headline: true },
    { id: "cpuPerTurn", label: "CPU µs/turn", unit: "µs", better: "lower", headline: true },
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
    const cpuStart = cpuUs()
    const start = nowUs()
    await sequentialTurns(agent, texts)
    const elapsed = nowUs() - start
    const cpu = cpuUs() - cpuStart
    const transcript = await agent.transcript()
    await agent.dispose()
    return {
      figures: { turnsPerSecond: n / (elapsed / 1e6), cpuPerTurn: cpu / n, usPerTurn: elapsed / n },
      checks: [
        checkEqual("completed turns", transcript.completedTurns, n),
        checkEqual("tool results", transcript.toolResults, n),
        checkEqual("text replies", transcript.textReplies, n),
        checkOrder("prompts in FIFO order", transcript.prompts, texts)
      ]
    }
  }
}
