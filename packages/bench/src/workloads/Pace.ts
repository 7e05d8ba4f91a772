/**
 * Realistic pace: the model streams its reply at 50 tokens/s (200 tokens in 4 s, the schedule drift-free), so the
 * runtime's own cost shows as a fraction of a real turn: the CPU time the process spends during the turn, and the
 * wall time the turn takes beyond the model's own streaming time.
 */
import { finish, mean, nowUs, pacedReply, prompts, warmUp } from "../Measure.js"
import type { Workload } from "../Workload.js"
import { check, turnChecks } from "../Workload.js"

const tokensPerSecond = 50

export const Pace: Workload = {
  id: "Pace",
  title: "realistic pace",
  description: "a few turns of 200 tokens streamed at 50 tokens/s; CPU and wall overhead per 4-second turn",
  sizes: { full: 3, quick: 1, smoke: 1 },
  metrics: [
    { id: "cpuMsPerTurn", label: "CPU ms per turn", unit: "ms", better: "lower" },
    { id: "cpuPercent", label: "CPU time ÷ turn time", unit: "%", better: "lower", headline: true },
    { id: "wallOverheadMs", label: "turn time beyond the model's, ms", unit: "ms", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const count = size === "smoke" ? 10 : 200
    const { model, reply } = pacedReply(count, tokensPerSecond)
    const agent = await runtime.createAgent({ script: () => reply })
    const texts = prompts("pace-", n)
    const cpu: Array<number> = []
    const overhead: Array<number> = []
    const percent: Array<number> = []
    for (const text of texts) {
      const cpuStart = process.cpuUsage()
      const start = nowUs()
      await agent.followUp(text)
      await agent.waitIdle()
      const wall = nowUs() - start
      const used = process.cpuUsage(cpuStart)
      const cpuUs = used.user + used.system
      cpu.push(cpuUs / 1000)
      percent.push((100 * cpuUs) / wall)
      overhead.push((wall - (model.end - model.start)) / 1000)
    }
    const transcript = await finish(agent)
    const expectedModelMs = ((count - 1) * 1000) / tokensPerSecond
    return {
      figures: { cpuMsPerTurn: mean(cpu), cpuPercent: mean(percent), wallOverheadMs: mean(overhead) },
      checks: [
        ...turnChecks(transcript, texts),
        check(
          "model streamed at the set pace",
          Math.abs((model.end - model.start) / 1000 - expectedModelMs) < 50,
          `${((model.end - model.start) / 1000).toFixed(0)} ms for ${count} tokens (expected ${
            expectedModelMs.toFixed(0)
          })`
        )
      ]
    }
  }
}
