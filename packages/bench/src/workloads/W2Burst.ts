/**
 * W2 burst: N follow-ups accepted in one synchronous burst, then one wait for idle. Measures queued-turn
 * throughput and verifies the turns ran in the order they were sent.
 */
import { finish, nowUs, prompts, timed, warmUp } from "../Measure.js"
import { servedText } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { throughput, throughputMetrics, turnChecks } from "../Workload.js"

export const W2: Workload = {
  id: "W2",
  title: "burst of follow-ups",
  description: "N follow-ups accepted at once, then wait for idle; FIFO order verified in the log",
  sizes: { full: 2000, quick: 400, smoke: 5 },
  metrics: [
    ...throughputMetrics,
    { id: "usAccept", label: "µs to accept one follow-up", unit: "µs", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const agent = await runtime.createAgent(servedText)
    const texts = prompts("w2-", n)
    // The value: how long accepting the burst took, within the timed run.
    const { cpuUs, elapsedUs, value: acceptUs } = await timed(async () => {
      const start = nowUs()
      await agent.followUpAll(texts)
      const accepted = nowUs() - start
      await agent.waitIdle()
      return accepted
    })
    const transcript = await finish(agent)
    return {
      figures: { ...throughput(n, elapsedUs, cpuUs), usAccept: acceptUs / n },
      checks: turnChecks(transcript, texts)
    }
  }
}
