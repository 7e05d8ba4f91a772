/**
 * The MCP toolset against real MCP servers the tests start: the official SDK's server as a child process over
 * stdio and over Streamable HTTP on loopback, a server that crashes mid-call, and a hand-written server that lies.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import type { AgentTool } from "@harness/agent"
import { Agent } from "@harness/agent"
import { Ids, Message } from "@harness/domain"
import { McpError, McpTools } from "@harness/mcp"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Duration, Effect, Either, Exit, Fiber, Schedule, Schema, TestClock } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"
import { httpFixture } from "./fixtures/http.js"

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url))
const stdio = (file: string) => ({ command: process.execPath, args: [fixture(file)] })

const find = (tools: ReadonlyArray<AgentTool.AgentTool>, name: string) => {
  const tool = tools.find((t) => t.name === name)
  if (tool === undefined) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(", ")}`)
  return tool
}

/** A tool's parameter schema, as the agent decodes with it (its AST, which needs no context). */
const paramsOf = (tool: AgentTool.AgentTool) => Schema.make<unknown, unknown, never>(tool.tool.parametersSchema.ast)

/**
 * Runs one call as the agent would: the arguments decoded by the tool's parameter schema, then the handler. The
 * MCP handlers never use the context's agent, so none is given (the one cast of these tests).
 */
const call = (tools: ReadonlyArray<AgentTool.AgentTool>, name: string, args: object = {}) =>
  Effect.suspend(() => {
    const tool = find(tools, name)
    const params = Schema.decodeUnknownSync(paramsOf(tool))(args)
    const context = { callId: Ids.ToolCallId.make("call"), agent: undefined as unknown as Agent.Service }
    return tool.handler(params, context)
  })

/** The failure of a call, which must be an `McpError`. */
const failure = (tools: ReadonlyArray<AgentTool.AgentTool>, name: string, args: object = {}) =>
  Effect.flatMap(
    Effect.flip(call(tools, name, args)),
    (error) =>
      error instanceof McpError.McpError ? Effect.succeed(error) : Effect.dieMessage(`not an McpError: ${error}`)
  )

/** The agent's log is well-formed, its MCP call answered with an error, and its turn ended `aborted`. */
const abortedCall = (agent: Agent.Service) =>
  Effect.map(agent.log, (log) => {
    assert.deepStrictEqual(LogCheck.checkLog(log), [])
    const result = log.find((e) => e.type === "tool/result")
    assert.isTrue(result?.type === "tool/result" && result.data.isError)
    const end = log.findLast((e) => e.type === "turn/end")
    assert.strictEqual(end?.type === "turn/end" ? end.data.reason.kind : undefined, "aborted")
  })

