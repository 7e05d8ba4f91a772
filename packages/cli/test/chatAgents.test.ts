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
import { bin, chatChunk, tempDir } from "./support.js"
import * as Terminal from "./terminal.js"

/** One request to the scripted provider: what was asked, and how the test answers it (piece by piece). */
interface Request {
  readonly body: string
  /** The system prompt of the request: which agent is asking. */
  readonly system: string
  readonly text: (content: string) => Effect.Effect<void>
  readonly call: (name: string, args: object) => Effect.Effect<void>
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
        call: (name, args) =>
          Effect.sync(() => {
            const call = { index: 0, id: `call-${name}`, type: "function", function: { name, arguments: "" } }
            response.write(chatChunk("scripted", { tool_calls: [call] }))
            response.write(
              chatChunk("scripted", { tool_calls: [{ index: 0, function: { arguments: JSON.stringify(args) } }] })
            )
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

describe("harness chat /agents", { timeout: 300_000 }, () => {
  it.live("R230, R231: /agents lists the running child; /agent 1 steers its turn; /agent 2 cancel cancels the other; the logs are clean", () =>
    Effect.gen(function*() {
      const [dir, cleanup] = tempDir()
      yield* Effect.addFinalizer(() => Effect.sync(cleanup))
      mkdirSync(join(dir, ".harness"))
      writeFileSync(
        join(dir, ".harness", "agents.json"),
        JSON.stringify({ agents: { researcher: { description: "researches one question", system: childSystem } } })
      )
      const db = join(dir, "chat.db")
      const provider = yield* scriptedProvider
      const term = yield* Terminal.open({
        command:
          `env NO_COLOR=1 'LLM_IDLE_TIMEOUT=10 minutes' ${process.execPath} ${bin} chat --store sqlite:${db} ${provider.args}`,
        cwd: dir
      })
      yield* term.waitFor("idle · 0 tokens · /help")
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
})
