// Keeps docs/CONTRACT.md's own account of what is missing true:
// - every **Gap:** and **Not yet:** marker inside a rule carries evidence in an HTML comment of the same rule, checked
//   against the tree, so that fixing a gap or building a feature fails this gate until the contract says so:
//     <!-- check: pinned packages/agent/test/gaps.test.ts -->  that test file exists and names the gap (`gap R57`)
//                                                               in a test that asserts today's (wrong) behaviour, so
//                                                               the fix fails that test;
//     <!-- check: absent `surfaceOp` `"injection"` -->          no source file under packages/*/src contains any of
//     <!-- check: absent `x` in packages/agent/src -->          these texts (or only under the folders given);
// - a test anywhere under packages/*/test that names `gap R<n>` pins a Gap marker of rule R<n>;
// - the closing summary lists exactly the rules that carry the markers: "Known gaps …" the Gap rules, "Not yet
//   built: …" the Not-yet rules;
// - every rule with a **Departure** marker is named in the "Departures at a glance" table.
// Prints each finding and exits 1 if there is any. Run: `node docs/check-contract.mjs` (part of `npm test`). Before it
// reads the tree it checks itself against a planted contract, so a pattern that stops matching fails the gate.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import process from "node:process"

/** Rule numbers named in a text, ranges (`R113–R128`) expanded. @param {string} text */
const ruleNumbers = (text) => {
  const numbers = new Set()
  for (const match of text.matchAll(/\bR(\d{1,3})(?:\s*[–-]\s*R?(\d{1,3}))?\b/g)) {
    const from = Number(match[1])
    const to = match[2] === undefined ? from : Number(match[2])
    for (let rule = from; rule <= to; rule++) numbers.add(rule)
  }
  return numbers
}

/**
 * The contract's rules (a rule runs from its `Rn.` line to the next rule or heading), its closing summary and its
 * departures table.
 * @param {string} text
 */
const parse = (text) => {
  /** @type {Map<number, { line: number, text: string }>} */
  const rules = new Map()
  let current
  let inDepartures = false
  const table = new Set()
  const summary = { gaps: undefined, notYet: undefined }
  text.split("\n").forEach((line, index) => {
    const start = /^R(\d+)\./.exec(line)
    if (start) {
      current = { line: index + 1, text: "" }
      rules.set(Number(start[1]), current)
    } else if (/^#/.test(line) || /^---/.test(line)) {
      current = undefined
      inDepartures = /^## Departures at a glance/.test(line)
    }
    if (current) current.text += line + "\n"
    if (inDepartures && /^\| R/.test(line)) { for (const rule of ruleNumbers(line.split("|")[1])) table.add(rule) }
    if (/^Known gaps\b/.test(line)) summary.gaps = ""
    if (/^Not yet built\b/.test(line)) summary.notYet = ""
    if (/^Not yet built\b/.test(line) || (summary.notYet !== undefined && line.trim() !== "")) {
      summary.notYet += line + "\n"
    } else if (summary.gaps !== undefined && summary.notYet === undefined) summary.gaps += line + "\n"
  })
  return { rules, summary, table }
}

/**
 * The findings for a contract, given the tree it describes.
 * @param {string} contract
 * @param {{ exists: (path: string) => boolean, read: (path: string) => string, sources: (folders: ReadonlyArray<string> | undefined) => ReadonlyArray<{ path: string, text: string }>, pins: () => ReadonlyArray<{ path: string, rule: number }> }} tree
 */
const check = (contract, tree) => {
  const findings = []
  const { rules, summary, table } = parse(contract)
  const gaps = new Set()
  const notYet = new Set()
  for (const [rule, { line, text }] of rules) {
    const where = `docs/CONTRACT.md:${line}: R${rule}`
    const isGap = /\*\*Gap[:.]\*\*/.test(text)
    const isNotYet = /\*\*Not yet[:.]\*\*/.test(text)
    if (isGap) gaps.add(rule)
    if (isNotYet) notYet.add(rule)
    if (/\*\*Departure\b/.test(text) && !table.has(rule)) {
      findings.push(`${where} states a Departure that the "Departures at a glance" table does not name`)
    }
    const checks = [...text.matchAll(/<!--\s*check:\s*([\s\S]*?)-->/g)].map((match) => match[1].trim())
    if ((isGap || isNotYet) && checks.length === 0) {
      findings.push(`${where} has a ${isGap ? "Gap" : "Not yet"} marker without a <!-- check: … --> of its evidence`)
    }
    if (!isGap && !isNotYet && checks.length > 0) {
      findings.push(`${where} has a <!-- check: … --> but no Gap or Not yet marker: drop the check`)
    }
    for (const spec of checks) {
      const pinned = /^pinned\s+(\S+)$/.exec(spec)
      const absent = /^absent\s+((?:`[^`]+`\s*)+)(?:in\s+(.+))?$/.exec(spec)
      if (pinned) {
        const path = pinned[1]
        if (!isGap) findings.push(`${where}: a pin is evidence of a Gap, and this rule has none`)
        if (!tree.exists(path)) findings.push(`${where}: the pinning test ${path} does not exist`)
        else if (!new RegExp(`\\bgap R${rule}\\b`).test(tree.read(path))) {
          findings.push(`${where}: ${path} has no test named "gap R${rule}" (was the gap fixed? say so in the rule)`)
        }
      } else if (absent) {
        const names = [...absent[1].matchAll(/`([^`]+)`/g)].map((match) => match[1])
        const folders = absent[2]?.trim().split(/\s+/)
        for (const folder of folders ?? []) {
          if (!tree.exists(folder)) findings.push(`${where}: the check names ${folder}, which does not exist`)
        }
        for (const { path, text: source } of tree.sources(folders)) {
          for (const name of names) {
            if (source.includes(name)) {
              findings.push(`${where} says this is not built, but ${path} contains ${name}: update the rule`)
            }
          }
        }
      } else {findings.push(
          `${where}: cannot read the check "${spec}" (pinned <path> | absent \`text\`… [in <folder>…])`
        )}
    }
  }
  for (const { path, rule } of tree.pins()) {
    if (!gaps.has(rule)) findings.push(`${path}: pins gap R${rule}, which docs/CONTRACT.md does not list as a Gap`)
  }
  const compare = (what, listed, marked) => {
    if (listed === undefined) return findings.push(`docs/CONTRACT.md: no "${what}" paragraph at the end`)
    const named = ruleNumbers(listed)
    for (const rule of marked) if (!named.has(rule)) findings.push(`docs/CONTRACT.md: "${what}" leaves out R${rule}`)
    for (const rule of named) {
      if (!marked.has(rule)) findings.push(`docs/CONTRACT.md: "${what}" lists R${rule}, whose rule has no such marker`)
    }
  }
  compare("Known gaps", summary.gaps, gaps)
  compare("Not yet built", summary.notYet, notYet)
  return findings
}