describe("MCP tools over stdio (the official SDK's server as a child process)", () => {
  it.scoped("lists the server's tools under <server>__<tool>, advertises its JSON Schema, and calls them", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: stdio("server.mjs") } })
      assert.deepStrictEqual(
        tools.map((t) => t.name),
        [
          "fx__echo",
          "fx__add",
          "fx__pid",
          "fx__wait",
          "fx__waitMarked",
          "fx__cancellations",
          "fx__crash",
          "fx__big",
          "fx__fail"
        ]
      )
      // The model sees the server's JSON Schema.
      const schema = JSON.parse(JSON.stringify(
        (yield* Effect.sync(() => find(tools, "fx__add").tool.parametersSchema.ast.annotations))[
          Symbol.for("effect/annotation/JSONSchema")
        ]
      ))
      assert.deepStrictEqual(schema.properties.a, { type: "number" })
      assert.deepStrictEqual(schema.required, ["a", "b"])
      assert.strictEqual(find(tools, "fx__add").tool.description, "Adds two numbers.")
      assert.strictEqual(yield* call(tools, "fx__echo", { text: "hello" }), "hello")
      assert.strictEqual(yield* call(tools, "fx__add", { a: 2, b: 3 }), "5")
      // Approval is required unless configured otherwise; calls are exclusive and interrupted on cancel.
      assert.strictEqual(find(tools, "fx__echo").approval, "required")
      assert.strictEqual(find(tools, "fx__echo").onCancel, "interrupt")
    }))

  it.scoped("validates the model's arguments against the server's schema before the call", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: stdio("server.mjs") } })
      const decode = Schema.decodeUnknownEither(paramsOf(find(tools, "fx__add")))
      const wrongType = decode({ a: 1, b: "two" })
      assert.isTrue(Either.isLeft(wrongType))
      assert.include(String(Either.isLeft(wrongType) ? wrongType.left.message : ""), "b")
      assert.isTrue(Either.isLeft(decode({ a: 1, b: -1 })))
      assert.isTrue(Either.isLeft(decode({ a: 1 })))
      assert.isTrue(Either.isRight(decode({ a: 1.5, b: 2 })))
    }))

  it.scoped("a tool's own error is a ToolError with its text; approval follows the settings per server and tool", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({
        servers: { fx: { ...stdio("server.mjs"), approval: "none", tools: { crash: "required" } } }
      })
      const error = yield* failure(tools, "fx__fail")
      assert.strictEqual(error.reason, "ToolError")
      assert.strictEqual(error.code, "TOOL_ERROR")
      assert.strictEqual(error.message, "the fixture failed on purpose")
      assert.strictEqual(find(tools, "fx__echo").approval, "none")
      assert.strictEqual(find(tools, "fx__crash").approval, "required")
    }))

  it.scoped("a server that exits mid-call gives a Closed error, and the next call starts it again", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: stdio("server.mjs") } })
      const before = yield* call(tools, "fx__pid")
      const error = yield* failure(tools, "fx__crash")
      assert.strictEqual(error.reason, "Closed")
      assert.strictEqual(error.server, "fx")
      const after = yield* call(tools, "fx__pid")
      assert.notStrictEqual(after, before)
      // It survives more than one restart.
      assert.strictEqual((yield* failure(tools, "fx__crash")).reason, "Closed")
      assert.notStrictEqual(yield* call(tools, "fx__pid"), after)
      assert.strictEqual(yield* call(tools, "fx__echo", { text: "still here" }), "still here")
    }))

  it.scoped("a large result is cut to maxResultChars, with a marker", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: stdio("server.mjs") }, maxResultChars: 1000 })
      const result = yield* call(tools, "fx__big", { n: 200_000 })
      assert.isString(result)
      assert.isAtMost(String(result).length, 1000)
      assert.include(String(result), "[truncated: ")
      assert.strictEqual(yield* call(tools, "fx__big", { n: 1000 }), "x".repeat(1000))
    }))

  it.scoped("a server that cannot be started fails the toolset with Connect, naming it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(McpTools.make({
        servers: { gone: { command: process.execPath, args: ["-e", "process.exit(1)"] } }
      }))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause : undefined
      assert.include(String(error), "gone")
      assert.include(String(error), "Connect")
    }))

  it.scoped("bad settings are InvalidConfig errors naming the entry", () =>
    Effect.gen(function*() {
      const misspelt = yield* Effect.flip(McpTools.make({ servers: { fx: { comand: "node" } as never } }))
      assert.strictEqual(misspelt.reason, "InvalidConfig")
      const badName = yield* Effect.flip(McpTools.make({ servers: { "a b": stdio("server.mjs") } }))
      assert.strictEqual(badName.reason, "InvalidConfig")
      assert.include(badName.message, "a b")
    }))
})

describe("a server that lies", () => {
  const liar = () =>
    McpTools.make({ servers: { liar: stdio("liar.mjs") }, maxMessageBytes: 1024 * 1024, timeout: "1 hour" })
  const pidOf = (text: unknown) => String(text).replace("ok from ", "")

  it.scoped("a line that is not JSON-RPC, a wrong id, a message over the bound: Protocol errors, then a restart", () =>
    Effect.gen(function*() {
      const tools = yield* liar()
      const first = pidOf(yield* call(tools, "liar__ok"))
      const seen = new Set([first])
      for (const lie of ["liar__garbage", "liar__wrong_id", "liar__huge"]) {
        const error = yield* failure(tools, lie)
        assert.strictEqual(error.reason, "Protocol", `${lie}: ${error.message}`)
        assert.include(error.message, "liar")
        // The connection was dropped; the next call starts a fresh server, which answers.
        const pid = pidOf(yield* call(tools, "liar__ok"))
        assert.isFalse(seen.has(pid), `${lie}: the server was not started again`)
        seen.add(pid)
      }
    }))
})

