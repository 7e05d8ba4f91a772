/**
 * `/agents` and `/agent N …` in `harness chat`, in a real terminal: the workspace configures a subagent
 * (`.harness/agents.json`), a scripted provider makes the parent call it, and the person lists the child, steers its
 * running turn and cancels a second child — then the stored logs show what happened.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Ids, SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Subagents } from "@harness/subagents"
import { Effect, Queue } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import * as Sessions from "../src/internal/sessions.js"
import { bin, chatChunk, tempDir } from "./support.js"
import * as Terminal from "./terminal.js"

/** One request to the scripted provider: what was asked, and how the test answers it (piece by piece). */
interface Request {
  readonly body: string
  /** The system prompt of the request: which agent is asking. */
  readonly system: string
  readonly text: (content: string) => Effect.Effect<void>
  /** Answers with calls of `name`, one per arguments object, in one step. */
  readonly call: (name: string, ...args: ReadonlyArray<object>) => Effect.Effect<void>
  readonly end: Effect.Effect<void>
  /** Resolves when the client closed the request (a cancel aborts it). */
  readonly closed: Effect.Effect<void>
}

/** A chat-completions server whose requests wait in `requests`, in arrival order, until the test answers them. */
const scriptedProvider = Effect.gen(function*() {
  const requests = yield* Queue.unbounded<Request>()
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (part) => (body += part))
    request.on("end", () => {
      const closed = new Promise<void>((resolve) => response.on("close", () => resolve()))
      const parsed = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> }
      const system = parsed.messages.find((m) => m.role === "system")?.content
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(chatChunk("scripted", { role: "assistant", content: "" }))
      requests.unsafeOffer({
        body,
        system: typeof system === "string" ? system : JSON.stringify(system),
        text: (content) => Effect.sync(() => void response.write(chatChunk("scripted", { content }))),
        call: (name, ...args) =>
          Effect.sync(() => {
            args.forEach((value, index) => {
              const call = { index, id: `call-${index}`, type: "function", function: { name, arguments: "" } }
              response.write(chatChunk("scripted", { tool_calls: [call] }))
              response.write(
                chatChunk("scripted", { tool_calls: [{ index, function: { arguments: JSON.stringify(value) } }] })
              )
            })
            response.write(chatChunk("scripted", {}, "tool_calls"))
            response.end("data: [DONE]\n\n")
          }),
        end: Effect.sync(() => {
          response.write(chatChunk("scripted", {}, "stop"))
          response.end("data: [DONE]\n\n")
        }),
        closed: Effect.promise(() => closed)
      })
    })
  })
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
    () =>
      Effect.sync(() => {
        server.closeAllConnections()
        server.close()
      })
  )
  const { port } = server.address() as AddressInfo // listening on TCP: an AddressInfo
  return { args: `--base-url http://127.0.0.1:${port}/v1 --model scripted`, requests }
})

const childSystem = "You research one question and answer it briefly."

const readLog = (filename: string, id: Ids.SessionId) =>
  Effect.gen(function*() {
    const log = yield* SessionLog.open(id, { readOnly: true })
    return yield* log.events
  }).pipe(Effect.provide(SqliteStore.layer({ filename })))

const textOf = (event: SessionEvent.SessionEvent): string =>
  "content" in event.data ? JSON.stringify(event.data.content) : ""

/** A workspace configuring the `researcher` subagent, and `harness chat` over its SQLite store in a terminal. */
const workspace = () =>
  Effect.sync(() => {
    const [dir, cleanup] = tempDir()
    mkdirSync(join(dir, ".harness"))
    writeFileSync(
      join(dir, ".harness", "agents.json"),
      JSON.stringify({ agents: { researcher: { description: "researches one question", system: childSystem } } })
    )
    return { dir, cleanup, db: join(dir, "chat.db") }
  })

const chatIn = (dir: string, db: string, args: string) =>
  Terminal.open({
    command:
      `env NO_COLOR=1 'LLM_IDLE_TIMEOUT=10 minutes' ${process.execPath} ${bin} chat --store sqlite:${db} ${args}`,
    cwd: dir
  })

/** The workspace, its scripted provider, and the chat on them, idle (all closed with the scope). */
const started = Effect.gen(function*() {
  const { cleanup, db, dir } = yield* workspace()
  yield* Effect.addFinalizer(() => Effect.sync(cleanup))
  const provider = yield* scriptedProvider
  const term = yield* chatIn(dir, db, provider.args)
  yield* term.waitFor("idle · 0 tokens · /help")
  return { db, dir, provider, term }
})

