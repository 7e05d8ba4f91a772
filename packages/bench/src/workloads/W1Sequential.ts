/**
 * W1 sequential: one agent, follow-ups sent one at a time, each awaited to idle. Measures throughput and whether a
 * turn's cost grows with the session (first 10 % of turns against the last 10 %), and records the per-turn cost
 * along the session for the chart.
 */
import { cpuUs, mean, nowUs, prompts, sequentialTurns, tenths, warmUp } from "../Measure.js"
import { servedText } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { checkEqual, checkOrder } from "../Workload.js"

/** How many points the chart gets per runtime. */
const buckets = 40

export const W1: Workload = {
  id: "W1",
  title: "sequential follow-ups",
  description: "one agent, N follow-ups each awaited to idle; 5-token instant replies",
  sizes: { full: 2000, quick: 400, smoke: 5 },
  metrics: [
    { id: "turnsPerSecond", label: "turns/s", unit: "turns/s", better: "higher", headline: true },
    { id: "cpuPerTurn", label: "CPU µs/turn", unit: "µs", better: "lower", headline: true },
    { id: "usFirst10", label: "µs/turn, first 10 %", unit: "µs", better: "lower", headline: true },
    { id: "usLast10", label: "µs/turn, last 10 %", unit: "µs", better: "lower", headline: true },
    { id: "growth", label: "growth (last ÷ first 10 %)", unit: "×", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const agent = await runtime.createAgent(servedText)
    const texts = prompts("w1-", n)
    const cpuStart = cpuUs()
    const start = nowUs()
    const durations = await sequentialTurns(agent, texts)
    const elapsed = nowUs() - start
    const cpu = cpuUs() - cpuStart
    const transcript = await agent.transcript()
    await agent.dispose()
    const { first, growth, last } = tenths(durations)
    const width = Math.max(1, Math.floor(n / buckets))
    const series = Array.from(
      { length: Math.floor(n / width) },
      (_, b) => mean(durations.slice(b * width, (b + 1) * width))
    )
    return {
      figures: { turnsPerSecond: n / (elapsed / 1e6), cpuPerTurn: cpu / n, usFirst10: first, usLast10: last, growth },
      series,
      checks: [
        checkEqual("completed turns", transcript.completedTurns, n),
        checkEqual("text replies", transcript.textReplies, n),
        checkOrder("prompts in FIFO order", transcript.prompts, texts)
      ]
    }
  }
}
