/**
 * `harness mcp --http`, a real child process on loopback driven by the official MCP SDK's Streamable HTTP client:
 * the same tools as over stdio, behind a bearer token from `HARNESS_MCP_TOKEN` (a request without it is refused, and
 * `--http` without the variable does not start).
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Deferred, Effect } from "effect"
import { spawn } from "node:child_process"
import { call, inboxPlacements, message, statusBecomes, wellFormed } from "./mcpClient.js"
import { bin, cleanEnv, harness, tempDir } from "./support.js"

const token = "test-token-0123456789"

/** Starts `harness mcp --http 0` and learns its URL from the line it prints on standard error. */
const server = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const [dir, cleanup] = tempDir()
      const child = spawn(process.execPath, [bin, "mcp", "--offline", "--store", "memory", "--http", "0", ...args], {
        cwd: dir,
        env: cleanEnv({ HARNESS_OFFLINE_PACE_MS: "60000", HARNESS_MCP_TOKEN: token }),
        stdio: ["ignore", "ignore", "pipe"]
      })
      const started = yield* Deferred.make<string, string>()
      let stderr = ""
      child.stderr.on("data", (part) => {
        stderr += String(part)
        const url = /serving on (http:\/\/\S+)/.exec(stderr)?.[1]
        if (url !== undefined) Deferred.unsafeDone(started, Effect.succeed(url))
      })
      child.on("exit", (code) => Deferred.unsafeDone(started, Effect.fail(`exited with ${code}: ${stderr}`)))
      const url = yield* Effect.orDie(Deferred.await(started))
      return { url, child, cleanup }
    }),
    ({ child, cleanup }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.sync(cleanup))
        child.on("exit", () => resume(Effect.sync(cleanup)))
        child.kill("SIGTERM")
      })
  )

const connect = (url: string, bearer: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Client({ name: "test", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(url), {
            requestInit: { headers: { authorization: `Bearer ${bearer}` } }
          })
        )
        return client
      },
      catch: (e) => String(e)
    }),
    (client) => Effect.promise(() => client.close())
  )

describe("harness mcp --http", { timeout: 180_000 }, () => {
  it.scoped("an MCP client over Streamable HTTP lists the tools, sends, reads the inbox and cancels", () =>
    Effect.gen(function*() {
      const { url } = yield* server(["--expose", "status,events,inbox,send,steer,cancel,receipt"])
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      const client = yield* connect(url, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), [
        "cancel",
        "events",
        "inbox",
        "receipt",
        "send",
        "status",
        "steer"
      ])

      const first = yield* call(client, "send", {
        message: message("count to a hundred"),
        options: { target: "next-turn", wakeup: true }
      })
      assert.isFalse(first.isError)
      yield* statusBecomes(client, "running")
      const queued = yield* call(client, "send", {
        message: message("and then to two hundred"),
        options: { target: "next-turn", wakeup: false }
      })
      assert.isFalse(queued.isError)
      assert.deepStrictEqual(yield* inboxPlacements(client), [[queued.value as string, "queued"]])
      assert.isFalse((yield* call(client, "cancel", { cause: "user" })).isError)
      yield* statusBecomes(client, "idle")
      assert.deepStrictEqual((yield* call(client, "inbox")).value, [])
      assert.deepStrictEqual((yield* call(client, "receipt", { id: queued.value })).value, {
        _tag: "discarded",
        cause: "user"
      })
      const events = (yield* call(client, "events")).value as ReadonlyArray<
        { readonly type: string; readonly data: { readonly reason?: { readonly kind: string } } }
      >
      assert.strictEqual(events.findLast((e) => e.type === "turn/end")?.data.reason?.kind, "aborted")
      // The cancelled session's log is well-formed.
      assert.deepStrictEqual(wellFormed(events), [])
    }))

  it.scoped("a request without the bearer token is refused, and so is a wrong one", () =>
    Effect.gen(function*() {
      const { url } = yield* server([])
      const bare = yield* Effect.promise(() =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
        })
      )
      assert.strictEqual(bare.status, 401)
      assert.include(yield* Effect.promise(() => bare.text()), "HARNESS_MCP_TOKEN")
      const wrong = yield* Effect.flip(connect(url, "not-the-token"))
      assert.include(wrong, "bearer token is missing or wrong")
      // The right token still works.
      const client = yield* connect(url, token)
      assert.deepStrictEqual((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name).sort(), [
        "events",
        "followup",
        "inbox",
        "status"
      ])
    }))

  it.effect("--http without HARNESS_MCP_TOKEN does not start, and says what to set", () =>
    Effect.gen(function*() {
      const [dir, cleanup] = tempDir()
      const result = yield* Effect.promise(() => harness(["mcp", "--offline", "--http", "0"], { cwd: dir }))
      cleanup()
      assert.notStrictEqual(result.code, 0)
      assert.include(result.stderr, "HARNESS_MCP_TOKEN")
    }))
})
