/**
 * `npm run http -w @harness/bench [-- --quick]`: the HTTP scenario (`Http.ts`, ADR 0063) — one Harness agent reached
 * through `@harness/server` on loopback against the same agent in process — printed as one Markdown table with the
 * machine's load at the start and the end. Exits 1 when a check failed.
 *
 *   --quick   seconds: 50 latency samples, a 200-turn burst, 100 subscribers
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import * as os from "node:os"
import { parseArgs } from "node:util"
import * as Http from "./Http.js"

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } })
const sizes = values.quick ? Http.quick : Http.full
const load = () => os.loadavg()[0]!.toFixed(2)

const main = Effect.gen(function*() {
  const start = load()
  const figures = yield* Http.run(sizes)
  yield* Console.log(Http.table(figures))
  yield* Console.log(
    `\n${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), Node ${process.version}; 1-minute load ` +
      `${start} at the start, ${load()} at the end${values.quick ? "; --quick" : ""}`
  )
  if (figures.failures.length > 0) {
    yield* Console.error(`checks failed:\n${figures.failures.slice(0, 20).join("\n")}`)
    process.exitCode = 1
  }
})

NodeRuntime.runMain(main)
