/**
 * A property of the file tools' confinement and of `edit_file`: random sequences of `read_file`, `write_file` and
 * `edit_file` calls (and `Workspace.read`, which gives the bytes) on random paths — `..`, `.`, symbolic links that
 * stay inside, leave, dangle, loop or are absolute, hard links to outside files, absolute paths through the root,
 * its alias or elsewhere, NFC/NFD names, NUL — in a real temporary tree, each checked against an oracle that walks
 * the path as the kernel does (`lstat`, `readlink`) and refuses at the first step outside the root.
 *
 * Invariants, after every call:
 * 1. nothing outside the root changes (the outside tree, its directories, files, links and contents), and no
 *    result ever carries an outside file's content;
 * 2. a call fails with the reason the oracle predicts: `InvalidArgument` (NUL), `PathEscape` (`..` above the root,
 *    a link or an absolute path out), `SymlinkLoop`, `HardLink`, `NotAFile`, `NotFound` / `NotADirectory`;
 * 3. a read of a file the oracle finds inside gives exactly its bytes; a write writes exactly there;
 * 4. `edit_file` against a model: an empty or unchanged `oldString` is `InvalidArgument`, no occurrence
 *    `NoMatch`, several without `replaceAll` `Ambiguous`, else the first (or every) non-overlapping occurrence
 *    replaced by the literal `newString` (`$&` stays `$&`);
 * 5. the root's files and links are exactly the model's: only the oracle's target of a successful write or edit
 *    changes.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, layer } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import * as NFS from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Workspace from "../src/Workspace.js"
import { WorkspaceError } from "../src/WorkspaceError.js"
import * as WorkspaceTools from "../src/WorkspaceTools.js"
import { call, toolNamed } from "./fixtures.js"

/** The content of the outside file a careless tool would leak. */
const secret = "SECRET outside the workspace\n"

/** A sandbox: `base/outside`, `base/root` (the workspace) and `base/alias` (a link to it, the configured root). */
interface Sandbox {
  readonly base: string
  readonly root: string
  readonly alias: string
  readonly outside: string
}

/** Builds the tree every run starts from. */
const makeSandbox = (): Sandbox => {
  const base = NFS.realpathSync(NFS.mkdtempSync(nodePath.join(os.tmpdir(), "harness-tools-prop-")))
  const root = nodePath.join(base, "root")
  const alias = nodePath.join(base, "alias")
  const outside = nodePath.join(base, "outside")
  const file = (p: string, content: string) => NFS.writeFileSync(p, content)
  NFS.mkdirSync(nodePath.join(outside, "sub"), { recursive: true })
  file(nodePath.join(outside, "secret.txt"), secret)
  file(nodePath.join(outside, "notes.txt"), secret)
  NFS.mkdirSync(nodePath.join(root, "a", "b"), { recursive: true })
  file(nodePath.join(root, "file.txt"), "one\ntwo\n")
  file(nodePath.join(root, "a", "notes.txt"), "alpha $& beta\nalpha\r\n")
  file(nodePath.join(root, "a", "b", "deep.txt"), "deep")
  file(nodePath.join(root, "ü.txt"), "nfc")
  NFS.linkSync(nodePath.join(outside, "secret.txt"), nodePath.join(root, "hard.txt"))
  const link = (target: string, at: string) => NFS.symlinkSync(target, nodePath.join(root, at))
  link("a", "in-link")
  link("a/notes.txt", "file-link")
  link("../outside", "out-link")
  link(outside, "abs-out")
  link(nodePath.join(root, "a"), "abs-in")
  link(nodePath.join(alias, "a"), "alias-in")
  link("..", "a/up")
  link("../..", "a/upup")
  link("a/new.txt", "dangling-in")
  link("zz", "dangling-dir")
  link("../outside/new.txt", "dangling-out")
  link("loop", "loop")
  NFS.symlinkSync(root, alias)
  return { base, root, alias, outside }
}

/** Every file and link under `dir` (not following links): path → content or `-> target`; directories with `dir:`. */
const snapshot = (dir: string, withDirectories: boolean): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (at: string) => {
    for (const name of NFS.readdirSync(at)) {
      const p = nodePath.join(at, name)
      const st = NFS.lstatSync(p)
      if (st.isSymbolicLink()) out[p] = `-> ${NFS.readlinkSync(p)}`
      else if (st.isDirectory()) {
        if (withDirectories) out[p] = "dir:"
        visit(p)
      } else out[p] = NFS.readFileSync(p, "utf8")
    }
  }
  visit(dir)
  return out
}

/** What is at `p` (not following a final link), or `undefined` when nothing is (`ENOENT`, `ENOTDIR`). */
const lstat = (p: string): NFS.Stats | undefined => {
  try {
    return NFS.lstatSync(p)
  } catch {
    return undefined
  }
}

