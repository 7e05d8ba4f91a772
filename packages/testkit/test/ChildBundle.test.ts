/**
 * `ChildBundle.bundle` on a real child: the bundle runs under plain Node (a workspace package inlined from its
 * sources), and its folder is gone once the scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { ChildBundle } from "@harness/testkit"
import { Effect, Exit, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const packageDir = fileURLToPath(new URL("..", import.meta.url))

describe("ChildBundle", () => {
  it.live("bundles a program that Node runs alone, and deletes it with the scope", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const outfile = yield* ChildBundle.bundle(
        path.join(packageDir, "test", "fixtures", "child.ts"),
        path.join(packageDir, "..", "..", "node_modules", ".cache")
      ).pipe(Scope.extend(scope))
      const printed = execFileSync(process.execPath, [outfile], { encoding: "utf8" })
      assert.deepStrictEqual(JSON.parse(printed), {
        content: [{ type: "text", text: "from the bundle" }],
        source: { kind: "user" }
      })
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(fs.existsSync(path.dirname(outfile)))
    }), { timeout: 60_000 })
})
