/**
 * W2 burst: N follow-ups accepted in one synchronous burst, then one wait for idle. Measures queued-turn
 * throughput and verifies the turns ran in the order they were sent.
 */
import { cpuUs, nowUs, prompts, warmUp } from "../Measure.js"
import { servedText } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { checkEqual, checkOrder } from "../Workload.js"

export const W2: Workload = {
  id: "W2",
  title: "burst of follow-ups",
  description: "N follow-ups accepted at once, then wait for idle; FIFO order verified in the log",
  sizes: { full: 2000, quick: 400, smoke: 5 },
  metrics: [
    { id: "turnsPerSecond", label: "turns/s", unit: "turns/s", better: "higher", headline: true },
    { id: "cpuPerTurn", label: "CPU µs/turn", unit: "µs", better: "lower", headline: true },
    { id: "usAccept", label: "µs to accept one follow-up", unit: "µs", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const agent = await runtime.createAgent(servedText)
    const texts = prompts("w2-", n)
    const cpuStart = cpuUs()
    const start = nowUs()
    await agent.followUpAll(texts)
    const accepted = nowUs()
    await agent.waitIdle()
    const elapsed = nowUs() - start
    const cpu = cpuUs() - cpuStart
    const transcript = await agent.transcript()
    await agent.dispose()
    return {
      figures: { turnsPerSecond: n / (elapsed / 1e6), cpuPerTurn: cpu / n, usAccept: (accepted - start) / n },
      checks: [
        checkEqual("completed turns", transcript.completedTurns, n),
        checkEqual("text replies", transcript.textReplies, n),
        checkOrder("prompts in FIFO order", transcript.prompts, texts)
      ]
    }
  }
}
