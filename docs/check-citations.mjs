// Checks that every reference in the repository can be opened from the repository alone:
// - every rule cited as `R<n>` (or a range `R<a>–R<b>`) exists in docs/CONTRACT.md;
// - no source, test, README, ADR or docs/performance.md points at a document outside the repository (the design
//   notes it came from, issue texts, the planning documents).
// Prints each finding as `file:line: text` and exits 1 if there is any. Run: `npm run check:citations` (part of
// `npm test`). Before it reads the tree it checks itself: each planted outside citation below must be found and each
// planted valid one must pass, so a pattern that stops matching fails the gate instead of silently passing it.
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import process from "node:process"

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
  { pattern: /\bissues? #?\d+\b/i, what: "an issue number" },
  { pattern: /\bD1–D3\b/, what: "the issue's departures list (cite the rule's Departure)" },
  // The benchmark package names `the reference loop`, an npm package it installs; elsewhere "the reference" is the
  // original design, which only docs/CONTRACT.md describes.
  { pattern: /\b(the|a) reference(?!( loop|'s polyfill| adapter))(?! implementation)\b/i, what: "the original design" }
]

/**
 * The findings for one file's lines: rule numbers docs/CONTRACT.md does not define, and outside references.
 * @param {ReadonlySet<number>} rules
 * @param {string} file
 * @param {ReadonlyArray<string>} lines
 */
const check = (rules, file, lines) => {
  const findings = []
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
  return findings
}

/** Lines the checker must refuse, one per kind of outside reference, and lines it must let pass. */
const planted = {
  refused: [
    " * Cancellation (SEMANTICS §10, R77).",
    "// validated at acceptance (MISSION: \"validated\").",
    "See /work/shared/spec/MISSION.md.",
    "as the design card says",
    "// with the agent issue's departures",
    "describe(\"escapes (issue 14)\", () => {",
    "Issue 10 §1 asks for one model",
    "the departures D1–D3",
    "as in the reference (R60)",
    "covers R999"
  ],
  passed: [
    " * Cancellation (R77–R85; departures R73, R81).",
    "// the bench's reference loop, 0.35× the reference loop",
    "see ADR 0011 and docs/CONTRACT.md §8"
  ]
}

/** @param {ReadonlySet<number>} rules */
const selfTest = (rules) => {
  const problems = []
  planted.refused.forEach((line) => {
    if (check(rules, "planted", [line]).length === 0) problems.push(`self-test: not refused: ${line}`)
  })
  planted.passed.forEach((line) => {
    for (const finding of check(rules, "planted", [line])) problems.push(`self-test: refused a valid line: ${finding}`)
  })
  return problems
}

const main = () => {
  const contract = readFileSync("docs/CONTRACT.md", "utf8")
  const rules = new Set([...contract.matchAll(/^R(\d+)\. /gm)].map((match) => Number(match[1])))
  const files = execFileSync("git", [
    "ls-files",
    "--cached",
    "--others",
    "--exclude-standard",
    "packages",
    "docs/adr",
    "docs/performance.md",
    "README.md"
  ], { encoding: "utf8" })
    .split("\n")
    .filter((file) => /\.(ts|mts|mjs|md)$/.test(file) && !file.startsWith("packages/bench/"))

  const findings = [...selfTest(rules)]
  for (const file of files) findings.push(...check(rules, file, readFileSync(file, "utf8").split("\n")))

  for (const finding of findings) process.stdout.write(`${finding}\n`)
  process.stdout.write(
    `${findings.length} reference(s) that cannot be opened from the repository (${files.length} files checked)\n`
  )
  process.exitCode = findings.length === 0 ? 0 : 1
}

main()
