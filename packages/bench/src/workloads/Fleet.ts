/**
 * Many agents streaming at once: N agents each run one turn whose model streams 200 tokens at 50 tokens/s, their
 * starts spread evenly over one token's interval, so the process handles N × 50 chunks a second (10 000 at the full
 * size) the way a server with that many live conversations does. Reports the process's CPU time per streamed chunk
 * and as a share of one core, and how far the turns ran past their models. Pace measures one such turn alone, where
 * every chunk arrives after the process idled; here the process is busy, which is where CPU per chunk decides how
 * many conversations one core carries.
 *
 * The replies are served (ADR 0077): a runtime with an OpenAI-compatible client reads them from the loopback
 * server's paced route, so a chunk's cost includes the HTTP client and the SSE decoding; the server (another process)
 * keeps the pace and each stream's clock. A runtime without such a client (the reference, Harness pulled) gets the
 * same paced reply from an in-process script.
 */
import { mean, nowUs, pacedReply, prompts, quantile, sleepUntil, warmUp } from "../Measure.js"
import type { BenchAgent, Pacing, Transcript } from "../Runtime.js"
import { repliesOf, tokens } from "../Runtime.js"
import { forgetPacedStreams, pacedClocks, servedShare } from "../SseServer.js"
import type { Workload } from "../Workload.js"
import { check, checkEqual, checkOrder } from "../Workload.js"

const tokensPerSecond = 50
const interval = 1e6 / tokensPerSecond

export const Fleet: Workload = {
  id: "Fleet",
  title: "many agents streaming",
  description: "N agents each stream a 200-token turn at 50 tokens/s at the same time; CPU per chunk",
  sizes: { full: 200, quick: 100, smoke: 3 },
  metrics: [
    { id: "cpuUsPerChunk", label: "CPU µs per streamed chunk", unit: "µs", better: "lower", headline: true },
    { id: "cpuPercent", label: "CPU time ÷ wall time (one core = 100 %)", unit: "%", better: "lower" },
    { id: "overheadP50Ms", label: "turn time beyond the model's, p50, ms", unit: "ms", better: "lower" },
    { id: "overheadMaxMs", label: "turn time beyond the model's, max, ms", unit: "ms", better: "lower" },
    servedShare
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const count = size === "smoke" ? 10 : 200
    const pacing: Pacing = { tokens: count, tokensPerSecond }
    const models = Array.from({ length: n }, () => pacedReply(count, tokensPerSecond))
    const agents: Array<BenchAgent> = []
    for (const { reply } of models) agents.push(await runtime.createAgent({ script: () => reply, served: pacing }))
    const texts = prompts("fleet-", n)
    await forgetPacedStreams()
    const turnUs: Array<number> = []
    const cpuStart = process.cpuUsage()
    const start = nowUs()
    await Promise.all(agents.map(async (agent, i) => {
      await sleepUntil(start + (i * interval) / n)
      const begun = nowUs()
      await agent.followUp(texts[i]!)
      await agent.waitIdle()
      turnUs[i] = nowUs() - begun
    }))
    const wall = nowUs() - start
    const used = process.cpuUsage(cpuStart)
    const cpuUs = used.user + used.system
    const transcripts: Array<Transcript> = []
    for (const agent of agents) {
      transcripts.push(await agent.transcript())
      await agent.dispose()
    }
    const { clocks, served } = await pacedClocks(texts, models.map(({ model }) => model))
    const overhead = clocks.map((clock, i) => (turnUs[i]! - (clock.end - clock.start)) / 1000)
    const sum = (f: (t: Transcript) => number) => transcripts.reduce((s, t) => s + f(t), 0)
    const streamedMs = clocks.map((clock) => (clock.end - clock.start) / 1000)
    const expectedMs = ((count - 1) * 1000) / tokensPerSecond
    const text = tokens(count).join("")
    const whole = transcripts.filter((t) => repliesOf(t).length === 1 && repliesOf(t)[0] === text).length
    return {
      figures: {
        cpuUsPerChunk: cpuUs / (n * count),
        cpuPercent: (100 * cpuUs) / wall,
        overheadP50Ms: quantile(overhead, 0.5),
        overheadMaxMs: Math.max(...overhead),
        servedPercent: (100 * served) / n
      },
      checks: [
        checkEqual("completed turns", sum((t) => t.completedTurns), n),
        checkEqual("text replies", sum((t) => t.textReplies), n),
        checkEqual(`replies whole (${count} tokens each)`, whole, n),
        checkOrder("each agent's own prompt", transcripts.map((t) => t.prompts.join("|")), texts),
        // Behind schedule a paced model streams late but whole: this checks that every model reached its last
        // token, and the overhead figures say how far the runtime fell behind.
        check(
          "every model streamed its reply",
          clocks.every((clock) => clock.start > 0 && clock.end > clock.start),
          `mean ${mean(streamedMs).toFixed(0)} ms for ${count} tokens (the pace alone: ${expectedMs.toFixed(0)})`
        )
      ]
    }
  }
}