/** A planted contract and tree: each entry of `expected` must be found, and nothing else. */
const selfTest = () => {
  const contract = [
    "R1. Built. **Not yet:** the frobnicator. <!-- check: absent `frobnicate` --> <!-- check: absent `qqq` in gone -->",
    "R2. Fixed long ago. **Gap:** still broken. <!-- check: pinned test/two.test.ts -->",
    "R3. **Not yet:** no evidence.",
    "R4. **Departure:** differs, not in the table.",
    "R5. **Gap:** pinned by a missing file. <!-- check: pinned test/none.test.ts -->",
    "R6. **Departure:** in the table.",
    "## Departures at a glance",
    "| R6 | differs |",
    "Known gaps: R2, R7.",
    "Not yet built: R1."
  ].join("\n")
  const files = { "test/two.test.ts": "it(\"R2 passes now\")", "test/six.test.ts": "it(\"gap R6\")" }
  const tree = {
    exists: (path) => path in files,
    read: (path) => files[path],
    sources: () => [{ path: "src/frob.ts", text: "export const frobnicate = 1" }],
    pins: () => [{ path: "test/six.test.ts", rule: 6 }]
  }
  const expected = [
    /R1 says this is not built, but src\/frob\.ts contains frobnicate/,
    /R1: the check names gone, which does not exist/,
    /R2: test\/two\.test\.ts has no test named "gap R2"/,
    /R3 has a Not yet marker without a <!-- check/,
    /R4 states a Departure that the "Departures at a glance" table does not name/,
    /R5: the pinning test test\/none\.test\.ts does not exist/,
    /test\/six\.test\.ts: pins gap R6/,
    /"Known gaps" leaves out R5/,
    /"Known gaps" lists R7/,
    /"Not yet built" leaves out R3/
  ]
  const found = check(contract, tree)
  const problems = expected.filter((pattern) => !found.some((finding) => pattern.test(finding)))
    .map((pattern) => `self-test: not found: ${pattern}`)
  const extra = found.filter((finding) => !expected.some((pattern) => pattern.test(finding)))
    .map((finding) => `self-test: unexpected: ${finding}`)
  return [...problems, ...extra]
}

/** `path` if it is a `.ts` file, else every `.ts` file under it (recursively). @param {string} path */
const tsFiles = (path) =>
  !existsSync(path)
    ? []
    : statSync(path).isDirectory()
    ? readdirSync(path).flatMap((name) => tsFiles(join(path, name)))
    : path.endsWith(".ts")
    ? [path]
    : []

const packages = readdirSync("packages").map((name) => join("packages", name))
const tree = {
  exists: (path) => existsSync(path),
  read: (path) => readFileSync(path, "utf8"),
  sources: (folders) =>
    (folders ?? packages.map((pkg) => join(pkg, "src"))).flatMap(tsFiles)
      .map((path) => ({ path, text: readFileSync(path, "utf8") })),
  pins: () =>
    packages.flatMap((pkg) => tsFiles(join(pkg, "test"))).flatMap((path) =>
      [...readFileSync(path, "utf8").matchAll(/\bgap R(\d{1,3})\b/g)].map((match) => ({ path, rule: Number(match[1]) }))
    )
}

const findings = [...selfTest(), ...check(readFileSync("docs/CONTRACT.md", "utf8"), tree)]
for (const finding of findings) process.stderr.write(`${finding}\n`)
if (findings.length > 0) {
  process.stderr.write(`check-contract: ${findings.length} finding(s)\n`)
  process.exit(1)
}
process.stdout.write("check-contract: the contract's gaps, unbuilt parts and departures agree with the tree\n")
