/**
 * `harness serve`, run as a user runs it (the bundled bin, a child process): it prints its URL, takes tokens from
 * HARNESS_SERVER_TOKENS, runs the agent `harness chat` would (offline model, SQLite in the workspace), and the
 * session it served is in the store afterwards for `harness sessions show`.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { call, harness, readUntil, serve, tempDir } from "./support.js"

describe("harness serve", () => {
  it("serves the offline agent over SQLite in the workspace with the tokens of HARNESS_SERVER_TOKENS", async () => {
    const [dir, cleanup] = tempDir()
    try {
      const server = await serve(dir, { HARNESS_SERVER_TOKENS: "web:send:s3cret,look:read:peek" })
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.include(server.stderr(), "tokens: web (send), look (read)")
      assert.notInclude(server.stderr(), "s3cret")
      assert.strictEqual((await call(`${server.url}/sessions`, "wrong", "GET")).status, 401)
      const created = await call(`${server.url}/sessions`, "s3cret", "POST", { id: "served" })
      assert.strictEqual(created.status, 201)
      const refused = await call(`${server.url}/sessions/served/followup`, "peek", "POST", {
        message: { content: [{ type: "text", text: "hello" }], source: { kind: "user" } }
      })
      assert.strictEqual(refused.status, 403)
      const sent = await call(`${server.url}/sessions/served/followup`, "s3cret", "POST", {
        message: { content: [{ type: "text", text: "hello" }], source: { kind: "user" } },
        options: { id: "m-1" }
      })
      assert.deepStrictEqual(sent, { status: 200, body: "m-1" })
      // The stream from the start, until the turn ends: the offline model's answer.
      const events = await fetch(`${server.url}/sessions/served/events?access_token=peek`)
      const text = await readUntil(events, "\"type\":\"turn/end\"")
      assert.include(text, "\"type\":\"assistant/message\"")
      assert.include(text, "\"reason\":{\"kind\":\"completed\"}")
      assert.strictEqual(await server.stop(), 0)
      assert.ok(existsSync(join(dir, ".harness", "sessions.db")))
      const shown = await harness(["sessions", "show", "served"], { cwd: dir })
      assert.strictEqual(shown.code, 0)
      assert.include(shown.stdout, "hello")
    } finally {
      cleanup()
    }
  }, 120_000)

  it(
    "without HARNESS_SERVER_TOKENS makes a one-time admin token and prints it; --help documents the tokens",
    async () => {
      const [dir, cleanup] = tempDir()
      try {
        const server = await serve(dir, {}, ["--store", "memory"])
        const token = /admin token is (\S+)/.exec(server.stderr())?.[1]
        assert.ok(token !== undefined)
        assert.strictEqual((await call(`${server.url}/sessions`, token, "GET")).status, 200)
        await server.stop()
        const help = await harness(["serve", "--help"], { cwd: dir })
        assert.include(help.stdout, "HARNESS_SERVER_TOKENS")
        assert.include(help.stdout, "--port")
        assert.include(help.stdout, "--host")
      } finally {
        cleanup()
      }
    },
    120_000
  )
})
