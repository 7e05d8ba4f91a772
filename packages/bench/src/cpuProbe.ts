/**
 * A before/after probe for a busy machine: `node --expose-gc --import tsx src/cpuProbe.ts [options]` runs W1-style
 * (5-token text) or W4-style (tool call → no-op tool → text) turns on one runtime after a warm-up and prints the
 * process CPU time (user + system) and the wall time per turn, as one JSON line. CPU time counts only this
 * process's work, so it moves far less than wall time when other processes share the cores; the full bench's
 * wall-time ratios remain the figures to publish.
 *
 *   --runtime harness|pi|reference   default harness
 *   --workload W1|W4                 default W1
 *   --turns N                        default 1000
 *   --served                         the loopback server's script (W1's `servedText`, W4's tools): Harness on its
 *                                    provider path; the server is `BENCH_SSE_URL`'s (`src/serveBin.ts`), else its own
 *   --warm N                         warm-up turns, default 300
 *
 * Under `valgrind --tool=callgrind` (instruction counts, which the machine's load does not move), run two turn
 * counts and take the difference over the turns between them: start-up and warm-up cancel.
 */
import { parseArgs } from "node:util"
import { collectGarbage, nowUs, prompts, warmUp } from "./Measure.js"
import { type AgentOptions, baselineName, type BootName, fiveTokens, noopToolName, runtimeNames } from "./Runtime.js"
import { sseUrlEnv, startSseServer } from "./SseServer.js"
import { boot } from "./Worker.js"

const main = async () => {
  const { values } = parseArgs({
    options: {
      runtime: { type: "string", default: "harness" },
      workload: { type: "string", default: "W1" },
      turns: { type: "string", default: "1000" },
      served: { type: "boolean", default: false },
      warm: { type: "string", default: "300" }
    }
  })
  // `baseline`: the bundle `BENCH_BASELINE_BUNDLE` names (`Baseline.prepareBaseline`), for a before/after by hand.
  const name = [...runtimeNames, baselineName].find((n): n is BootName => n === values.runtime)
  if (name === undefined) throw new Error(`--runtime must be one of ${runtimeNames.join(", ")}, baseline`)
  if (values.workload !== "W1" && values.workload !== "W4") throw new Error("--workload must be W1 or W4")
  const turns = Number(values.turns)
  if (!Number.isInteger(turns) || turns < 1) throw new Error("--turns must be a positive integer")
  const options: AgentOptions = values.workload === "W4"
    ? {
      tools: true,
      served: values.served,
      script: ({ index }) => (index % 2 === 0 ? { _tag: "tool-call", name: noopToolName, arguments: "{}" } : fiveTokens)
    }
    : { script: () => fiveTokens, served: values.served }
  const own = values.served && process.env[sseUrlEnv] === undefined ? await startSseServer() : undefined
  if (own !== undefined) process.env[sseUrlEnv] = own.url
  const runtime = await boot(name)
  await warmUp(runtime, options, Number(values.warm))
  const agent = await runtime.createAgent(options)
  await collectGarbage()
  const cpu = process.cpuUsage()
  const start = nowUs()
  for (const text of prompts("probe-", turns)) {
    await agent.followUp(text)
    await agent.waitIdle()
  }
  const wall = nowUs() - start
  const used = process.cpuUsage(cpu)
  const transcript = await agent.transcript()
  await agent.dispose()
  await runtime.close()
  await own?.close()
  if (transcript.completedTurns !== turns) throw new Error(`expected ${turns} turns, got ${transcript.completedTurns}`)
  process.stdout.write(
    `${
      JSON.stringify({
        runtime: runtime.version,
        workload: values.workload,
        turns,
        cpuUsPerTurn: (used.user + used.system) / turns,
        wallUsPerTurn: wall / turns
      })
    }\n`
  )
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
