/**
 * `harness cluster runner` and `harness serve --cluster`, run as a user runs them (the bundled bin, child processes,
 * HTTP on loopback): a runner hosts the agent with the offline model over SQLite (the cluster's tables and the
 * sessions, shared by the nodes of this machine); a front in another process, which runs no agent, serves it over
 * HTTP. A message sent to the front runs on the runner, its events reach the front's event stream, and the session is
 * in the shared store afterwards. Settings a cluster cannot use are refused before anything starts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as net from "node:net"
import { call, harness, readUntil, serve, started, tempDir } from "./support.js"

/** The cluster's timings in these tests: few shards, quick polls, so a send finds its runner in a moment. */
const timings = {
  HARNESS_CLUSTER_SHARDS_PER_GROUP: "12",
  HARNESS_CLUSTER_REFRESH_ASSIGNMENTS_INTERVAL: "300 millis",
  HARNESS_CLUSTER_MESSAGE_POLL_INTERVAL: "500 millis",
  HARNESS_CLUSTER_REPLY_POLL_INTERVAL: "100 millis",
  HARNESS_CLUSTER_SEND_RETRY_INTERVAL: "100 millis",
  HARNESS_CLUSTER_ENTITY_TERMINATION_TIMEOUT: "2 seconds"
}

/** A free port on loopback. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

describe("harness cluster runner, harness serve --cluster", () => {
  it("a message sent to the front runs on the runner; its events stream from the front", async () => {
    const [dir, cleanup] = tempDir()
    try {
      const env = { ...timings, HARNESS_SERVER_TOKENS: "web:send:s3cret" }
      const shared = ["--cluster", "sqlite:cluster.db", "--store", "sqlite:sessions.db"]
      const port = await freePort()
      const runner = await started(
        dir,
        env,
        ["cluster", "runner", ...shared, "--port", String(port)],
        "Ctrl-C stops the runner"
      )
      assert.strictEqual(runner.stdout().split("\n")[0], `127.0.0.1:${port}`)
      assert.include(runner.stderr(), "model offline")
      const front = await serve(dir, env, shared)
      assert.include(front.stderr(), `in front of the cluster sqlite:${dir}`)
      assert.notInclude(front.stderr(), "model")

      assert.strictEqual((await call(`${front.url}/sessions`, "s3cret", "POST", { id: "clustered" })).status, 201)
      // Subscribed before the send: the events of the turn arrive live, through the front.
      const events = await fetch(`${front.url}/sessions/clustered/events?access_token=s3cret`)
      const sent = await call(`${front.url}/sessions/clustered/followup`, "s3cret", "POST", {
        message: { content: [{ type: "text", text: "hello" }], source: { kind: "user" } },
        options: { id: "m-1" }
      })
      assert.deepStrictEqual(sent, { status: 200, body: "m-1" })
      const text = await readUntil(events, "\"type\":\"turn/end\"")
      assert.include(text, "\"type\":\"assistant/message\"")
      assert.include(text, "\"reason\":{\"kind\":\"completed\"}")
      assert.include(runner.stderr(), "session clustered opened here", "the turn ran on the runner")

      assert.strictEqual(await front.stop(), 0)
      assert.strictEqual(await runner.stop(), 0)
      const shown = await harness(["sessions", "show", "clustered", "--store", "sqlite:sessions.db"], { cwd: dir })
      assert.strictEqual(shown.code, 0)
      assert.include(shown.stdout, "hello")
    } finally {
      cleanup()
    }
  }, 120_000)

  it("refuses a store the nodes cannot share and a --cluster it cannot read, before anything starts", async () => {
    const [dir, cleanup] = tempDir()
    try {
      const memory = await harness(["cluster", "runner", "--cluster", "sqlite:c.db", "--store", "memory"], { cwd: dir })
      assert.strictEqual(memory.code, 2)
      assert.include(memory.stderr, "--store memory is this process's alone")
      const unknown = await harness(["serve", "--cluster", "mysql://db/cluster"], { cwd: dir })
      assert.strictEqual(unknown.code, 2)
      assert.include(unknown.stderr, "is not a cluster's storage: give postgres://… or sqlite:<file>")
    } finally {
      cleanup()
    }
  }, 60_000)
})
