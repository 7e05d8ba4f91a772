/**
 * The workspace tools' escapes (ADR 0012): what an attacker and a careless caller found, each with the test that would have
 * caught it. Real files in temporary directories, real child processes (the swapping attacker is one).
 */
import { Tool } from "@effect/ai"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Command from "@effect/platform/Command"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { assert, layer } from "@effect/vitest"
import { Effect, Either, Schedule } from "effect"
import * as NFS from "node:fs"
import fsp from "node:fs/promises"
import { syncBuiltinESMExports } from "node:module"
import * as NodeWorkspaceTools from "../src/NodeWorkspaceTools.js"
import { WorkspaceError } from "../src/WorkspaceError.js"
import * as WorkspaceTools from "../src/WorkspaceTools.js"
import { call, setup, timingOut, toolNamed } from "./fixtures.js"

/**
 * A bounded attacker: swaps `dir` between the real directory and a link to `outside` (by renames), holding each
 * state for ~300 µs, for `rounds` rounds or until the file `stop` exists.
 */
const attackerScript = `
const fs = require("node:fs")
const [dir, outside, stop, rounds] = process.argv.slice(1)
const parked = dir + ".parked"
const link = dir + ".link"
fs.symlinkSync(outside, link)
const hold = () => { const end = process.hrtime.bigint() + 300000n; while (process.hrtime.bigint() < end); }
const at = (p) => fs.lstatSync(p, { throwIfNoEntry: false })
for (let i = 0; i < Number(rounds) && !fs.existsSync(stop); i++) {
  try {
    fs.renameSync(dir, parked)
    fs.renameSync(link, dir)
    hold()
    fs.renameSync(dir, link)
    fs.renameSync(parked, dir)
    hold()
  } catch {
    // A tool created \`dir\` while it was missing: put the real one back and go on.
    try {
      if (at(parked)) {
        const now = at(dir)
        if (now && now.isSymbolicLink()) fs.renameSync(dir, link)
        else if (now) fs.rmSync(dir, { recursive: true, force: true })
        fs.renameSync(parked, dir)
      }
      if (!at(link)) fs.symlinkSync(outside, link)
    } catch {}
  }
}
`

