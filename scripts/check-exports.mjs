// The unused-export gate (issue 39, item 10): knip (`knip.json`) lists every export no other file of the repository
// uses — public modules included (`--include-entry-exports`) — and every name exported twice. Each must be dropped,
// unexported, or kept in `knip.allow.json` ({ "<file>": { "<name>": "why it stays" } }). Fails on a flagged export
// the allow-list does not name; warns about allow-list rows nothing flags any more (delete them).
import { spawnSync } from "node:child_process"
import console from "node:console"
import { readFileSync } from "node:fs"
import process from "node:process"
import { URL } from "node:url"

const started = Date.now()
const run = spawnSync(
  "npx",
  [
    "knip",
    "--tsConfig",
    "tsconfig.build.json",
    "--include",
    "exports,types,duplicates",
    "--include-entry-exports",
    "--no-progress",
    "--reporter",
    "json"
  ],
  { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }
)
if (run.stdout.trim() === "") {
  console.error(`check-exports: knip printed nothing (exit ${run.status}):\n${run.stderr}`)
  process.exit(1)
}
const report = JSON.parse(run.stdout)
const allowed = JSON.parse(readFileSync(new URL("../knip.allow.json", import.meta.url), "utf8"))

const flagged = []
for (const issue of report.issues) {
  for (const kind of ["exports", "types"]) {
    for (const item of issue[kind] ?? []) flagged.push({ file: issue.file, name: item.name, line: item.line, kind })
  }
  for (const names of issue.duplicates ?? []) {
    flagged.push({
      file: issue.file,
      name: names.map((n) => n.name).join("|"),
      line: names[0]?.line,
      kind: "duplicate"
    })
  }
}

const unexplained = flagged.filter(({ file, name }) =>
  typeof allowed[file]?.[name] !== "string" || allowed[file][name].trim() === ""
)
const seen = new Set(flagged.map(({ file, name }) => `${file}\u0000${name}`))
const stale = Object.entries(allowed).flatMap(([file, names]) =>
  Object.keys(names).filter((name) => !seen.has(`${file}\u0000${name}`)).map((name) => `${file}: ${name}`)
)

for (const row of stale) {
  console.warn(`check-exports: knip.allow.json keeps ${row}, which nothing flags any more: delete the row`)
}
for (const { file, kind, line, name } of unexplained) {
  console.error(`check-exports: ${file}:${line} exports ${name} (${kind}) that nothing uses`)
}
const seconds = ((Date.now() - started) / 1000).toFixed(1)
if (unexplained.length > 0) {
  console.error(
    `check-exports: ${unexplained.length} unused export(s): drop each, unexport it, or keep it in knip.allow.json with why (${seconds} s)`
  )
  process.exit(1)
}
console.log(`check-exports: ${flagged.length} unused export(s), each kept in knip.allow.json with why (${seconds} s)`)
