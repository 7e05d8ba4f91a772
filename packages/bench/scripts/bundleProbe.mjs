// A W1/W4 probe over one Harness bundle, in plain JavaScript (no loader, no worker thread: it runs under valgrind):
//   node --expose-gc scripts/bundleProbe.mjs <bundle.mjs> <turns> <warm-up turns> [W4]
// with BENCH_SSE_URL pointing at `npx tsx src/serveBin.ts`. The bundle is `.bundle/harness.mjs` (the working tree,
// built by cpuProbe) or `.baseline/<sha>.mjs` (a `--baseline` run builds it). Prints CPU µs per measured turn.
import process from "node:process"

const [bundle, turnsArg, warmArg, workload] = process.argv.slice(2)
const { make } = await import(bundle)
const runtime = await make()
const five = { _tag: "text", tokens: ["tok0 ", "tok1 ", "tok2 ", "tok3 ", "tok4 "] }
const options = workload === "W4"
  ? {
    tools: true,
    served: true,
    script: ({ index }) => (index % 2 === 0 ? { _tag: "tool-call", name: "noop", arguments: "{}" } : five)
  }
  : { served: true, script: () => five }
const run = async (n, prefix) => {
  const agent = await runtime.createAgent(options)
  for (let i = 0; i < n; i++) {
    await agent.followUp(`${prefix}${i}`)
    await agent.waitIdle()
  }
  const t = await agent.transcript()
  await agent.dispose()
  if (t.completedTurns !== n) throw new Error(`expected ${n} turns, got ${t.completedTurns}`)
}
await run(Number(warmArg), "warm-")
const cpu = process.cpuUsage()
await run(Number(turnsArg), "probe-")
const used = process.cpuUsage(cpu)
const figures = { bundle, turns: Number(turnsArg), cpuUsPerTurn: (used.user + used.system) / Number(turnsArg) }
process.stdout.write(`${JSON.stringify(figures)}\n`)
await runtime.close()
process.exit(0)