// Real file system, real processes, real clock: the test services are left out.
layer(NodeContext.layer, { excludeTestServices: true })("WorkspaceTools escapes (ADR 0012)", (it) => {
  it.scoped("read_file refuses a file swapped in between the walk and the open (Changed), deterministically", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      yield* h.write("target.txt", "what the walk saw\n")
      yield* h.write("swapped.txt", "what an attacker put there\n")
      // The swap lands exactly between the walk's `lstat` and the tool's `open`: `open` is wrapped to rename another
      // file over the target first (the builtin's named exports follow its default export once synced).
      const original = fsp.open
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          fsp.open = ((file: NFS.PathLike, ...rest: Array<never>) => {
            if (String(file).endsWith("target.txt")) NFS.renameSync(h.abs("swapped.txt"), h.abs("target.txt"))
            return original(file, ...rest)
          }) as typeof fsp.open
          syncBuiltinESMExports()
        }),
        () =>
          Effect.sync(() => {
            fsp.open = original
            syncBuiltinESMExports()
          })
      )
      const error = yield* h.failure("read_file", { path: "target.txt" })
      assert.strictEqual(error.reason, "Changed", error.message)
      assert.notInclude(error.message, "attacker")
    }))

  it.scoped("`..` is taken from the directory a link leads to, as the OS does: read_file and shell agree", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      yield* h.write("a/b/keep", "")
      yield* h.write("a/x.txt", "physical\n")
      yield* h.write("x.txt", "lexical\n")
      yield* Effect.orDie(fs.symlink("a/b", h.abs("l")))
      // Lexically `l/../x.txt` is `x.txt`; the kernel goes to `a/b`, then up to `a`.
      assert.strictEqual(yield* h.text("read_file", { path: "l/../x.txt" }), "1\tphysical")
      assert.strictEqual(yield* h.text("shell", { command: "cat l/../x.txt" }), "physical\n[exit code: 0]")
      assert.strictEqual(yield* h.text("grep", { pattern: "i", path: "l/../x.txt" }), "a/x.txt:1: physical")
      yield* h.text("write_file", { path: "l/../y.txt", content: "new" })
      assert.strictEqual(yield* h.read("a/y.txt"), "new")
      assert.isFalse(yield* Effect.orDie(fs.exists(h.abs("y.txt"))))
    }))

  it.scoped("hard links to files outside are refused by read_file, edit_file and grep; write_file replaces the name", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      const fs = yield* FileSystem
      const path = yield* Path
      const outside = yield* Effect.orDie(fs.makeTempDirectoryScoped({ prefix: "harness-outside-" }))
      const secret = path.join(outside, "secret.txt")
      yield* Effect.orDie(fs.writeFileString(secret, "SECRET token\n"))
      yield* Effect.orDie(fs.link(secret, h.abs("innocent.txt")))
      yield* h.write("plain.txt", "token here\n")
      const read = yield* h.failure("read_file", { path: "innocent.txt" })
      assert.strictEqual(read.reason, "HardLink")
      assert.strictEqual(read.code, "HARD_LINK")
      assert.include(read.message, "2 hard links")
      const edit = yield* h.failure("edit_file", { path: "innocent.txt", oldString: "SECRET", newString: "x" })
      assert.strictEqual(edit.reason, "HardLink")
      assert.strictEqual(
        yield* h.text("grep", { pattern: "token" }),
        "plain.txt:1: token here\n[skipped 1 hard-linked file: they may be linked from outside]"
      )
      // Replacing the name leaves the outside file as it was.
      yield* h.text("write_file", { path: "innocent.txt", content: "mine" })
      assert.strictEqual(yield* h.read("innocent.txt"), "mine")
      assert.strictEqual(yield* Effect.orDie(fs.readFileString(secret)), "SECRET token\n")
    }))

  it.scoped(
    "a bounded attacker swapping a directory for a link to outside never redirects a read or a write",
    () =>
      Effect.gen(function*() {
        const h = yield* setup()
        const fs = yield* FileSystem
        const path = yield* Path
        const outside = yield* Effect.orDie(fs.makeTempDirectoryScoped({ prefix: "harness-outside-" }))
        yield* Effect.orDie(fs.writeFileString(path.join(outside, "f.txt"), "SECRET\n"))
        yield* h.write("d/f.txt", "inside\n")
        const stop = path.join(outside, "..", `${path.basename(outside)}.stop`)
        yield* Effect.addFinalizer(() => Effect.ignore(fs.remove(stop)))
        const attacker = yield* Effect.orDie(Command.start(
          Command.make("node", "-e", attackerScript, h.abs("d"), outside, stop, "200000")
        ))
        const outcomes = { read: 0, refused: 0 }
        for (let round = 0; round < 300; round++) {
          const read = yield* Effect.either(h.text("read_file", { path: "d/f.txt" }))
          if (Either.isRight(read)) {
            outcomes.read++
            assert.notInclude(read.right, "SECRET", `round ${round}: a read went outside`)
          } else {
            outcomes.refused++
            assert.instanceOf(read.left, WorkspaceError)
          }
          const found = yield* Effect.either(h.text("grep", { pattern: "SECRET|inside", path: "d" }))
          if (Either.isRight(found)) assert.notMatch(found.right, /:\d+: SECRET/, `round ${round}: grep went outside`)
          yield* Effect.ignore(h.run("write_file", { path: "d/w.txt", content: "PAYLOAD" }))
          // Only the outside file holds `SECRET`: an edit that went outside would change it.
          yield* Effect.ignore(h.run("edit_file", { path: "d/f.txt", oldString: "SECRET", newString: "PWNED" }))
        }
        yield* Effect.orDie(fs.writeFileString(stop, ""))
        yield* Effect.orDie(attacker.exitCode)
        // Nothing was created or changed outside.
        assert.deepStrictEqual(yield* Effect.orDie(fs.readDirectory(outside)), ["f.txt"])
        assert.strictEqual(yield* Effect.orDie(fs.readFileString(path.join(outside, "f.txt"))), "SECRET\n")
        // The attack was real: some calls ran while the directory was a link, some while it was not.
        assert.isAbove(outcomes.read, 0)
      }),
    { timeout: 120_000 }
  )

  it.scoped("write_file and edit_file work for names up to the file system's 255-byte limit", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      for (const name of ["n".repeat(255), "字".repeat(85), `${"m".repeat(250)}.txt`]) {
        assert.include(yield* h.text("write_file", { path: `dir/${name}`, content: "one two\n" }), "(new file)")
        assert.include(yield* h.text("edit_file", { path: `dir/${name}`, oldString: "two", newString: "2" }), "Edited")
        assert.strictEqual(yield* h.read(`dir/${name}`), "one 2\n")
      }
      const tooLong = yield* h.failure("write_file", { path: "x".repeat(256), content: "" })
      assert.strictEqual(tooLong.reason, "InvalidArgument")
      assert.include(tooLong.message, "255 bytes")
    }))

  it.scoped("shell output is held to maxOutputChars, marker included", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxOutputChars: 400 })
      const result = yield* h.text("shell", { command: "seq 1 20000" })
      assert.isAtMost(result.length, 400)
      // One marker for the whole cut: seq's 108 894 bytes less the ~300 shown.
      assert.match(
        result,
        /^… \[truncated: the first 106\.\d KiB of 106\.3 KiB of output omitted, showing the last \d+ B/
      )
      assert.isTrue(result.endsWith("\n19999\n20000\n[exit code: 0]"))
    }))

  it.scoped("a catastrophically backtracking grep pattern finishes (linear-time engine)", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      yield* h.write("evil.txt", `${"a".repeat(5000)}b\n`.repeat(20))
      yield* h.write("fine.txt", "aaa\n")
      // With a backtracking engine `(a+)+$` on 5000 `a`s and a `b` would not finish in any lifetime.
      assert.strictEqual(yield* h.text("grep", { pattern: "(a+)+$" }), "fine.txt:1: aaa")
      assert.match(yield* h.text("grep", { pattern: "(x+x+)+y|(a|aa)+c", path: "evil.txt" }), /^No matches/)
      const backref = yield* h.failure("grep", { pattern: "(a)\\1" })
      assert.strictEqual(backref.reason, "InvalidPattern")
      assert.strictEqual(backref.code, "INVALID_PATTERN")
      assert.include(backref.message, "RE2")
    }))

  it.scoped("every failure carries a code derived from its reason", () =>
    Effect.gen(function*() {
      const h = yield* setup()
      assert.strictEqual((yield* h.failure("read_file", { path: "../x" })).code, "PATH_ESCAPE")
      assert.strictEqual((yield* h.failure("read_file", { path: "missing" })).code, "NOT_FOUND")
      assert.strictEqual((yield* h.failure("shell", { command: "sleep 5", timeoutSeconds: 0.2 })).code, "TIMEOUT")
    }))

  it.scoped("tool JSON Schemas carry no leaked refinement titles", () =>
    Effect.sync(() => {
      const schemas = [
        Tool.getJsonSchema(WorkspaceTools.ReadFile),
        Tool.getJsonSchema(WorkspaceTools.ListDir),
        Tool.getJsonSchema(WorkspaceTools.FindFiles),
        Tool.getJsonSchema(WorkspaceTools.Grep),
        Tool.getJsonSchema(WorkspaceTools.WriteFile),
        Tool.getJsonSchema(WorkspaceTools.EditFile),
        Tool.getJsonSchema(WorkspaceTools.Shell)
      ]
      for (const schema of schemas) assert.notInclude(JSON.stringify(schema), "\"title\"")
      const readFile = JSON.stringify(Tool.getJsonSchema(WorkspaceTools.ReadFile))
      assert.include(readFile, "\"type\":\"integer\",\"exclusiveMinimum\":0,\"description\":\"The 1-based line")
    }))

  it.scoped("NodeWorkspaceTools.make builds tools that need no services", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem
      const path = yield* Path
      const root = yield* fs.makeTempDirectoryScoped()
      yield* fs.writeFileString(path.join(root, "hello.txt"), "hi\n")
      const tools = yield* NodeWorkspaceTools.make({ root })
      const result = yield* call(yield* toolNamed(tools, "read_file"), { path: "hello.txt" })
      assert.strictEqual(result, "1\thi")
    }))
})

// Real processes, the test clock: a timeout is decided by the clock the test moves, never by the machine's speed.
layer(NodeContext.layer)("WorkspaceTools escapes, timeouts (TestClock)", (it) => {
  it.scoped("a timed-out shell's output is held to maxOutputChars, marker included", () =>
    Effect.gen(function*() {
      const h = yield* setup({ maxOutputChars: 400 })
      // The timeout comes once seq is done (its output is in the pipe before `done` is there).
      const { result: timedOut } = yield* timingOut(
        h.failure("shell", { command: "seq 1 20000; echo > done; sleep 30", timeoutSeconds: 1 }),
        1,
        Effect.flatMap(FileSystem, (fs) =>
          fs.exists(h.abs("done")).pipe(
            Effect.filterOrFail((there) => there, () => "seq is not done yet"),
            Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("30 seconds"))),
            Effect.orDie
          ))
      )
      assert.strictEqual(timedOut.reason, "Timeout")
      assert.isAtMost(timedOut.message.length, 400)
      assert.isTrue(timedOut.message.endsWith("\n20000"))
    }))
})