/** Path components, as the kernel splits them (empty ones and `.` dropped). */
const split = (p: string) => p.split("/").filter((c) => c !== "" && c !== ".")

/** The components of absolute `p` below `prefix`, compared by component; `undefined` when not below. */
const below = (prefix: string, p: string): Array<string> | undefined => {
  const head = split(prefix)
  const parts = split(p)
  return head.every((c, i) => parts[i] === c) && parts.length >= head.length ? parts.slice(head.length) : undefined
}

/**
 * Where a path leads, as the oracle walks it. `missing`: the walk went through a directory that does not exist,
 * or through a file (`blocked`), and went on lexically.
 */
type Where =
  | { readonly kind: "invalid" }
  | { readonly kind: "escape"; readonly missing: boolean; readonly blocked: boolean }
  | { readonly kind: "loop" }
  | {
    readonly kind: "at"
    readonly path: string
    readonly missing: boolean
    readonly blocked: boolean
    /** The walk ended at a directory it reached by `..` (or at the root): made by a write if missing. */
    readonly directory?: boolean
  }

/**
 * Walks `input` from the root as the kernel would, refusing at the first step outside: `..` from the directory
 * reached, a link's target walked in its place (an absolute one must lie under the root or its alias), a missing
 * directory continued lexically (a write creates it).
 */
const oracle = (box: Sandbox, input: string): Where => {
  if (input.includes("\u0000")) return { kind: "invalid" }
  let parts: Array<string>
  if (input.startsWith("/")) {
    const inside = below(box.root, input) ?? below(box.alias, input)
    if (inside === undefined) return { kind: "escape", missing: false, blocked: false }
    parts = inside
  } else parts = split(input)
  let current = box.root
  /** How many of `current`'s last components do not exist. */
  let virtual = 0
  let missing = false
  let blocked = false
  let hops = 0
  let popped = true
  /** The missing directories a write makes on its way (`a/../a` ends at the directory it made for `a/..`). */
  const made = new Set<string>()
  while (parts.length > 0) {
    const c = parts.shift()!
    popped = c === ".."
    if (c === "..") {
      if (current === box.root) return { kind: "escape", missing, blocked }
      current = nodePath.dirname(current)
      if (virtual > 0) virtual--
      continue
    }
    const next = nodePath.join(current, c)
    if (virtual > 0) {
      if (!blocked && parts.length > 0) made.add(next)
      current = next
      virtual++
      continue
    }
    const st = lstat(next)
    if (st === undefined) {
      if (parts.length === 0) {
        return made.has(next)
          ? { kind: "at", path: next, missing, blocked, directory: true }
          : { kind: "at", path: next, missing, blocked }
      }
      missing = true
      virtual = 1
      made.add(next)
      current = next
      continue
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) return { kind: "loop" }
      const target = NFS.readlinkSync(next)
      if (target.startsWith("/")) {
        const inside = below(box.root, target) ?? below(box.alias, target)
        if (inside === undefined) return { kind: "escape", missing, blocked }
        current = box.root
        parts = [...inside, ...parts]
      } else parts = [...split(target), ...parts]
      continue
    }
    if (parts.length === 0) return { kind: "at", path: next, missing, blocked }
    if (!st.isDirectory()) {
      // A file with more to come: the kernel says ENOTDIR; the walk may pop a `..` after it without entering it.
      missing = true
      blocked = true
      virtual = 1
    }
    current = next
  }
  return { kind: "at", path: current, missing, blocked, directory: popped }
}

/** What a call may give: success (with `ok`, the content a read must give) and the reasons it may fail with. */
interface Expected {
  readonly ok?: string | undefined
  readonly reasons: ReadonlyArray<string>
}

/**
 * What a read of `where` may give. Below a missing directory the walk applies `..` lexically (nothing exists there
 * to resolve), so such a path may also end on what the lexical path names.
 */
const readExpectation = (where: Where): Expected => {
  switch (where.kind) {
    case "invalid":
      return { reasons: ["InvalidArgument"] }
    case "escape":
      return { reasons: where.missing ? ["PathEscape", "NotFound"] : ["PathEscape"] }
    case "loop":
      return { reasons: ["SymlinkLoop"] }
    case "at": {
      const st = lstat(where.path)
      const lexical: Expected = st === undefined
        ? { reasons: ["NotFound", "NotADirectory", ...(where.directory === true ? ["NotAFile"] : [])] }
        : st.isDirectory()
        ? { reasons: ["NotAFile"] }
        : st.nlink > 1
        ? { reasons: ["HardLink"] }
        : { ok: NFS.readFileSync(where.path, "utf8"), reasons: [] }
      return where.missing ? { ok: lexical.ok, reasons: [...lexical.reasons, "NotFound", "NotADirectory"] } : lexical
    }
  }
}

