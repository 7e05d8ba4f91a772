/**
 * W1 sequential: one agent, follow-ups sent one at a time, each awaited to idle. Measures throughput and whether a
 * turn's cost grows with the session (first 10 % of turns against the last 10 %), and records the per-turn cost
 * along the session for the chart.
 */
import { finish, mean, prompts, sequentialTurns, tenths, timed, warmUp } from "../Measure.js"
import { servedText } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { throughput, throughputMetrics, turnChecks } from "../Workload.js"

/** How many points the chart gets per runtime. */
const buckets = 40

export const W1: Workload = {
  id: "W1",
  title: "sequential follow-ups",
  description: "one agent, N follow-ups each awaited to idle; 5-token instant replies",
  sizes: { full: 2000, quick: 400, smoke: 5 },
  metrics: [
    ...throughputMetrics,
    { id: "usFirst10", label: "µs/turn, first 10 %", unit: "µs", better: "lower", headline: true },
    { id: "usLast10", label: "µs/turn, last 10 %", unit: "µs", better: "lower", headline: true },
    { id: "growth", label: "growth (last ÷ first 10 %)", unit: "×", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const agent = await runtime.createAgent(servedText)
    const texts = prompts("w1-", n)
    const { cpuUs, elapsedUs, value: durations } = await timed(() => sequentialTurns(agent, texts))
    const transcript = await finish(agent)
    const { first, growth, last } = tenths(durations)
    const width = Math.max(1, Math.floor(n / buckets))
    const series = Array.from(
      { length: Math.floor(n / width) },
      (_, b) => mean(durations.slice(b * width, (b + 1) * width))
    )
    return {
      figures: { ...throughput(n, elapsedUs, cpuUs), usFirst10: first, usLast10: last, growth },
      series,
      checks: turnChecks(transcript, texts)
    }
  }
}