describe("harness chat /agents", { timeout: 300_000 }, () => {
  it.live("R230, R231: /agents lists the running child; /agent 1 steers its turn; /agent 2 cancel cancels the other; the logs are clean", () =>
    Effect.gen(function*() {
      const { db, provider, term } = yield* started
      yield* term.type("/agents")
      yield* term.press("Enter")
      yield* term.waitFor("no subagents yet")

      yield* term.type("why is the build slow?")
      yield* term.press("Enter")
      const first = yield* Queue.take(provider.requests)
      assert.include(first.body, "\"researcher\"", "the parent is offered the subagent's tool")
      yield* first.call("researcher", { task: "find why the build is slow" })

      // The child's first step streams and is held open: its turn is running.
      const child = yield* Queue.take(provider.requests)
      assert.strictEqual(child.system, childSystem)
      yield* child.text("Looking at the build scripts.")
      yield* term.type("/agents")
      yield* term.press("Enter")
      const listed = yield* term.waitFor({ test: (screen) => / 1 {2}\S+~\d+ {2}researcher {2}running/.test(screen) })
      assert.include(listed, "▸ find why the build is slow", listed)
      const childId = / 1 {2}(\S+~\d+) {2}researcher/.exec(listed)![1]! as Ids.SessionId

      yield* term.type("/agent 1 check the test step too")
      yield* term.press("Enter")
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
      yield* term.type("/agents")
      yield* term.press("Enter")
      yield* term.waitFor(`1  ${childId}  researcher  completed  The test step recompiles everything.`)
      yield* term.type("/agent 1 one more thing")
      yield* term.press("Enter")
      yield* term.waitFor("subagent 1 (researcher) has finished (completed): nothing sent")

      // A second child, cancelled by the person while its model streams: the parent's call ends `cancelled`.
      yield* term.type("ask it again")
      yield* term.press("Enter")
      const again = yield* Queue.take(provider.requests)
      yield* again.call("researcher", { task: "look again" })
      const second = yield* Queue.take(provider.requests)
      assert.strictEqual(second.system, childSystem)
      yield* second.text("Looking again")
      yield* term.type("/agent 2 cancel")
      yield* term.press("Enter")
      yield* term.waitFor("✕ cancelled subagent 2 (researcher)'s turn")
      yield* second.closed
      const after = yield* Queue.take(provider.requests)
      assert.notStrictEqual(after.system, childSystem)
      assert.include(after.body, "\\\"status\\\":\\\"cancelled\\\"", after.body)
      yield* after.text("It was cancelled.")
      yield* after.end
      yield* term.type("/agents")
      yield* term.press("Enter")
      const final = yield* term.waitFor({ test: (screen) => / 2 {2}\S+~\d+ {2}researcher {2}cancelled/.test(screen) })
      const secondId = / 2 {2}(\S+~\d+) {2}researcher {2}cancelled/.exec(final)![1]! as Ids.SessionId
      yield* term.type("/exit")
      yield* term.press("Enter")
      yield* term.waitFor("bye — session")

      const parentId = childId.slice(0, childId.lastIndexOf("~")) as Ids.SessionId
      const events = yield* readLog(db, childId)
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      const steering = events.find((e) => e.type === "steering/message")
      assert.isDefined(steering, "the child's log has the steering")
      assert.include(textOf(steering!), "check the test step too")
      assert.deepStrictEqual(
        events.flatMap((e) => e.type === "turn/start" || e.type === "turn/end" ? [`${e.type} ${e.data.turn}`] : []),
        ["turn/start 1", "turn/end 1"],
        "the steering joined the child's one turn"
      )
      const cancelled = yield* readLog(db, secondId)
      assert.deepStrictEqual(LogCheck.checkLog(cancelled), [])
      const end = cancelled.find((e) => e.type === "turn/end")
      assert.strictEqual(end?.type === "turn/end" ? end.data.reason.kind : undefined, "aborted")
      const parent = yield* readLog(db, parentId)
      assert.deepStrictEqual(LogCheck.checkLog(parent), [])
      const tree = yield* Subagents.tree(parentId).pipe(Effect.provide(SqliteStore.layer({ filename: db })))
      assert.deepStrictEqual(tree.children.map((c) => [c.id, c.last]), [[childId, "completed"], [secondId, "aborted"]])
    }).pipe(Effect.scoped))

  it.live("R232: two children, one steered and one cancelled, then SIGKILL: the stored tree renders both; chat --continue reports the cut child to the parent; all three logs are clean", () =>
    Effect.gen(function*() {
      const { db, dir, provider, term } = yield* started
      yield* term.type("split the work")
      yield* term.press("Enter")
      const first = yield* Queue.take(provider.requests)
      yield* first.call("researcher", { task: "task one" }, { task: "task two" })
      const children = [yield* Queue.take(provider.requests), yield* Queue.take(provider.requests)]
      const one = children.find((r) => r.body.includes("task one"))!
      const two = children.find((r) => r.body.includes("task two"))!
      assert.deepStrictEqual([one.system, two.system], [childSystem, childSystem])
      yield* one.text("Working on one.")
      yield* two.text("Working on two.")
      yield* term.type("/agents")
      yield* term.press("Enter")
      const row = (task: string) => new RegExp(` (\\d)  (\\S+~\\d+)  researcher  running  ▸ ${task}`)
      const listed = yield* term.waitFor({
        test: (screen) => row("task one").test(screen) && row("task two").test(screen)
      })
      const [, n1, id1] = row("task one").exec(listed)!
      const [, n2, id2] = row("task two").exec(listed)!

      yield* term.type(`/agent ${n1} focus on the tests`)
      yield* term.press("Enter")
      yield* term.waitFor(`↪ steering subagent ${n1} (researcher): focus on the tests`)
      yield* term.type(`/agent ${n2} cancel`)
      yield* term.press("Enter")
      yield* term.waitFor(`✕ cancelled subagent ${n2} (researcher)'s turn`)
      yield* two.closed
      yield* term.type("/agents")
      yield* term.press("Enter")
      yield* term.waitFor(new RegExp(` ${n2}  ${id2!.replace(/[-]/g, "\\-")}  researcher  cancelled`))
      // SIGKILL while the first child's step streams (its steering waits in its inbox).
      process.kill(term.pid, "SIGKILL")

      const parentId = id1!.slice(0, id1!.lastIndexOf("~"))
      const again = yield* chatIn(dir, db, `${provider.args} --continue`)
      // --continue continues the parent (the latest session a person started), not the child active after it.
      yield* again.waitFor({ test: (screen) => new RegExp(`continuing session ${parentId}(?!~)`).test(screen) })
      yield* again.waitFor("/help")
      yield* again.type("/exit")
      yield* again.press("Enter")
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
      const parent = yield* readLog(db, parentId as Ids.SessionId)
      const cut = yield* readLog(db, id1 as Ids.SessionId)
      const cancelled = yield* readLog(db, id2 as Ids.SessionId)
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
