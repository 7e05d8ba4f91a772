/**
 * W3 many agents: N agents, each with one completed turn, kept alive. Measures the heap and RSS each idle agent
 * holds after a forced collection, the time to create an agent, and whether a turn costs more while the idle
 * agents are alive than before they existed (each measured on a fresh agent, so the session length is the same).
 */
import { mean, memoryAfterGc, nowUs, prompts, sequentialTurns, warmUp } from "../Measure.js"
import type { BenchAgent } from "../Runtime.js"
import { servedText } from "../Runtime.js"
import type { Check, Workload } from "../Workload.js"
import { check } from "../Workload.js"

/** Turns measured on the probe agent, before and after the idle agents exist. */
const probeTurns = (n: number) => Math.min(200, Math.max(3, n / 5))

/** Agents made, run one turn and disposed before the measure, so creating one runs compiled code. */
const creationWarmUp = 100

export const W3: Workload = {
  id: "W3",
  title: "many idle agents",
  description: "N agents with one completed turn each, kept alive; memory after forced GC, creation time, turn cost",
  sizes: { full: 1000, quick: 300, smoke: 5 },
  metrics: [
    { id: "heapPerAgentKB", label: "heap per idle agent", unit: "KB", better: "lower", headline: true },
    { id: "rssPerAgentKB", label: "RSS per idle agent", unit: "KB", better: "lower" },
    { id: "usCreate", label: "µs to create an agent", unit: "µs", better: "lower", headline: true },
    { id: "usTurnNone", label: "µs/turn, no idle agents", unit: "µs", better: "lower" },
    { id: "usTurnAlive", label: "µs/turn, N idle agents alive", unit: "µs", better: "lower" },
    { id: "aliveRatio", label: "turn cost alive ÷ none", unit: "×", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") {
      await warmUp(runtime)
      // Creation is warmed too, for every runtime: code first optimised while the N agents are made would be charged
      // to them (its compiled code and feedback are heap), ≈ 1.5–3 KB an agent on Harness before this.
      for (let i = 0; i < creationWarmUp; i++) {
        const agent = await runtime.createAgent(servedText)
        await agent.followUp(`warm-up agent ${i}`)
        await agent.waitIdle()
        await agent.dispose()
      }
    }
    const probe = async (label: string) => {
      const agent = await runtime.createAgent(servedText)
      const durations = await sequentialTurns(agent, prompts(label, probeTurns(n)))
      await agent.dispose()
      return mean(durations)
    }
    const usTurnNone = await probe("probe-none-")
    const before = await memoryAfterGc()
    const agents: Array<BenchAgent> = []
    let creating = 0
    for (let i = 0; i < n; i++) {
      const start = nowUs()
      const agent = await runtime.createAgent(servedText)
      creating += nowUs() - start
      await agent.followUp(`agent ${i}`)
      await agent.waitIdle()
      agents.push(agent)
    }
    const after = await memoryAfterGc()
    const usTurnAlive = await probe("probe-alive-")
    const checks: Array<Check> = []
    let wellFormed = 0
    for (const [i, agent] of agents.entries()) {
      const transcript = await agent.transcript()
      if (
        transcript.completedTurns === 1 && transcript.textReplies === 1 && transcript.prompts.length === 1 &&
        transcript.prompts[0] === `agent ${i}`
      ) wellFormed++
    }
    checks.push(check("agents with exactly their one turn and reply", wellFormed === n, `${wellFormed} of ${n}`))
    for (const agent of agents) await agent.dispose()
    return {
      figures: {
        heapPerAgentKB: (after.heap - before.heap) / n / 1024,
        rssPerAgentKB: (after.rss - before.rss) / n / 1024,
        usCreate: creating / n,
        usTurnNone,
        usTurnAlive,
        aliveRatio: usTurnAlive / usTurnNone
      },
      checks
    }
  }
}
