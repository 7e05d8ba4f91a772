import { Tool } from "@effect/ai"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as WorkspaceTools from "../src/WorkspaceTools.js"
import { setup } from "./fixtures.js"

// Real file system, real clock: the test services are left out.
layer(NodeContext.layer, { excludeTestServices: true })("WorkspaceTools", (it) => {
  it.scoped("builds the seven tools with the default policies; only the reads are replayed after a crash (R172)", () =>
    Effect.gen(function*() {
      const { tools } = yield* setup()
      assert.deepStrictEqual(
        tools.map((tool) => [tool.name, tool.parallel, tool.approval, tool.onCancel, tool.replay]),
        [
          ["read_file", true, "none", "interrupt", "safe"],
          ["list_dir", true, "none", "interrupt", "safe"],
          ["find_files", true, "none", "interrupt", "safe"],
          ["grep", true, "none", "interrupt", "safe"],
          ["write_file", false, "required", "finish", "never"],
          ["edit_file", false, "required", "finish", "never"],
          ["shell", false, "required", "interrupt", "never"]
        ]
      )
      // What the model is shown: a JSON Schema per tool.
      const schema = Tool.getJsonSchema(WorkspaceTools.ReadFile)
      assert.deepPropertyVal(schema, "required", ["path"])
    }))

  it.scoped("refuses invalid limits and a missing root at build time", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem
      const root = yield* fs.makeTempDirectoryScoped()
      const bad = yield* Effect.flip(WorkspaceTools.make({ root, limits: { maxReadLines: 0 } }))
      assert.strictEqual(bad.reason, "InvalidArgument")
      assert.include(bad.message, "limits.maxReadLines")
      const badDuration = yield* Effect.flip(WorkspaceTools.make({ root, limits: { shellTimeout: -5 } }))
      assert.include(badDuration.message, "limits.shellTimeout")
      const missing = yield* Effect.flip(WorkspaceTools.make({ root: `${root}/nope` }))
      assert.strictEqual(missing.reason, "NotFound")
    }))

  it.effect("makeLimits names the limit and what was wrong with it", () =>
    Effect.gen(function*() {
      const refused = (limits: Partial<WorkspaceTools.Limits>) => Effect.flip(WorkspaceTools.makeLimits(limits))
      const cases: ReadonlyArray<readonly [Partial<WorkspaceTools.Limits>, string]> = [
        [{ maxOutputChars: 0 }, "limits.maxOutputChars must be a positive integer, got 0."],
        [{ maxOutputChars: 1.5 }, "limits.maxOutputChars must be a positive integer, got 1.5."],
        [{ maxFileBytes: Number.NaN }, "limits.maxFileBytes must be a positive integer, got NaN."],
        // Untyped input (as from a configuration file): the cast is the point of the case.
        [
          { maxGrepFileBytes: "1 MiB" as unknown as number },
          "limits.maxGrepFileBytes must be a positive integer, got \"1 MiB\"."
        ],
        [{ shellKillGrace: 0 }, "limits.shellKillGrace must be a positive finite duration"],
        [
          { maxShellTimeout: "soon" as Duration.DurationInput },
          "limits.maxShellTimeout must be a positive finite duration"
        ]
      ]
      for (const [limits, message] of cases) {
        const error = yield* refused(limits)
        assert.strictEqual(error.reason, "InvalidArgument")
        assert.include(error.message, message)
      }
      const unknown = yield* refused({ maxOutputChar: 10 } as unknown as Partial<WorkspaceTools.Limits>)
      assert.include(unknown.message, "limits.maxOutputChar is not a known setting")
      const good = yield* WorkspaceTools.makeLimits({ maxOutputChars: 10, shellTimeout: "5 seconds" })
      assert.strictEqual(good.maxOutputChars, 10)
      assert.strictEqual(Duration.toMillis(good.shellTimeout), 5000)
      assert.strictEqual(good.maxReadLines, WorkspaceTools.defaultLimits.maxReadLines)
    }))

  // -------------------------------------------------------------------------------------------------------------
  // read_file
  // -------------------------------------------------------------------------------------------------------------

  it.scoped("read_file: numbered lines, offset and limit", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      yield* h.write("src/a.txt", "one\ntwo\r\nthree\nfour\n")
      assert.strictEqual(yield* h.text("read_file", { path: "src/a.txt" }), "1\tone\n2\ttwo\n3\tthree\n4\tfour")
      assert.strictEqual(
        yield* h.text("read_file", { path: "src/a.txt", offset: 2, limit: 2 }),
        "2\ttwo\n3\tthree\n… [truncated: 1 more line of 4; use offset=4 to read on]"
      )
      assert.strictEqual(yield* h.text("read_file", { path: "src/a.txt", offset: 4 }), "4\tfour")
      const past = yield* h.failure("read_file", { path: "src/a.txt", offset: 9 })
      assert.strictEqual(past.reason, "InvalidArgument")
      assert.include(past.message, "has 4 lines")
      yield* h.write("empty.txt", "")
      assert.strictEqual(yield* h.text("read_file", { path: "empty.txt" }), "[`empty.txt` is empty]")
    }))

  it.scoped("read_file: long files, long lines and large output are cut with markers", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxReadLines: 10, maxLineChars: 20, maxFileBytes: 4000 })
      const lines = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`)
      yield* h.write("long.txt", lines.join("\n") + "\n")
      const first = yield* h.text("read_file", { path: "long.txt" })
      assert.isTrue(first.startsWith(" 1\tline 1\n"))
      assert.isTrue(first.endsWith("10\tline 10\n… [truncated: 15 more lines of 25; use offset=11 to read on]"))
      const next = yield* h.text("read_file", { path: "long.txt", offset: 11, limit: 500 })
      assert.isTrue(next.startsWith("11\tline 11\n"))
      assert.include(next, "use offset=21 to read on")

      yield* h.write("wide.txt", `${"x".repeat(50)}\n`)
      assert.strictEqual(
        yield* h.text("read_file", { path: "wide.txt" }),
        `1\t${"x".repeat(20)} … [line truncated: 30 more characters]`
      )

      // The output limit stops at a whole line, and says where to go on.
      const small = yield* setup({ maxOutputChars: 300 })
      yield* small.write("dense.txt", Array.from({ length: 20 }, () => "y".repeat(19)).join("\n"))
      const dense = yield* small.text("read_file", { path: "dense.txt" })
      assert.match(dense, /\n 8\ty{19}\n… \[truncated: 12 more lines of 20; use offset=9 to read on\]$/)
      assert.isAtMost(dense.length, 300)

      // One line longer than the output limit (but within maxLineChars): the page cannot stop at a line boundary,
      // so the last guard cuts it, and the cut carries its marker with the count of characters it dropped.
      yield* small.write("one-line.txt", "w".repeat(1000))
      const cut = yield* small.text("read_file", { path: "one-line.txt" })
      assert.strictEqual(cut.length, 300)
      const marker = /\n… \[truncated: (\d+) more characters of output; ask for less\]$/.exec(cut)
      assert.isNotNull(marker)
      const kept = cut.slice(0, marker!.index)
      assert.strictEqual(kept, `1\t${"w".repeat(kept.length - 2)}`)
      assert.strictEqual(Number(marker![1]), "1\t".length + 1000 - kept.length)

      yield* h.write("big.txt", "z".repeat(5000))
      const big = yield* h.failure("read_file", { path: "big.txt" })
      assert.strictEqual(big.reason, "TooLarge")
      assert.include(big.message, "grep")
    }))

  it.scoped("read_file: directories, missing files and binary files are refused", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      yield* h.write("dir/x.txt", "x")
      assert.strictEqual((yield* h.failure("read_file", { path: "dir" })).reason, "NotAFile")
      const missing = yield* h.failure("read_file", { path: "nope.txt" })
      assert.strictEqual(missing.reason, "NotFound")
      assert.include(missing.message, "does not exist")
      yield* Effect.orDie(fs.writeFile(h.abs("blob.bin"), new Uint8Array([1, 2, 0, 3])))
      assert.strictEqual((yield* h.failure("read_file", { path: "blob.bin" })).reason, "Binary")
    }))

  it.scoped("read_file and write_file refuse every kind of escape with the right reason", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      const path = yield* Path
      const outside = yield* fs.makeTempDirectoryScoped()
      yield* fs.writeFileString(path.join(outside, "secret.txt"), "secret")
      yield* fs.symlink(outside, h.abs("out"))
      yield* fs.symlink("loop", h.abs("loop"))
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        ["../secret.txt", "PathEscape", "`..`"],
        [path.join(outside, "secret.txt"), "PathEscape", "absolute path outside"],
        ["out/secret.txt", "PathEscape", "symbolic link"],
        ["loop", "SymlinkLoop", "loop"]
      ]
      for (const [input, reason, mentions] of cases) {
        for (const tool of ["read_file", "write_file"]) {
          const error = yield* h.failure(tool, { path: input, content: "pwned" })
          assert.strictEqual(error.reason, reason, `${tool} ${input}`)
          assert.include(error.message, mentions)
        }
      }
      // Nothing was written outside.
      assert.deepStrictEqual(yield* fs.readDirectory(outside), ["secret.txt"])
      assert.strictEqual(yield* fs.readFileString(path.join(outside, "secret.txt")), "secret")
    }))

  // -------------------------------------------------------------------------------------------------------------
  // list_dir
  // -------------------------------------------------------------------------------------------------------------

  it.scoped("list_dir: sorted entries, types and sizes, truncation", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxListEntries: 3 })
      const fs = yield* FileSystem
      yield* h.write("b.txt", "12345")
      yield* h.write("a/inner.txt", "")
      yield* h.write(".hidden", "")
      yield* fs.symlink("b.txt", h.abs("c-link"))
      yield* fs.symlink("missing", h.abs("d-broken"))
      const listing = yield* h.text("list_dir", {})
      assert.strictEqual(
        listing,
        ".hidden (0 B)\na/\nb.txt (5 B)\n… [truncated: 2 more entries; use find_files with a pattern to narrow]"
      )
      const all = yield* setup()
      yield* all.write("x/y.txt", "")
      yield* fs.symlink("y.txt", all.abs("x/link"))
      yield* fs.symlink("gone", all.abs("x/broken"))
      assert.strictEqual(
        yield* all.text("list_dir", { path: "x" }),
        "broken -> gone (broken link)\nlink -> y.txt\ny.txt (0 B)"
      )
      assert.strictEqual(yield* all.text("list_dir", { path: "x/.." }), "x/")
      assert.strictEqual((yield* all.failure("list_dir", { path: "x/y.txt" })).reason, "NotADirectory")
      assert.strictEqual((yield* all.failure("list_dir", { path: ".." })).reason, "PathEscape")
    }))

  // -------------------------------------------------------------------------------------------------------------
  // find_files
  // -------------------------------------------------------------------------------------------------------------

  it.scoped("find_files: glob matches, sorted and confined; .git and node_modules skipped by default", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      const path = yield* Path
      const outside = yield* fs.makeTempDirectoryScoped()
      yield* fs.writeFileString(path.join(outside, "leak.ts"), "")
      yield* h.write("src/b.ts", "")
      yield* h.write("src/a.ts", "")
      yield* h.write("src/deep/c.ts", "")
      yield* h.write("src/readme.md", "")
      yield* h.write(".config/d.ts", "")
      yield* h.write("node_modules/pkg/e.ts", "")
      yield* h.write(".git/f.ts", "")
      yield* fs.symlink(outside, h.abs("linked-out"))
      // Symbolic links are neither followed nor listed (the linked directory and file lie outside).
      yield* fs.symlink(path.join(outside, "leak.ts"), h.abs("src/leak-link.ts"))
      assert.strictEqual(
        yield* h.text("find_files", { pattern: "**/*.ts" }),
        ".config/d.ts\nsrc/a.ts\nsrc/b.ts\nsrc/deep/c.ts"
      )
      assert.strictEqual(
        yield* h.text("find_files", { pattern: "*.ts", path: "src" }),
        "src/a.ts\nsrc/b.ts"
      )
      assert.include(yield* h.text("find_files", { pattern: "**/e.ts", includeIgnored: true }), "node_modules/pkg/e.ts")
      assert.strictEqual(
        yield* h.text("find_files", { pattern: "**/*.ts", path: "src", limit: 2 }),
        "src/a.ts\nsrc/b.ts\n… [truncated: 1 more match; narrow the pattern or path, or raise limit (at most 1000)]"
      )
      assert.strictEqual(yield* h.text("find_files", { pattern: "**/*.rs" }), "No files match `**/*.rs` under `.`.")
      for (const pattern of ["../**", "src/../../*", "/etc/*", "{..,src}/*"]) {
        assert.strictEqual((yield* h.failure("find_files", { pattern })).reason, "InvalidPattern", pattern)
      }
      assert.strictEqual((yield* h.failure("find_files", { pattern: "*", path: "linked-out" })).reason, "PathEscape")
    }))

  // -------------------------------------------------------------------------------------------------------------
  // grep
  // -------------------------------------------------------------------------------------------------------------

  it.scoped("grep: regex matches as path:line: text, filters, skips and limits", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      yield* h.write("src/a.ts", "export function main() {}\nconst x = 1\n")
      yield* h.write("src/b.js", "function helper() {}\nFUNCTION SHOUT\n")
      yield* h.write("node_modules/dep/index.js", "function dep() {}\n")
      yield* h.write(".git/HEAD", "function git\n")
      yield* Effect.orDie(fs.writeFile(h.abs("src/data.bin"), new Uint8Array([102, 117, 110, 99, 0, 1])))
      assert.strictEqual(
        yield* h.text("grep", { pattern: "function\\s+\\w+" }),
        "src/a.ts:1: export function main() {}\nsrc/b.js:1: function helper() {}\n[skipped 1 binary file]"
      )
      assert.strictEqual(
        yield* h.text("grep", { pattern: "^function", glob: "**/*.js", ignoreCase: true, path: "src" }),
        "src/b.js:1: function helper() {}\nsrc/b.js:2: FUNCTION SHOUT"
      )
      assert.strictEqual(yield* h.text("grep", { pattern: "const", path: "src/a.ts" }), "src/a.ts:2: const x = 1")
      assert.include(yield* h.text("grep", { pattern: "dep\\(", includeIgnored: true }), "node_modules/dep/index.js:1:")
      assert.strictEqual(
        yield* h.text("grep", { pattern: "nothing-here" }),
        "No matches for /nothing-here/ in 3 files under `.`.\n[skipped 1 binary file]"
      )
      const invalid = yield* h.failure("grep", { pattern: "(unclosed" })
      assert.strictEqual(invalid.reason, "InvalidPattern")
      assert.include(invalid.message, "not a valid regular expression in RE2 syntax")
    }))

  it.scoped("grep: match, file and size limits are marked", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxGrepMatches: 3, maxGrepFiles: 2, maxGrepFileBytes: 100, maxLineChars: 10 })
      yield* h.write("a.txt", "hit 1\nhit 2\n")
      yield* h.write("b.txt", "hit 3\nhit 4 and a very long tail\n")
      yield* h.write("c.txt", "hit 5\n")
      yield* h.write("d-large.txt", "hit\n".repeat(100))
      const limited = yield* h.text("grep", { pattern: "hit", maxMatches: 50 })
      assert.strictEqual(
        limited,
        [
          "a.txt:1: hit 1",
          "a.txt:2: hit 2",
          "b.txt:1: hit 3",
          "… [truncated: stopped at 3 matches and more exist; narrow the pattern, path or glob, or raise " +
          "maxMatches (at most 3)]",
          "… [truncated: searched only the first 2 of 4 files in path order; narrow path or glob]"
        ].join("\n")
      )
      const wide = yield* h.text("grep", { pattern: "long", path: "b.txt" })
      assert.strictEqual(wide, "b.txt:2: hit 4 and  … [line truncated: 16 more characters]")
      assert.include(yield* h.text("grep", { pattern: "hit", glob: "d-*" }), "[skipped 1 file over 100 B]")
    }))

  it.scoped("list_dir, find_files and grep stop at the output limit with a marker", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxOutputChars: 400 })
      for (let index = 0; index < 40; index++) {
        yield* h.write(`dir/file-${String(index).padStart(2, "0")}.txt`, "needle\n".repeat(3))
      }
      const listing = yield* h.text("list_dir", { path: "dir" })
      assert.isAtMost(listing.length, 400)
      assert.match(listing, /\nfile-\d\d\.txt \(21 B\)\n… \[truncated: \d+ more entries; use find_files/)
      const found = yield* h.text("find_files", { pattern: "**/*.txt" })
      assert.isAtMost(found.length, 400)
      assert.match(found, /\ndir\/file-\d\d\.txt\n… \[truncated: \d+ more matches; narrow the pattern/)
      const grepped = yield* h.text("grep", { pattern: "needle", maxMatches: 1000 })
      assert.isAtMost(grepped.length, 400)
      assert.match(grepped, /:\d: needle\n… \[truncated: stopped after \d+ matches at the output limit/)
    }))

  // -------------------------------------------------------------------------------------------------------------
  // write_file, edit_file
  // -------------------------------------------------------------------------------------------------------------

  it.scoped("write_file: creates parent directories, replaces content, keeps the mode", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      assert.strictEqual(
        yield* h.text("write_file", { path: "new/deep/file.txt", content: "hello\nworld\n" }),
        "Wrote 2 lines (12 B) to `new/deep/file.txt` (new file)."
      )
      assert.strictEqual(yield* h.read("new/deep/file.txt"), "hello\nworld\n")
      yield* h.write("script.sh", "#!/bin/sh\n")
      yield* fs.chmod(h.abs("script.sh"), 0o755)
      assert.strictEqual(
        yield* h.text("write_file", { path: "script.sh", content: "#!/bin/sh\necho hi\n" }),
        "Wrote 2 lines (18 B) to `script.sh` (replaced its previous content)."
      )
      assert.strictEqual(yield* h.read("script.sh"), "#!/bin/sh\necho hi\n")
      assert.strictEqual((yield* fs.stat(h.abs("script.sh"))).mode & 0o777, 0o755)
      // No temporary files are left behind.
      assert.deepStrictEqual((yield* fs.readDirectory(h.root)).sort(), ["new", "script.sh"])
      assert.strictEqual((yield* h.failure("write_file", { path: "new", content: "x" })).reason, "NotAFile")
      const throughFile = yield* h.failure("write_file", { path: "script.sh/inner.txt", content: "x" })
      assert.strictEqual(throughFile.reason, "NotADirectory")
    }))

  it.scoped("edit_file: exact unique replacement, ambiguity and no-match reported with counts", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      yield* h.write("a.ts", "const a = 1\nconst b = 2\nconst a2 = 1\n")
      assert.strictEqual(
        yield* h.text("edit_file", { path: "a.ts", oldString: "const b = 2", newString: "const b = 3" }),
        "Edited `a.ts`: replaced 1 occurrence (line 2)."
      )
      assert.strictEqual(yield* h.read("a.ts"), "const a = 1\nconst b = 3\nconst a2 = 1\n")

      const ambiguous = yield* h.failure("edit_file", { path: "a.ts", oldString: "= 1", newString: "= 9" })
      assert.strictEqual(ambiguous.reason, "Ambiguous")
      assert.include(ambiguous.message, "occurs 2 times")
      assert.include(ambiguous.message, "lines 1, 3")
      assert.include(ambiguous.message, "replaceAll")
      assert.strictEqual(yield* h.read("a.ts"), "const a = 1\nconst b = 3\nconst a2 = 1\n")

      const missing = yield* h.failure("edit_file", { path: "a.ts", oldString: "const c", newString: "x" })
      assert.strictEqual(missing.reason, "NoMatch")
      assert.include(missing.message, "0 matches")

      assert.strictEqual(
        yield* h.text("edit_file", { path: "a.ts", oldString: "= 1", newString: "= $&9", replaceAll: true }),
        "Edited `a.ts`: replaced 2 occurrences (lines 1, 3)."
      )
      // Replacement text is literal (no `$&` patterns).
      assert.strictEqual(yield* h.read("a.ts"), "const a = $&9\nconst b = 3\nconst a2 = $&9\n")

      yield* h.write("crlf.txt", "one\r\ntwo\r\n")
      const crlf = yield* h.failure("edit_file", { path: "crlf.txt", oldString: "one\ntwo", newString: "x" })
      assert.include(crlf.message, "CRLF")
      assert.strictEqual(
        (yield* h.failure("edit_file", { path: "a.ts", oldString: "", newString: "x" })).reason,
        "InvalidArgument"
      )
      assert.strictEqual(
        (yield* h.failure("edit_file", { path: "a.ts", oldString: "b", newString: "b" })).reason,
        "InvalidArgument"
      )
      const absent = yield* h.failure("edit_file", { path: "nope.ts", oldString: "a", newString: "b" })
      assert.strictEqual(absent.reason, "NotFound")
    }))
})