/** The reason a write to `where` must fail with, or (`ok`) the absolute path it must write. */
const writeExpectation = (where: Where): Expected => {
  switch (where.kind) {
    case "invalid":
      return { reasons: ["InvalidArgument"] }
    case "escape":
      return { reasons: where.blocked ? ["PathEscape", "NotADirectory"] : ["PathEscape"] }
    case "loop":
      return { reasons: ["SymlinkLoop"] }
    case "at": {
      // A missing directory is created, so the walk is exact; through a file it may fail or go on lexically.
      const st = lstat(where.path)
      const exact: Expected = st?.isDirectory() === true || where.directory === true
        ? { reasons: ["NotAFile"] }
        : { ok: where.path, reasons: [] }
      return where.blocked ? { ok: exact.ok, reasons: [...exact.reasons, "NotADirectory"] } : exact
    }
  }
}

/** The model of `edit_file`: the new content, or the reason it fails. */
const edited = (
  text: string,
  oldString: string,
  newString: string,
  replaceAll: boolean
): Expected => {
  if (oldString === "" || oldString === newString) return { reasons: ["InvalidArgument"] }
  const pieces = text.split(oldString)
  const count = pieces.length - 1
  if (count === 0) return { reasons: ["NoMatch"] }
  if (count > 1 && !replaceAll) return { reasons: ["Ambiguous"] }
  return {
    ok: replaceAll ? pieces.join(newString) : pieces[0] + newString + pieces.slice(1).join(oldString),
    reasons: []
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------------

const names = [
  "a",
  "b",
  "file.txt",
  "notes.txt",
  "deep.txt",
  "ü.txt",
  "u\u0308.txt",
  "hard.txt",
  "secret.txt",
  "new.txt",
  "x",
  "sub",
  "outside",
  "root",
  "alias"
]
const links = [
  "in-link",
  "file-link",
  "out-link",
  "abs-out",
  "abs-in",
  "alias-in",
  "up",
  "upup",
  "dangling-in",
  "dangling-dir",
  "dangling-out",
  "loop"
]
const component: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...names) },
  { weight: 3, arbitrary: fc.constantFrom(...links) },
  { weight: 2, arbitrary: fc.constantFrom("..", ".") }
)
type Prefix = "relative" | "root" | "alias" | "base" | "outside" | "slash"
const prefix: fc.Arbitrary<Prefix> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("relative" as const) },
  { weight: 3, arbitrary: fc.constantFrom<Prefix>("root", "alias") },
  { weight: 1, arbitrary: fc.constantFrom<Prefix>("base", "outside", "slash") }
)
/**
 * A path: a prefix and components. The edit target (and the hard link) are drawn often, by routes that reach them;
 * a few paths carry a NUL.
 */
const pathSpec = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(prefix, fc.array(component, { minLength: 1, maxLength: 4 })) },
  {
    weight: 4,
    arbitrary: fc.tuple(
      prefix,
      fc.constantFrom<ReadonlyArray<string>>(
        ["a", "notes.txt"],
        ["in-link", "notes.txt"],
        ["file-link"],
        ["a", "up", "a", "notes.txt"],
        ["abs-in", "notes.txt"],
        ["alias-in", "notes.txt"],
        ["hard.txt"],
        ["a", "..", "hard.txt"]
      )
    )
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      prefix,
      fc.tuple(fc.array(component, { maxLength: 2 }), fc.constantFrom("nul\u0000", "\u0000", "a\u0000b")).map((
        [parts, nul]
      ) => [...parts, nul])
    )
  }
)
const pathOf = (box: Sandbox, [p, parts]: readonly [Prefix, ReadonlyArray<string>]): string => {
  const head = { relative: "", root: box.root, alias: box.alias, base: box.base, outside: box.outside, slash: "" }[p]
  const joined = parts.join("/")
  return p === "relative" ? joined : `${head}/${joined}`
}
/** Text from pieces that collide often, with a replacement pattern and line endings among them. */
const text = fc.array(fc.constantFrom("a", "b", "ab", "$&", "$1", "\n", "\r\n", "é", "🚀"), { maxLength: 6 }).map((
  pieces
) => pieces.join(""))

