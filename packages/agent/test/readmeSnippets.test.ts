/**
 * Every `ts` block of every README (the root one and each package's) type-checks, and every complete one runs, so
 * that embedding Harness from its READMEs works as printed. The comment on the line before a block's fence says
 * what the block is (docs/README.md, "README snippets"): nothing — a complete module, type-checked and run with
 * `tsx` (with its top-level `program` when that is an Effect); `<!-- snippet: fragment … -->` — wrapped in
 * `Effect.gen`, after the declarations the comment gives, and type-checked only; `<!-- snippet: test <file> -->` — a
 * test file, type-checked, whose code after its imports is in `<file>` verbatim.
 *
 * The blocks are written to a temporary folder inside this package (so workspace imports resolve as they do for a
 * user of the workspace; a dot-folder, which no tsconfig `include` matches) and removed afterwards.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import ts from "typescript"

const repo = fileURLToPath(new URL("../../..", import.meta.url))

type Kind =
  | { readonly _tag: "program" }
  | { readonly _tag: "fragment"; readonly given: string }
  | { readonly _tag: "test"; readonly file: string }

interface Snippet {
  /** `README.md:line` of the block's first line. */
  readonly where: string
  readonly code: string
  readonly kind: Kind
}

/** The kind a block's preceding comment gives it (the comment may span lines; it ends on the line before the fence). */
const kindOf = (lines: ReadonlyArray<string>, fence: number, where: string): Kind => {
  if (fence === 0 || !lines[fence - 1]!.trimEnd().endsWith("-->")) return { _tag: "program" }
  let start = fence - 1
  while (start > 0 && !lines[start]!.includes("<!--")) start--
  const comment = lines.slice(start, fence).join("\n").replace(/^\s*<!--/, "").replace(/-->\s*$/, "")
  const match = /^\s*snippet:\s*(fragment|test)\b([^\n]*)\n?([\s\S]*)$/.exec(comment)
  if (match === null) return { _tag: "program" }
  if (match[1] === "test") {
    const file = match[2]!.trim()
    assert.isTrue(file !== "" && existsSync(join(repo, file)), `${where}: the snippet's test file "${file}" is missing`)
    return { _tag: "test", file }
  }
  return { _tag: "fragment", given: match[3]! }
}

/** The `ts` blocks of one README. */
const snippetsOf = (readme: string): ReadonlyArray<Snippet> => {
  const lines = readFileSync(join(repo, readme), "utf8").split("\n")
  const out: Array<Snippet> = []
  lines.forEach((line, index) => {
    if (line.trim() !== "```ts") return
    const end = lines.findIndex((other, at) => at > index && other.trim() === "```")
    assert.isAbove(end, index, `${readme}:${index + 1}: a ts block that never closes`)
    const where = `${readme}:${index + 2}`
    out.push({ where, code: lines.slice(index + 1, end).join("\n") + "\n", kind: kindOf(lines, index, where) })
  })
  return out
}

const readmes = [
  "README.md",
  ...readdirSync(join(repo, "packages")).map((name) => join("packages", name, "README.md"))
    .filter((path) => existsSync(join(repo, path)))
]
const snippets = readmes.flatMap(snippetsOf)

/** A module's import declarations (each may span lines) and the rest of it. */
const splitImports = (code: string) => {
  const imports: Array<string> = []
  const rest: Array<string> = []
  let open = false
  for (const line of code.split("\n")) {
    if (open || /^import\b/.test(line)) {
      imports.push(line)
      open = !/\bfrom\s+["'][^"']+["']\s*;?\s*(\/\/.*)?$/.test(line) && !/^import\s+["']/.test(line)
    } else rest.push(line)
  }
  return { imports: imports.join("\n"), rest: rest.join("\n") }
}

/** The module written for a snippet: a fragment wrapped in `Effect.gen`; a program's `program` exported to run it. */
const moduleOf = (snippet: Snippet): string => {
  switch (snippet.kind._tag) {
    case "fragment": {
      const given = splitImports(snippet.kind.given)
      const own = splitImports(snippet.code)
      return [
        "import * as Snippet$Effect from \"effect/Effect\"",
        given.imports,
        own.imports,
        given.rest,
        "export const snippet = Snippet$Effect.gen(function*() {",
        own.rest,
        "})",
        ""
      ].join("\n")
    }
    case "program":
      return /^(const|let) program\b/m.test(snippet.code) ? `${snippet.code}\nexport { program }\n` : snippet.code
    case "test":
      return snippet.code
  }
}

/** The workspace's compiler options, for a type check only; names a snippet declares and leaves unused are allowed. */
const compilerOptions = (): ts.CompilerOptions => {
  const path = join(repo, "tsconfig.base.json")
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(path, ts.sys.readFile).config, ts.sys, repo)
  return {
    ...parsed.options,
    noEmit: true,
    composite: false,
    incremental: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    emitDeclarationOnly: false,
    noUnusedLocals: false,
    noUnusedParameters: false,
    plugins: []
  }
}

