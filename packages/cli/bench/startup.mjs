// Start-up benchmark: the time from spawning `harness chat` until its first prompt is ready (the banner is printed
// once the store, the model and the agent are built), for the compiled bundle and for the TypeScript sources under
// tsx; and `harness --version` for the bare process. Prints medians; never gates anything.
// Run: node packages/cli/bench/startup.mjs [runs]
import { spawn } from "node:child_process"
import console from "node:console"
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import process from "node:process"
import { fileURLToPath, URL } from "node:url"

const bin = fileURLToPath(new URL("../bin/harness.mjs", import.meta.url))
const runs = Number(process.argv[2] ?? 5)

const once = (args, env, until) =>
  new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env, NO_COLOR: "1" } })
    let out = ""
    let done = false
    const finish = () => {
      if (done) return
      done = true
      resolve(Number(process.hrtime.bigint() - started) / 1e6)
      child.stdin.end()
    }
    child.stdout.on("data", (chunk) => {
      out += chunk
      if (until !== undefined && out.includes(until)) finish()
    })
    child.on("error", reject)
    child.on("close", () => (until === undefined ? finish() : done || reject(new Error(`no "${until}" in: ${out}`))))
  })

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const dir = mkdtempSync(join(tmpdir(), "harness-startup-"))
const chat = ["chat", "--store", `sqlite:${join(dir, "s.db")}`, "--workspace", dir]
const rows = []
for (const [label, env] of [["bundle (dist/harness.mjs)", {}], ["sources under tsx", { HARNESS_FROM_SOURCE: "1" }]]) {
  const version = []
  const prompt = []
  for (let i = 0; i < runs; i++) {
    version.push(await once(["--version"], env, undefined))
    prompt.push(await once(chat, env, "harness chat —"))
  }
  rows.push(`| ${label} | ${median(version).toFixed(0)} ms | ${median(prompt).toFixed(0)} ms |`)
}
rmSync(dir, { recursive: true, force: true })
console.log(`harness start-up, median of ${runs} runs (load average ${loadavg()[0].toFixed(1)})\n`)
console.log("| entry | `harness --version` | `harness chat` to its first prompt |\n|---|---|---|")
for (const row of rows) console.log(row)
