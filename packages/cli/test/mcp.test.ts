/**
 * The CLI with MCP servers: `--mcp` and `.harness/mcp.json` give the agent a real MCP server's tools (the official
 * SDK's server, a child process over stdio), driven by a fake chat-completions server on loopback that calls one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { chatChunk, harness, tempDir } from "./support.js"

const mcpServer = fileURLToPath(new URL("../../mcp/test/fixtures/server.mjs", import.meta.url))

/** A fake provider: the first request is answered with a call of `fx__add`, every later one with text. */
const provider = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly bodies: Array<string>; readonly close: () => void }>((resume) => {
    const bodies: Array<string> = []
    const server = createServer((request, response) => {
      let raw = ""
      request.on("data", (part) => (raw += part))
      request.on("end", () => {
        bodies.push(raw)
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write(chatChunk("fake", { role: "assistant", content: "" }))
        if (bodies.length === 1) {
          const call = { index: 0, id: "call-1", type: "function", function: { name: "fx__add", arguments: "" } }
          response.write(chatChunk("fake", { tool_calls: [call] }))
          response.write(
            chatChunk("fake", { tool_calls: [{ index: 0, function: { arguments: "{\"a\":2,\"b\":3}" } }] })
          )
          response.write(chatChunk("fake", {}, "tool_calls"))
        } else {
          response.write(chatChunk("fake", { content: "The sum is 5." }))
          response.write(chatChunk("fake", {}, "stop"))
        }
        response.end("data: [DONE]\n\n")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, // listening on TCP: an AddressInfo
        bodies,
        close: () => server.close()
      })))
  }),
  (server) => Effect.sync(server.close)
)

const workspace = Effect.acquireRelease(Effect.sync(tempDir), ([, cleanup]) => Effect.sync(cleanup))

describe("harness with MCP servers", { timeout: 180_000 }, () => {
  it.scoped("--mcp: the model calls the server's tool (approved by --yes) and answers from its result", () =>
    Effect.gen(function*() {
      const server = yield* provider
      const [dir] = yield* workspace
      const result = yield* Effect.promise(() =>
        harness(
          ["run", "--yes", "--base-url", server.url, "--model", "fake", "--mcp", `fx=node ${mcpServer}`, "add 2 and 3"],
          { cwd: dir }
        )
      )
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, "The sum is 5.")
      assert.strictEqual(server.bodies.length, 2)
      // The model was offered the server's tool with its schema, and the second request carries its result.
      const first = JSON.parse(server.bodies[0]!)
      const add = first.tools.find((tool: { function: { name: string } }) => tool.function.name === "fx__add")
      assert.deepStrictEqual(add.function.parameters.required, ["a", "b"])
      const toolMessage = JSON.parse(server.bodies[1]!).messages.find((m: { role: string }) => m.role === "tool")
      assert.include(JSON.stringify(toolMessage), "5")
    }))

  it.scoped(".harness/mcp.json: its servers are listed by config; a bad entry is a settings error naming it", () =>
    Effect.gen(function*() {
      const [dir] = yield* workspace
      mkdirSync(join(dir, ".harness"))
      writeFileSync(
        join(dir, ".harness", "mcp.json"),
        JSON.stringify({ mcpServers: { fx: { command: "node", args: [mcpServer], approval: "none" } } })
      )
      const config = yield* Effect.promise(() => harness(["config"], { cwd: dir }))
      assert.strictEqual(config.code, 0, config.stderr)
      assert.match(config.stdout, /mcp fx\s+node .*server\.mjs\s+\(file .*mcp\.json\)/)
      writeFileSync(join(dir, ".harness", "mcp.json"), JSON.stringify({ mcpServers: { fx: { comand: "node" } } }))
      const bad = yield* Effect.promise(() => harness(["config"], { cwd: dir }))
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "mcpServers.fx")
    }))
})
