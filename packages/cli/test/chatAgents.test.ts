/**
 * `/agents` and `/agent N …` in `harness chat`, in a real terminal: the workspace configures a subagent
 * (`.harness/agents.json`), a scripted provider makes the parent call it, and the person lists the child, steers its
 * running turn and cancels a second child — then the stored logs show what happened.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Ids, SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Subagents } from "@harness/subagents"
import { Effect, Queue } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Sessions from "../src/internal/sessions.js"
import { scopedDir, storedEvents } from "./fixtures.js"
import { scriptedProvider } from "./scriptedProvider.js"
import { bin } from "./support.js"
import * as Terminal from "./terminal.js"

const childSystem = "You research one question and answer it briefly."

const textOf = (event: SessionEvent.SessionEvent): string =>
  "content" in event.data ? JSON.stringify(event.data.content) : ""

/** A workspace configuring the `researcher` subagent (removed with the scope), and its SQLite store. */
const workspace = Effect.gen(function*() {
  const dir = yield* scopedDir
  mkdirSync(join(dir, ".harness"))
  writeFileSync(
    join(dir, ".harness", "agents.json"),
    JSON.stringify({ agents: { researcher: { description: "researches one question", system: childSystem } } })
  )
  return { dir, db: join(dir, "chat.db") }
})

const chatIn = (dir: string, db: string, args: string) =>
  Terminal.open({
    command:
      `env NO_COLOR=1 'LLM_IDLE_TIMEOUT=10 minutes' ${process.execPath} ${bin} chat --store sqlite:${db} ${args}`,
    cwd: dir
  })

/** The workspace, its scripted provider, and the chat on them, idle (all closed with the scope). */
const started = Effect.gen(function*() {
  const { db, dir } = yield* workspace
  const provider = yield* scriptedProvider
  const term = yield* chatIn(dir, db, provider.args)
  yield* term.waitFor("idle · 0 tokens · /help")
  return { db, dir, provider, term }
})