type Op =
  | { readonly _tag: "read"; readonly path: readonly [Prefix, ReadonlyArray<string>] }
  | { readonly _tag: "write"; readonly path: readonly [Prefix, ReadonlyArray<string>]; readonly content: string }
  | {
    readonly _tag: "edit"
    readonly path: readonly [Prefix, ReadonlyArray<string>]
    readonly oldString: string
    readonly newString: string
    readonly replaceAll: boolean
  }
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ _tag: fc.constant("read" as const), path: pathSpec }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("write" as const), path: pathSpec, content: text }) },
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("edit" as const),
      path: pathSpec,
      // mostly pieces the files are made of, so that edits match (once, or several times)
      oldString: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom("alpha", "a", "$&", "\r\n", "\n", "b", "ab", "é") },
        { weight: 1, arbitrary: text }
      ),
      newString: text,
      replaceAll: fc.boolean()
    })
  }
)

/** The outcome of a tool call: its text, or its failure's reason. */
const outcome = (effect: Effect.Effect<unknown, unknown>) =>
  Effect.map(Effect.either(effect), (result) =>
    Either.isRight(result)
      ? { ok: String(result.right) }
      : { reason: result.left instanceof WorkspaceError ? result.left.reason : `not a WorkspaceError: ${result.left}` })

/** Whether a call's outcome is one `expected` allows. */
const allows = (expected: Expected, got: { readonly ok: string } | { readonly reason: string }) =>
  "reason" in got ? expected.reasons.includes(got.reason) : expected.ok !== undefined

// Real files and links: the test services are left out.
layer(NodeContext.layer, { excludeTestServices: true })("WorkspaceTools property", (it) => {
  it.effect.prop(
    "random reads, writes and edits on random paths stay inside the root and agree with the oracle and the edit model",
    [fc.array(op, { minLength: 1, maxLength: 12 })],
    ([ops]) =>
      Effect.gen(function*() {
        const box = yield* Effect.acquireRelease(
          Effect.sync(makeSandbox),
          (made) => Effect.sync(() => NFS.rmSync(made.base, { recursive: true, force: true }))
        )
        // The tools are configured with the alias: absolute paths through it and through the real root are inside.
        const tools = yield* WorkspaceTools.make({ root: box.alias })
        const workspace = yield* Workspace.make(box.alias)
        const [readFile, writeFile, editFile] = yield* Effect.all([
          toolNamed(tools, "read_file"),
          toolNamed(tools, "write_file"),
          toolNamed(tools, "edit_file")
        ])
        const outsideBefore = snapshot(box.outside, true)
        const model = snapshot(box.root, false)
        for (const [index, o] of ops.entries()) {
          const path = pathOf(box, o.path)
          const step = `op ${index} ${o._tag} ${JSON.stringify(path)}`
          const where = oracle(box, path)
          switch (o._tag) {
            case "read": {
              const expected = readExpectation(where)
              const bytes = yield* Effect.either(workspace.read(path, { maxBytes: 1 << 20, action: "read" }))
              const tool = yield* outcome(call(readFile, { path }))
              const context = `${step}: ${JSON.stringify(where)} read_file ${JSON.stringify(tool)}`
              if (Either.isRight(bytes)) {
                assert.strictEqual(new TextDecoder().decode(bytes.right.bytes), expected.ok, context)
              } else {
                assert.include(expected.reasons, bytes.left.reason, context)
              }
              assert.isTrue(allows(expected, tool), context)
              assert.strictEqual("ok" in tool, Either.isRight(bytes), context)
              assert.notInclude("ok" in tool ? tool.ok : "", "SECRET", step)
              break
            }
            case "write": {
              const expected = writeExpectation(where)
              const got = yield* outcome(call(writeFile, { path, content: o.content }))
              assert.isTrue(allows(expected, got), `${step}: ${JSON.stringify(where)} ${JSON.stringify(got)}`)
              if ("ok" in got) model[expected.ok!] = o.content
              break
            }
            case "edit": {
              const read = readExpectation(where)
              const expected: Expected = o.oldString === "" || o.oldString === o.newString
                ? { reasons: ["InvalidArgument"] }
                : read.ok === undefined
                ? read
                : ((model) => ({ ok: model.ok, reasons: [...read.reasons, ...model.reasons] }))(
                  edited(read.ok, o.oldString, o.newString, o.replaceAll)
                )
              const got = yield* outcome(
                call(editFile, { path, oldString: o.oldString, newString: o.newString, replaceAll: o.replaceAll })
              )
              assert.isTrue(allows(expected, got), `${step}: ${JSON.stringify(where)} ${JSON.stringify(got)}`)
              if ("ok" in got) model[(where as { readonly path: string }).path] = expected.ok!
              assert.notInclude("ok" in got ? got.ok : "", "SECRET", step)
              break
            }
          }
          assert.deepStrictEqual(snapshot(box.outside, true), outsideBefore, `${step}: the outside is untouched`)
          assert.deepStrictEqual(snapshot(box.root, false), model, `${step}: the root holds the model's files`)
        }
      }).pipe(Effect.scoped),
    { timeout: 120_000, fastCheck: { numRuns: 150 } }
  )
})
