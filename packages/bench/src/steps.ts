/**
 * `npm run steps -w @harness/bench [-- --turns N]`: how many Effect interpreter steps a Harness turn takes — W1-style
 * (5-token text) and W4-style (tool call → no-op tool → text) turns, counted by a `Supervisor` with op supervision on
 * (Effect calls its `onEffect` once per step of every fiber that inherits it: the agent's driver, activity and tool
 * fibers are all forked from the bench's own calls). Steps are what the interpreter does and allocates per turn;
 * unlike time, the count does not move with the machine's load, so it is the before/after figure for changes to the
 * agent's machinery (ADR 0028). Counting slows the turns down: never read times from this run.
 */
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { parseArgs } from "node:util"
import { prompts, warmUp } from "./Measure.js"
import { type AgentOptions, fiveTokens, noopToolName } from "./Runtime.js"
import { make } from "./runtimes/harness.js"

/** Counts interpreter steps while `on`. */
class StepCounter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  on = false
  get value() {
    return Effect.sync(() => this.steps)
  }
  override onEffect() {
    if (this.on) this.steps++
  }
}

const workloads: ReadonlyArray<readonly [string, AgentOptions]> = [
  ["W1 (text reply)", { script: () => fiveTokens }],
  ["W4 (tool call, then text)", {
    tools: true,
    script: ({ index }) => (index % 2 === 0 ? { _tag: "tool-call", name: noopToolName, arguments: "{}" } : fiveTokens)
  }]
]

const main = async () => {
  const { values } = parseArgs({ options: { turns: { type: "string", default: "200" } } })
  const turns = Number(values.turns)
  if (!Number.isInteger(turns) || turns < 1) throw new Error("--turns must be a positive integer")
  const counter = new StepCounter()
  const runtime = await make((effect) =>
    effect.pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
  )
  for (const [name, options] of workloads) {
    await warmUp(runtime, options)
    const agent = await runtime.createAgent(options)
    counter.steps = 0
    counter.on = true
    for (const text of prompts("steps-", turns)) {
      await agent.followUp(text)
      await agent.waitIdle()
    }
    counter.on = false
    const transcript = await agent.transcript()
    await agent.dispose()
    if (transcript.completedTurns !== turns) throw new Error(`${name}: expected ${turns} turns`)
    process.stdout.write(`${name}: ${(counter.steps / turns).toFixed(0)} interpreter steps per turn\n`)
  }
  await runtime.close()
}

main().catch((error) => {
  process.stderr.write(`${String(error)}\n`)
  process.exit(1)
})
