import * as NodeContext from "@effect/platform-node/NodeContext"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Workspace from "../src/Workspace.js"
import type { WorkspaceError } from "../src/WorkspaceError.js"

/** A workspace on a temporary directory, a second directory outside it, and helpers. */
const setup = Effect.gen(function*() {
  const fs = yield* FileSystem
  const path = yield* Path
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "harness-ws-" })
  const outside = yield* fs.makeTempDirectoryScoped({ prefix: "harness-outside-" })
  yield* fs.makeDirectory(path.join(root, "src"))
  yield* fs.writeFileString(path.join(root, "src", "a.txt"), "a\n")
  yield* fs.writeFileString(path.join(outside, "secret.txt"), "secret\n")
  const workspace = yield* Workspace.make(root)
  const refused = (input: string) => Effect.flip(workspace.resolve(input))
  return { fs, path, root, outside, workspace, refused }
})

const assertReason = (error: WorkspaceError, reason: WorkspaceError["reason"], mentions: string) => {
  assert.strictEqual(error.reason, reason)
  assert.include(error.message, mentions)
}

// Real file system, real clock: the test services are left out.
layer(NodeContext.layer, { excludeTestServices: true })("Workspace", (it) => {
  it.scoped("resolves relative paths inside the root to real absolute paths", () =>
    Effect.gen(function*() {
      const { fs, path, root, workspace } = yield* setup
      const real = yield* fs.realPath(root)
      assert.strictEqual(workspace.root, real)
      const file = yield* workspace.resolve("src/a.txt")
      assert.strictEqual(file.absolute, path.join(real, "src", "a.txt"))
      assert.strictEqual(file.relative, "src/a.txt")
      assert.strictEqual((yield* workspace.resolve(".")).relative, ".")
      assert.strictEqual((yield* workspace.resolve("")).relative, ".")
      assert.strictEqual((yield* workspace.resolve("src/../src/./a.txt")).relative, "src/a.txt")
      // A target that does not exist yet resolves too (write_file creates it).
      assert.strictEqual((yield* workspace.resolve("new/dir/file.txt")).relative, "new/dir/file.txt")
      // Absolute paths inside the root are accepted.
      assert.strictEqual((yield* workspace.resolve(path.join(real, "src/a.txt"))).relative, "src/a.txt")
    }))

  it.scoped("refuses `..` that leaves the root", () =>
    Effect.gen(function*() {
      const { refused } = yield* setup
      assertReason(yield* refused("../x"), "PathEscape", "`..`")
      assertReason(yield* refused("src/../../x"), "PathEscape", "`..`")
      assertReason(yield* refused(".."), "PathEscape", "`..`")
    }))

  it.scoped("refuses absolute paths outside the root", () =>
    Effect.gen(function*() {
      const { outside, path, refused } = yield* setup
      assertReason(yield* refused("/etc/passwd"), "PathEscape", "absolute path outside")
      assertReason(yield* refused(path.join(outside, "secret.txt")), "PathEscape", "absolute path outside")
    }))

  it.scoped("refuses symbolic links that point outside, anywhere along the path", () =>
    Effect.gen(function*() {
      const { fs, outside, path, refused, root } = yield* setup
      yield* fs.symlink(outside, path.join(root, "out"))
      yield* fs.symlink(path.join(outside, "secret.txt"), path.join(root, "src", "secret-link.txt"))
      yield* fs.symlink("../../", path.join(root, "src", "up"))
      // A dangling link: writing through it would create a file outside.
      yield* fs.symlink(path.join(outside, "new.txt"), path.join(root, "dangling"))
      assertReason(yield* refused("out"), "PathEscape", "symbolic link")
      assertReason(yield* refused("out/secret.txt"), "PathEscape", "symbolic link")
      assertReason(yield* refused("out/does/not/exist.txt"), "PathEscape", "symbolic link")
      assertReason(yield* refused("src/secret-link.txt"), "PathEscape", "symbolic link")
      assertReason(yield* refused("src/up/etc"), "PathEscape", "symbolic link")
      assertReason(yield* refused("dangling"), "PathEscape", "symbolic link")
    }))

  it.scoped("follows symbolic links that stay inside", () =>
    Effect.gen(function*() {
      const { fs, path, root, workspace } = yield* setup
      yield* fs.symlink("src", path.join(root, "source"))
      yield* fs.symlink("src/later.txt", path.join(root, "later-link"))
      assert.strictEqual((yield* workspace.resolve("source/a.txt")).relative, "src/a.txt")
      // A dangling link inside resolves to its (future) target.
      assert.strictEqual((yield* workspace.resolve("later-link")).relative, "src/later.txt")
    }))

  it.scoped("refuses symbolic link loops", () =>
    Effect.gen(function*() {
      const { fs, path, refused, root } = yield* setup
      yield* fs.symlink("b", path.join(root, "a"))
      yield* fs.symlink("a", path.join(root, "b"))
      yield* fs.symlink("self", path.join(root, "self"))
      assertReason(yield* refused("a"), "SymlinkLoop", "loop")
      assertReason(yield* refused("self/file.txt"), "SymlinkLoop", "loop")
    }))

  it.scoped("accepts a root given through a symbolic link, and absolute paths through it", () =>
    Effect.gen(function*() {
      const { fs, outside, path, root } = yield* setup
      const alias = path.join(outside, "alias")
      yield* fs.symlink(root, alias)
      const workspace = yield* Workspace.make(alias)
      assert.strictEqual(workspace.root, yield* fs.realPath(root))
      assert.strictEqual((yield* workspace.resolve(path.join(alias, "src/a.txt"))).relative, "src/a.txt")
    }))

  it.scoped("refuses a root that is missing or not a directory, and NUL bytes in paths", () =>
    Effect.gen(function*() {
      const { path, refused, root } = yield* setup
      assertReason(yield* Effect.flip(Workspace.make(path.join(root, "missing"))), "NotFound", "does not exist")
      assertReason(yield* Effect.flip(Workspace.make(path.join(root, "src/a.txt"))), "NotADirectory", "not a directory")
      assertReason(yield* refused("a\u0000b"), "InvalidArgument", "NUL")
    }))
})
