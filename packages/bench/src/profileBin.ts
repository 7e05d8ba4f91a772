/**
 * `npm run profile -w @harness/bench [-- options]`: where a runtime spends its time and memory per turn.
 *
 *   --runtime NAME   harness (default), pi or reference
 *   --turns N        W1-style turns profiled for CPU (default 1000; allocation uses N / 4)
 *   --agents N       idle agents for the retention snapshot (default 1000, as W3)
 *   --label LABEL    names the output (default "latest"): results/profile-LABEL.{json,cpuprofile}
 *   --write          also write the BENCHMARKS.md region `profile-LABEL` (use `before` / `after`)
 *
 * Run under `node --expose-gc --import tsx` (the npm script does). The .cpuprofile opens in Chrome DevTools.
 */
import { join } from "node:path"
import { parseArgs } from "node:util"
import { warmUp } from "./Measure.js"
import { profile, type ProfileResult } from "./Profile.js"
import { readOr, replaceRegion, repoRoot, template, writeFile } from "./Report.js"
import { packageDir } from "./Runner.js"
import { runtimeNames } from "./Runtime.js"
import { sseUrlEnv, startSseServer } from "./SseServer.js"
import { boot } from "./Worker.js"

const us = (value: number) => `${value.toFixed(1)} µs`
const kb = (value: number) => `${(value / 1024).toFixed(1)} KB`
const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`

/** The profile as Markdown tables (per turn). */
const markdown = (result: ProfileResult, label: string, date: string): string => {
  const turnUs = result.cpu.totalUs / result.turns
  const allocPerTurn = result.allocation.totalBytes / result.allocation.turns
  const lines = [
    `#### Profile \`${label}\` (${result.runtime}, ${date})`,
    "",
    `CPU: ${result.turns} sequential W1 turns sampled every 250 µs: ${us(turnUs)} of samples per turn ` +
    `(${us(result.usPerTurnProfiled)} wall per turn while profiling). Allocation: ${
      kb(allocPerTurn)
    } allocated per turn ` +
    `(sampling heap profiler over ${result.allocation.turns} turns, collected objects included).`,
    "",
    "| cause | CPU per turn | share | allocated per turn | share |",
    "| --- | ---: | ---: | ---: | ---: |"
  ]
  const alloc = new Map(result.allocation.byCause)
  for (const [cause, total] of result.cpu.byCause) {
    const bytes = alloc.get(cause) ?? 0
    lines.push(
      `| ${cause} | ${us(total / result.turns)} | ${pct(total, result.cpu.totalUs)} | ${
        kb(bytes / result.allocation.turns)
      } | ${pct(bytes, result.allocation.totalBytes)} |`
    )
  }
  lines.push(
    "",
    "<details><summary>Top functions by self time</summary>",
    "",
    "| function | cause | µs per turn |",
    "| --- | --- | ---: |",
    ...result.cpu.topFunctions.map((f) => `| \`${f.name}\` | ${f.cause} | ${(f.us / result.turns).toFixed(1)} |`),
    "",
    "</details>",
    "",
    `Retention: ${result.agents} idle agents with one turn each hold ${
      kb(result.retained.totalBytes / result.agents)
    } ` +
      `in ${
        (result.retained.totalObjects / result.agents).toFixed(0)
      } objects per agent (heap snapshot diff). Largest groups:`,
    "",
    "| object type | bytes per agent | objects per agent |",
    "| --- | ---: | ---: |",
    ...result.retained.byType.slice(0, 12).map((g) =>
      `| \`${g.name}\` | ${(g.bytes / result.agents).toFixed(0)} | ${(g.count / result.agents).toFixed(1)} |`
    )
  )
  return lines.join("\n")
}

const main = async () => {
  const { values } = parseArgs({
    options: {
      runtime: { type: "string", default: "harness" },
      turns: { type: "string", default: "1000" },
      agents: { type: "string", default: "1000" },
      label: { type: "string", default: "latest" },
      write: { type: "boolean", default: false }
    }
  })
  const name = runtimeNames.find((n) => n === values.runtime)
  if (name === undefined) throw new Error(`--runtime must be one of ${runtimeNames.join(", ")}`)
  const turns = Number(values.turns)
  const agents = Number(values.agents)
  // From source: samples are charged to packages by their frames' files, which a bundle would merge into one.
  // The provider path's loopback server in this process (its frames are charged to the bench).
  const server = await startSseServer()
  process.env[sseUrlEnv] = server.url
  const runtime = await boot(name, "source")
  const log = (line: string) => console.error(`profile ${name}: ${line}`)
  log("warming up")
  await warmUp(runtime)
  const { cpuProfile, result } = await profile(runtime, { turns, agents, log })
  await runtime.close()
  await server.close()
  const date = new Date().toISOString().slice(0, 10)
  const text = markdown(result, values.label, date)
  console.log(text)
  writeFile(join(packageDir, "results", `profile-${values.label}.json`), `${JSON.stringify(result, null, 1)}\n`)
  writeFile(join(packageDir, "results", `profile-${values.label}.cpuprofile`), JSON.stringify(cpuProfile))
  if (values.write) {
    const docPath = join(repoRoot(packageDir), "BENCHMARKS.md")
    writeFile(docPath, replaceRegion(readOr(docPath, template), `profile-${values.label}`, text))
    console.error(`wrote the profile-${values.label} region of BENCHMARKS.md`)
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