/**
 * Runs `node <args>` and returns the JSON its `REPORT ` line carries. Asynchronous, so the test worker stays
 * responsive while the child works: a worker that blocks its event loop for a minute (a type check is that slow on a
 * loaded machine) misses vitest's RPC deadline and the run fails with "Timeout calling onTaskUpdate".
 */
const reportOf = <A>(args: ReadonlyArray<string>) =>
  Effect.async<A>((resume) => {
    execFile(process.execPath, args, { cwd: repo, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      const line = stdout.split("\n").find((text) => text.startsWith("REPORT "))
      resume(
        line === undefined
          ? Effect.dieMessage(`the child reported nothing (${String(error)}):\n${stdout}`)
          : Effect.succeed(JSON.parse(line.slice("REPORT ".length)))
      )
    })
  })

/**
 * Type-checks the snippet files together in one child process and returns each file's diagnostics (line, text).
 * (In the test worker the check would block its event loop for as long as it takes.)
 */
const typeCheck = (dir: string, files: ReadonlyArray<string>) => {
  const checker = join(dir, "checker.mjs")
  writeFileSync(join(dir, "checker.json"), JSON.stringify({ files, options: compilerOptions() }))
  writeFileSync(
    checker,
    `import { readFileSync } from "node:fs"
import ts from "typescript"
const { files, options } = JSON.parse(readFileSync(process.argv[2], "utf8"))
const program = ts.createProgram(files, options)
const report = files.map((file) => {
  const source = program.getSourceFile(file)
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((diagnostic) => ({
    line: source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1,
    text: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\\n")
  }))
})
process.stdout.write("REPORT " + JSON.stringify(report) + "\\n")
`
  )
  return reportOf<ReadonlyArray<ReadonlyArray<{ readonly line: number; readonly text: string }>>>([
    checker,
    join(dir, "checker.json")
  ])
}

/** Runs the program snippets in one child process (tsx), each in a fresh working folder, and returns its report. */
const runPrograms = (dir: string, files: ReadonlyArray<string>) => {
  const runner = join(dir, "runner.mjs")
  writeFileSync(
    runner,
    `import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
const files = JSON.parse(process.argv[2])
const report = []
const home = process.cwd()
for (const file of files) {
  const cwd = mkdtempSync(join(tmpdir(), "readme-snippet-"))
  process.chdir(cwd)
  const run = import(file).then((module) => Effect.isEffect(module.program) ? Effect.runPromise(module.program) : undefined)
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("did not end within 120 s")), 120_000).unref())
  try {
    await Promise.race([run, timeout])
    report.push({ file })
  } catch (error) {
    report.push({ file, error: String(error instanceof Error ? error.stack ?? error.message : error) })
  }
  process.chdir(home)
  rmSync(cwd, { recursive: true, force: true })
}
process.stdout.write("REPORT " + JSON.stringify(report) + "\\n")
process.exit(0)
`
  )
  return reportOf<ReadonlyArray<{ readonly file: string; readonly error?: string }>>([
    "--import",
    "tsx",
    runner,
    JSON.stringify(files.map((file) => pathToFileURL(file).href))
  ])
}

describe("README snippets", () => {
  it("every README has been read and its ts blocks found", () => {
    assert.isAtLeast(readmes.length, 10)
    assert.isAtLeast(snippets.length, 10)
  })

  it.live("every ts block type-checks, every complete one runs, and every test one is in its test file", () => {
    const dir = mkdtempSync(join(fileURLToPath(new URL(".", import.meta.url)), ".readme-snippets-"))
    return Effect.gen(function*() {
      const files = snippets.map((snippet, index) => {
        const file = join(dir, `snippet${index}.ts`)
        writeFileSync(file, moduleOf(snippet))
        return { file, snippet }
      })
      const diagnostics = yield* typeCheck(dir, files.map(({ file }) => file))
      const problems = files.flatMap(({ file, snippet }, index) =>
        diagnostics[index]!.map(({ line, text }) =>
          `${snippet.where} (${snippet.kind._tag}, line ${line} of ${relative(repo, file)}): ${text}`
        )
      )
      assert.deepStrictEqual(problems, [], `\n${problems.join("\n")}`)

      for (const { snippet } of files) {
        if (snippet.kind._tag !== "test") continue
        const body = splitImports(snippet.code).rest.trim()
        const test = readFileSync(join(repo, snippet.kind.file), "utf8")
        assert.isTrue(test.includes(body), `${snippet.where}: its code is not in ${snippet.kind.file} verbatim`)
      }

      const programs = files.filter(({ snippet }) => snippet.kind._tag === "program")
      const report = yield* runPrograms(dir, programs.map(({ file }) => file))
      const failures = report.flatMap(({ error, file }) =>
        error === undefined ? [] : [`${programs.find((p) => p.file === fileURLToPath(file))?.snippet.where}: ${error}`]
      )
      assert.deepStrictEqual(failures, [], `\n${failures.join("\n")}`)
      assert.strictEqual(report.length, programs.length)
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
  }, 420_000)
})