describe("MCP tools over Streamable HTTP on loopback", () => {
  it.scoped("lists and calls the tools", () =>
    Effect.gen(function*() {
      const server = yield* httpFixture
      const tools = yield* McpTools.make({ servers: { web: { url: server.url } } })
      assert.include(tools.map((t) => t.name), "web__echo")
      assert.strictEqual(yield* call(tools, "web__echo", { text: "over http" }), "over http")
      assert.strictEqual(yield* call(tools, "web__add", { a: 40, b: 2 }), "42")
    }))

  it.effect("a call past its timeout is a Timeout error, and the server is told with notifications/cancelled", () =>
    Effect.gen(function*() {
      const server = yield* httpFixture
      const tools = yield* McpTools.make({ servers: { web: { url: server.url, timeout: "30 seconds" } } })
      const fiber = yield* Effect.fork(Effect.flip(call(tools, "web__wait")))
      yield* server.waitStarted
      yield* TestClock.adjust(Duration.seconds(30))
      const error = yield* Fiber.join(fiber)
      assert.instanceOf(error, McpError.McpError)
      assert.strictEqual(error instanceof McpError.McpError ? error.reason : undefined, "Timeout")
      // The server received the cancellation of that very call.
      assert.isString(yield* server.cancelled)
    }).pipe(Effect.scoped))
})

describe("an agent turn with MCP tools", () => {
  it.live("the model calls an MCP tool; bad arguments are refused; the results are in a well-formed log", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: { ...stdio("server.mjs"), tools: { add: "none" } } } })
      const approvals: Array<string> = []
      const agent = yield* Agent.make({
        tools,
        hooks: {
          toolApproval: ({ name }) =>
            Effect.sync(() => approvals.push(name)).pipe(Effect.as({ kind: "allow" as const }))
        }
      })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(S.toolCall("fx__add", { a: 1, b: "two" }, { id: "bad" })),
        S.toolCallResponse(S.toolCall("fx__add", { a: 1, b: 2 }, { id: "add" })),
        S.toolCallResponse(S.toolCall("fx__echo", { text: "approved" }, { id: "echo" })),
        S.textResponse("1 + 2 = 3")
      )
      yield* agent.followup(Message.make("add 1 and 2"))
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const results = new Map(log.flatMap((e) => (e.type === "tool/result" ? [[e.data.callId as string, e.data]] : [])))
      const text = (id: string) => results.get(id)!.content.map((b) => b.text).join("")
      assert.isTrue(results.get("bad")!.isError)
      assert.include(text("bad"), "invalid arguments")
      assert.isFalse(results.get("add")!.isError)
      assert.strictEqual(text("add"), "3")
      assert.strictEqual(text("echo"), "approved")
      // `add` needs no approval by its settings; `echo` does, by the default.
      assert.deepStrictEqual(approvals, ["fx__echo"])
      // The model was shown the server's schema for the tool.
      const requests = yield* model.requests
      assert.strictEqual(requests.length, 4)
    }).pipe(Effect.scoped, Effect.provide([S.layer(), NodeContext.layer])))

  it.live("cancelling the turn cancels the running MCP call on the server", () =>
    Effect.gen(function*() {
      const server = yield* httpFixture
      const tools = yield* McpTools.make({ servers: { web: { url: server.url, approval: "none" } } })
      const agent = yield* Agent.make({ tools })
      const model = yield* S.ScriptedModel
      yield* model.push(S.toolCallResponse(S.toolCall("web__wait", {}, { id: "wait" })), S.textResponse("unused"))
      yield* agent.followup(Message.make("wait for it"))
      yield* server.waitStarted
      yield* agent.cancel("user")
      yield* agent.whenIdle
      assert.isString(yield* server.cancelled)
      yield* abortedCall(agent)
    }).pipe(Effect.scoped, Effect.provide([S.layer(), NodeContext.layer])))

  it.live("R233: cancelling the turn mid-call of a stdio MCP tool sends notifications/cancelled; the server's call sees its abort", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "harness-mcp-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const marker = join(dir, "started")
      const tools = yield* McpTools.make({ servers: { fx: { ...stdio("server.mjs"), approval: "none" } } })
      const agent = yield* Agent.make({ tools })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(S.toolCall("fx__waitMarked", { marker }, { id: "wait" })),
        S.textResponse("unused")
      )
      yield* agent.followup(Message.make("wait for it"))
      // The server's handler is running once it created the marker (polled; bounded).
      yield* Effect.sync(() => existsSync(marker)).pipe(
        Effect.repeat({ until: (started) => started, schedule: Schedule.spaced("20 millis") }),
        Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("the server never started the call") })
      )
      yield* agent.cancel("user")
      yield* agent.whenIdle
      // The same server process (no restart) lists the cancellation it received for that call.
      assert.strictEqual(yield* call(tools, "fx__pid"), readFileSync(marker, "utf8"))
      const received = JSON.parse(String(yield* call(tools, "fx__cancellations"))) as ReadonlyArray<string>
      assert.strictEqual(received.length, 1, "the server was told the call was cancelled")
      yield* abortedCall(agent)
    }).pipe(Effect.scoped, Effect.provide([S.layer(), NodeContext.layer])))
})
