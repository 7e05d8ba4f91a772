/**
 * `harness sessions show` over a SQLite file holding a parent session and the two children its tool calls spawned
 * (written by a real parent agent with the subagent tools): the parent shows its tree, a child names its parent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Subagents, SubagentTool } from "@harness/subagents"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { join } from "node:path"
import { scopedDir } from "./fixtures.js"
import { harness } from "./support.js"

/** A parent that spawns `researcher` (call `a`) and `reviewer` (call `b`), each answering at once. */
const writeTree = (filename: string) =>
  Effect.gen(function*() {
    const [modelA] = yield* S.make([S.textResponse("found it")])
    const [modelB] = yield* S.make([S.textResponse("looks good")])
    const subagents = yield* Subagents.make()
    const log = yield* SessionLog.make()
    const parent = yield* Agent.make({
      session: log,
      tools: [
        SubagentTool.make({ name: "researcher", description: "researches", languageModel: modelA }),
        SubagentTool.make({ name: "reviewer", description: "reviews", languageModel: modelB })
      ]
    }).pipe(Effect.provideService(Subagents.Subagents, subagents))
    yield* parent.followup(Message.make("split the work"))
    yield* parent.whenIdle
    const calls = (yield* parent.log).flatMap((event) => event.type === "tool/call" ? [event.seq] : [])
    yield* log.close
    return { id: log.id, children: calls.map((seq) => Subagents.childIdOf(log.id, seq)) }
  }).pipe(
    Effect.scoped,
    Effect.provide(S.layer([
      S.toolCallResponse(
        S.toolCall("researcher", { task: "research it" }, { id: "a" }),
        S.toolCall("reviewer", { task: "review it" }, { id: "b" })
      ),
      S.textResponse("both back")
    ])),
    Effect.provide(SqliteStore.layer({ filename }))
  )

describe("harness sessions show with subagents", { timeout: 300_000 }, () => {
  it.live("R183: the parent's show renders its tree of children; a child's show names its parent", () =>
    Effect.gen(function*() {
      const dir = yield* scopedDir
      const db = join(dir, "s.db")
      const { children, id } = yield* writeTree(db)
      assert.strictEqual(children.length, 2)
      const a = children[0]!
      const b = children[1]!
      const cli = (...args: ReadonlyArray<string>) =>
        Effect.promise(() => harness([...args, "--store", `sqlite:${db}`], { cwd: dir }))

      const show = yield* cli("sessions", "show", id)
      assert.strictEqual(show.code, 0, show.stderr)
      const lines = show.stdout.split("\n")
      const at = lines.indexOf(`subagents of ${id}:`)
      assert.isAbove(at, 0, show.stdout)
      assert.deepStrictEqual(lines.slice(at + 1, at + 3), [
        `  ├─ ${a} (researcher): completed`,
        `  └─ ${b} (reviewer): completed`
      ])
      assert.include(show.stdout, "the log checks clean")

      const child = yield* cli("sessions", "show", b)
      assert.strictEqual(child.code, 0, child.stderr)
      assert.include(child.stdout, `subagent reviewer of session ${id} (call b)`)
      assert.include(child.stdout, `parent ${id} (reviewer)`)
      assert.include(child.stdout, "the log checks clean")
    }).pipe(Effect.scoped))
})
