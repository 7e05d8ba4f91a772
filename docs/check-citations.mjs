// Checks that every reference in the repository can be opened from the repository alone:
// - every rule cited as `R<n>` (or a range `R<a>–R<b>`) exists in docs/CONTRACT.md;
// - no source, test, README or ADR points at a document outside the repository (the design notes it came from,
//   issue texts, the planning documents).
// Prints each finding as `file:line: text` and exits 1 if there is any. Run: `npm run check:citations`.
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import process from "node:process"

const contract = readFileSync("docs/CONTRACT.md", "utf8")
const rules = new Set([...contract.matchAll(/^R(\d+)\. /gm)].map((match) => Number(match[1])))

/** References to documents a reader of the repository cannot open. */
const outside = [
  { pattern: /\bSEMANTICS(\.md)?\b/, what: "the original design's rule book (cite docs/CONTRACT.md)" },
  { pattern: /\bMISSION(\.md)?\b/, what: "a planning document (cite docs/CONTRACT.md)" },
  { pattern: /\b(STACK|STYLE)\.md\b/, what: "a planning document" },
  { pattern: /shared\/spec/, what: "a path outside the repository" },
  { pattern: /\bdesign card\b/, what: "an issue text" },
  {
    pattern:
      /\b(agent|tool|tools|core|goal|goals|foundation|durable-sessions|stores?|benchmark|bench|CLI|provider|hardening|craft|later|next) issue('s)?\b/,
    what: "an issue text (cite the rule or the ADR instead)"
  },
  { pattern: /\bissues? #?\d+\b/, what: "an issue number" },
  { pattern: /\bD1–D3\b/, what: "the issue's departures list (cite the rule's Departure)" },
  // The benchmark package names `the reference loop`, an npm package it installs; elsewhere "the reference" is the
  // original design, which only docs/CONTRACT.md describes.
  { pattern: /\b(the|a) reference(?!( loop|'s polyfill| adapter))(?! implementation)\b/i, what: "the original design" }
]

const files = execFileSync("git", [
  "ls-files",
  "--cached",
  "--others",
  "--exclude-standard",
  "packages",
  "docs/adr",
  "README.md"
], { encoding: "utf8" })
  .split("\n")
  .filter((file) => /\.(ts|mts|mjs|md)$/.test(file) && !file.startsWith("packages/bench/"))

const findings = []
for (const file of files) {
  const lines = readFileSync(file, "utf8").split("\n")
  lines.forEach((line, index) => {
    const where = `${file}:${index + 1}`
    for (const match of line.matchAll(/\bR(\d{1,3})(?:\s*[–-]\s*R?(\d{1,3}))?\b/g)) {
      const from = Number(match[1])
      const to = match[2] === undefined ? from : Number(match[2])
      for (let rule = from; rule <= to; rule++) {
        if (!rules.has(rule)) findings.push(`${where}: R${rule} is not a rule of docs/CONTRACT.md`)
      }
    }
    for (const { pattern, what } of outside) {
      if (pattern.test(line)) findings.push(`${where}: cites ${what}: ${line.trim().slice(0, 140)}`)
    }
  })
}

for (const finding of findings) process.stdout.write(`${finding}\n`)
process.stdout.write(
  `${findings.length} reference(s) that cannot be opened from the repository (${files.length} files checked)\n`
)
process.exitCode = findings.length === 0 ? 0 : 1
