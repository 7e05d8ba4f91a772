/**
 * Realistic pace: the model streams its reply at 50 tokens/s (200 tokens in 4 s, the schedule drift-free), so the
 * runtime's own cost shows as a fraction of a real turn: the CPU time the process spends during the turn, and the
 * wall time the turn takes beyond the model's own streaming time.
 */
import { finish, mean, nowUs, pacedReply, prompts, warmUp } from "../Measure.js"
import { repliesOf, tokens } from "../Runtime.js"
import type { ModelClock } from "../SseServer.js"
import { forgetPacedStreams, pacedClocks, servedShare } from "../SseServer.js"
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
    { id: "wallOverheadMs", label: "turn time beyond the model's, ms", unit: "ms", better: "lower" },
    servedShare
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const count = size === "smoke" ? 10 : 200
    // As in Fleet (ADR 0077): the loopback server streams the reply to a runtime with an OpenAI-compatible client,
    // the script to one without; each turn's model clock is the server's when it streamed it.
    const { model, reply } = pacedReply(count, tokensPerSecond)
    const agent = await runtime.createAgent({ script: () => reply, served: { tokens: count, tokensPerSecond } })
    const texts = prompts("pace-", n)
    await forgetPacedStreams()
    const cpu: Array<number> = []
    const walls: Array<number> = []
    const locals: Array<ModelClock> = []
    for (const text of texts) {
      const cpuStart = process.cpuUsage()
      const start = nowUs()
      await agent.followUp(text)
      await agent.waitIdle()
      walls.push(nowUs() - start)
      const used = process.cpuUsage(cpuStart)
      cpu.push(used.user + used.system)
      locals.push({ ...model })
    }
    const transcript = await finish(agent)
    const { clocks, served } = await pacedClocks(texts, locals)
    const modelMs = clocks.map((clock) => (clock.end - clock.start) / 1000)
    const expectedModelMs = ((count - 1) * 1000) / tokensPerSecond
    const text = tokens(count).join("")
    return {
      figures: {
        cpuMsPerTurn: mean(cpu) / 1000,
        cpuPercent: mean(cpu.map((cpuUs, i) => (100 * cpuUs) / walls[i]!)),
        wallOverheadMs: mean(walls.map((wall, i) => wall / 1000 - modelMs[i]!)),
        servedPercent: (100 * served) / n
      },
      checks: [
        ...turnChecks(transcript, texts),
        check(
          `replies whole (${count} tokens each)`,
          repliesOf(transcript).length === n && repliesOf(transcript).every((r) => r === text),
          `${repliesOf(transcript).filter((r) => r === text).length} of ${n}`
        ),
        // Late is allowed (the overhead subtracts the model's own time, late or not); an unpaced reply is not.
        check(
          "model streamed no faster than the set pace",
          modelMs.every((ms) => ms > expectedModelMs - 50),
          `${modelMs.map((ms) => ms.toFixed(0)).join(", ")} ms for ${count} tokens (expected ${
            expectedModelMs.toFixed(0)
          })`
        )
      ]
    }
  }
}
