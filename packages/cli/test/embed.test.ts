/**
 * The README's embedding example, run as written: an agent as part of an Effect program, with the workspace tools
 * and an approval hook that lets one write through.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { program } from "../examples/embed.js"
import { scopedDir } from "./fixtures.js"

describe("the embedding example", () => {
  it.live("writes the note its approval hook allows and answers from the tool result", () =>
    Effect.gen(function*() {
      const dir = yield* scopedDir
      const answer = yield* program(dir)
      assert.strictEqual(readFileSync(join(dir, "notes", "today.md"), "utf8"), "ship the CLI\n")
      assert.include(answer, "write_file returned 1 line")
    }).pipe(Effect.scoped))

  it("is the code the root README shows", () => {
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8")
    const example = readFileSync(new URL("../examples/embed.ts", import.meta.url), "utf8")
    const body = example.slice(example.indexOf("import { Agent")).replace(
      "from \"../src/index.js\"",
      "from \"@harness/cli\""
    )
    assert.include(readme, `\`\`\`ts\n${body}\`\`\``)
  })
})