describe("harness chat /agents", { timeout: 300_000 }, () => {
  it.live("R230, R231: /agents lists the running child; /agent 1 steers its turn; /agent 2 cancel cancels the other; the logs are clean", () =>
    Effect.gen(function*() {
      const { db, provider, term } = yield* started
      yield* term.send("/agents")
      yield* term.waitFor("no subagents yet")

      yield* term.send("why is the build slow?")
      const first = yield* Queue.take(provider.requests)
      assert.include(first.body, "\"researcher\"", "the parent is offered the subagent's tool")
      yield* first.call("researcher", { task: "find why the build is slow" })

      // The child's first step streams and is held open: its turn is running.
      const child = yield* Queue.take(provider.requests)
      assert.strictEqual(child.system, childSystem)
      yield* child.text("Looking at the build scripts.")
      yield* term.send("/agents")
      const listed = yield* term.waitFor({ test: (screen) => / 1 {2}\S+~\d+ {2}researcher {2}running/.test(screen) })
      assert.include(listed, "▸ find why the build is slow", listed)
      const childId = / 1 {2}(\S+~\d+) {2}researcher/.exec(listed)![1]! as Ids.SessionId

      yield* term.send("/agent 1 check the test step too")
      yield* term.waitFor("↪ steering subagent 1 (researcher): check the test step too")
      yield* child.end
      // The steering joined the child's turn: its next step's request carries it.
      const steered = yield* Queue.take(provider.requests)
      assert.strictEqual(steered.system, childSystem)
      assert.include(steered.body, "check the test step too")
      yield* steered.text("The test step recompiles everything.")
      yield* steered.end
      const back = yield* Queue.take(provider.requests)
      assert.notStrictEqual(back.system, childSystem)
      assert.include(back.body, "The test step recompiles everything.", "the parent's call answers the child's answer")
      yield* back.text("The researcher found it: the test step.")
      yield* back.end
      yield* term.waitFor("The researcher found it: the test step.")
      yield* term.send("/agents")
      yield* term.waitFor(`1  ${childId}  researcher  completed  The test step recompiles everything.`)
      yield* term.send("/agent 1 one more thing")
      yield* term.waitFor("subagent 1 (researcher) has finished (completed): nothing sent")

      // A second child, cancelled by the person while its model streams: the parent's call ends `cancelled`.
      yield* term.send("ask it again")
      const again = yield* Queue.take(provider.requests)
      yield* again.call("researcher", { task: "look again" })
      const second = yield* Queue.take(provider.requests)
      assert.strictEqual(second.system, childSystem)
      yield* second.text("Looking again")
      yield* term.send("/agent 2 cancel")
      yield* term.waitFor("✕ cancelled subagent 2 (researcher)'s turn")
      yield* second.closed
      const after = yield* Queue.take(provider.requests)
      assert.notStrictEqual(after.system, childSystem)
      assert.include(after.body, "\\\"status\\\":\\\"cancelled\\\"", after.body)
      yield* after.text("It was cancelled.")
      yield* after.end
      yield* term.send("/agents")
      const final = yield* term.waitFor({ test: (screen) => / 2 {2}\S+~\d+ {2}researcher {2}cancelled/.test(screen) })
      const secondId = / 2 {2}(\S+~\d+) {2}researcher {2}cancelled/.exec(final)![1]! as Ids.SessionId
      yield* term.send("/exit")
      yield* term.waitFor("bye — session")

      const parentId = childId.slice(0, childId.lastIndexOf("~")) as Ids.SessionId
      const events = yield* storedEvents(db, childId)
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      const steering = events.find((e) => e.type === "steering/message")
      assert.isDefined(steering, "the child's log has the steering")
      assert.include(textOf(steering!), "check the test step too")
      assert.deepStrictEqual(
        events.flatMap((e) => e.type === "turn/start" || e.type === "turn/end" ? [`${e.type} ${e.data.turn}`] : []),
        ["turn/start 1", "turn/end 1"],
        "the steering joined the child's one turn"
      )
      const cancelled = yield* storedEvents(db, secondId)
      assert.deepStrictEqual(LogCheck.checkLog(cancelled), [])
      const end = cancelled.find((e) => e.type === "turn/end")
      assert.strictEqual(end?.type === "turn/end" ? end.data.reason.kind : undefined, "aborted")
      const parent = yield* storedEvents(db, parentId)
      assert.deepStrictEqual(LogCheck.checkLog(parent), [])
      const tree = yield* Subagents.tree(parentId).pipe(Effect.provide(SqliteStore.layer({ filename: db })))
      assert.deepStrictEqual(tree.children.map((c) => [c.id, c.last]), [[childId, "completed"], [secondId, "aborted"]])
    }).pipe(Effect.scoped))

  it.live("R232: two children, one steered and one cancelled, then SIGKILL: the stored tree renders both; chat --continue reports the cut child to the parent; all three logs are clean", () =>
    Effect.gen(function*() {
      const { db, dir, provider, term } = yield* started
      yield* term.send("split the work")
      const first = yield* Queue.take(provider.requests)
      yield* first.call("researcher", { task: "task one" }, { task: "task two" })
      const children = [yield* Queue.take(provider.requests), yield* Queue.take(provider.requests)]
      const one = children.find((r) => r.body.includes("task one"))!
      const two = children.find((r) => r.body.includes("task two"))!
      assert.deepStrictEqual([one.system, two.system], [childSystem, childSystem])
      yield* one.text("Working on one.")
      yield* two.text("Working on two.")
      yield* term.send("/agents")
      const row = (task: string) => new RegExp(` (\\d)  (\\S+~\\d+)  researcher  running  ▸ ${task}`)
      const listed = yield* term.waitFor({
        test: (screen) => row("task one").test(screen) && row("task two").test(screen)
      })
      const [, n1, id1] = row("task one").exec(listed)!
      const [, n2, id2] = row("task two").exec(listed)!

      yield* term.send(`/agent ${n1} focus on the tests`)
      yield* term.waitFor(`↪ steering subagent ${n1} (researcher): focus on the tests`)
      yield* term.send(`/agent ${n2} cancel`)
      yield* term.waitFor(`✕ cancelled subagent ${n2} (researcher)'s turn`)
      yield* two.closed
      yield* term.send("/agents")
      yield* term.waitFor(new RegExp(` ${n2}  ${id2!.replace(/[-]/g, "\\-")}  researcher  cancelled`))
      // SIGKILL while the first child's step streams (its steering waits in its inbox).
      process.kill(term.pid, "SIGKILL")

      const parentId = id1!.slice(0, id1!.lastIndexOf("~"))
      const again = yield* chatIn(dir, db, `${provider.args} --continue`)
      // --continue continues the parent (the latest session a person started), not the child active after it.
      yield* again.waitFor({ test: (screen) => new RegExp(`continuing session ${parentId}(?!~)`).test(screen) })
      yield* again.waitFor("/help")
      yield* again.send("/exit")
      yield* again.waitFor("bye — session")

      // What `harness sessions show` renders (its own test runs the command): the children in the order of the
      // parent's calls, `task one` first.
      const tree = yield* Subagents.tree(parentId as Ids.SessionId).pipe(
        Effect.provide(SqliteStore.layer({ filename: db }))
      )
      assert.deepStrictEqual(Sessions.renderTree(tree), [
        `  ├─ ${id1} (researcher): interrupted`,
        `  └─ ${id2} (researcher): aborted`
      ])
      const parent = yield* storedEvents(db, parentId as Ids.SessionId)
      const cut = yield* storedEvents(db, id1 as Ids.SessionId)
      const cancelled = yield* storedEvents(db, id2 as Ids.SessionId)
      for (const events of [parent, cut, cancelled]) assert.deepStrictEqual(LogCheck.checkLog(events), [])
      const report = parent.find((e) =>
        e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === `subagent:${id1}`
      )
      assert.isDefined(report, "the parent was told what became of the cut child")
      assert.include(textOf(report!), "interrupted")
      const end = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
        events.findLast((e) => e.type === "turn/end")?.data
      assert.strictEqual((end(cut) as { reason: { kind: string } }).reason.kind, "interrupted")
      assert.strictEqual((end(cancelled) as { reason: { kind: string } }).reason.kind, "aborted")
    }).pipe(Effect.scoped))
})
