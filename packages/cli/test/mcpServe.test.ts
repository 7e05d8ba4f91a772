/**
 * `harness mcp`, driven by the official MCP SDK's client as a real child process over stdio: the operations are
 * tools, a followup starts a turn, a steer joins it while it runs (the offline model at one word a minute holds the
 * turn), the inbox shows it, and a cancel ends the turn and discards it — all visible in the session's events.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { call, inboxPlacements, message, statusBecomes, wellFormed } from "./mcpClient.js"
import { bin, cleanEnv, tempDir } from "./support.js"

const connectIn = (args: ReadonlyArray<string>, pace = "60000") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const [dir, cleanup] = tempDir()
      const env = cleanEnv({ HARNESS_OFFLINE_PACE_MS: pace })
      const client = new Client({ name: "test", version: "1.0.0" })
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [bin, "mcp", "--offline", "--store", "memory", ...args],
          cwd: dir,
          env: Object.fromEntries(Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [[k, v]]))),
          stderr: "inherit"
        })
      )
      return { client, cleanup, dir }
    }),
    ({ cleanup, client }) => Effect.promise(() => client.close().finally(cleanup))
  )

const connect = (args: ReadonlyArray<string>) => Effect.map(connectIn(args), ({ client }) => client)

describe("harness mcp", { timeout: 180_000 }, () => {
  it.scoped("an MCP client sends, steers while the turn runs, reads the inbox and the events, and cancels", () =>
    Effect.gen(function*() {
      const client = yield* connect(["--expose", "status,events,inbox,followup,steer,cancel,edit,receipt"])
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), [
        "cancel",
        "edit",
        "events",
        "followup",
        "inbox",
        "receipt",
        "status",
        "steer"
      ])
      // The parameters are the operation's payload, derived from its request schema (no `_tag`).
      const followupTool = tools.find((t) => t.name === "followup")!
      assert.includeMembers(Object.keys(followupTool.inputSchema.properties ?? {}), ["message"])
      assert.notInclude(Object.keys(followupTool.inputSchema.properties ?? {}), "_tag")

      const first = yield* call(client, "followup", { message: message("count to a hundred") })
      assert.isFalse(first.isError)
      assert.isString(first.value)
      yield* statusBecomes(client, "running")
      const steered = yield* call(client, "steer", { message: message("only to ten") })
      assert.isFalse(steered.isError)
      assert.deepStrictEqual(yield* inboxPlacements(client), [[steered.value as string, "steering"]])
      const edited = yield* call(client, "edit", { id: steered.value, message: message("only to five") })
      assert.isFalse(edited.isError)
      assert.deepStrictEqual((yield* call(client, "receipt", { id: first.value })).value, { _tag: "ran", turn: 1 })

      assert.isFalse((yield* call(client, "cancel", { cause: "user" })).isError)
      yield* statusBecomes(client, "idle")
      assert.deepStrictEqual((yield* call(client, "inbox")).value, [])
      const events = (yield* call(client, "events", { since: 0 })).value as ReadonlyArray<
        { readonly type: string; readonly data: { readonly reason?: { readonly kind: string } } }
      >
      const types = events.map((e) => e.type)
      assert.include(types, "user/message")
      assert.strictEqual(events.findLast((e) => e.type === "turn/end")?.data.reason?.kind, "aborted")
      assert.deepStrictEqual((yield* call(client, "receipt", { id: steered.value })).value, {
        _tag: "discarded",
        cause: "user"
      })
    }))

  it.scoped("only the exposed operations exist; bad arguments are an error result naming the problem", () =>
    Effect.gen(function*() {
      const client = yield* connect([])
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), ["events", "followup", "inbox", "status"])
      const bad = yield* call(client, "followup", { message: { content: "not blocks" } })
      assert.isTrue(bad.isError)
      assert.strictEqual((bad.value as { readonly _tag: string })._tag, "InvalidArguments")
      // An operation that is not exposed does not exist.
      const refused = yield* Effect.flip(
        Effect.tryPromise(() => client.callTool({ name: "cancel", arguments: { cause: "user" } }))
      )
      assert.include(String(refused.cause), "not found")
    }))

  it.scoped("with approve exposed, a write waits for the client's answer: approvals lists it, approve allows or denies it once", () =>
    Effect.gen(function*() {
      const { client, dir } = yield* connectIn(["--expose", "status,events,followup,approvals,approve"], "1")
      const pendingCall = Effect.gen(function*() {
        for (let attempt = 0; attempt < 2000; attempt++) {
          const { value } = yield* call(client, "approvals")
          const pending = value as ReadonlyArray<{ readonly callId: string; readonly name: string }>
          if (pending.length > 0) return pending
        }
        return assert.fail("no approval was ever pending")
      })

      assert.isFalse((yield* call(client, "followup", { message: message("write notes.txt: hello from mcp") })).isError)
      const [asked] = yield* pendingCall
      assert.strictEqual(asked!.name, "write_file")
      // Nothing is written before the answer.
      assert.isFalse(existsSync(join(dir, "notes.txt")))
      const allowed = yield* call(client, "approve", { callId: asked!.callId, answer: { kind: "allow" } })
      assert.isFalse(allowed.isError)
      const again = yield* call(client, "approve", { callId: asked!.callId, answer: { kind: "deny" } })
      assert.isTrue(again.isError)
      assert.strictEqual((again.value as { readonly _tag: string })._tag, "ApprovalError")
      yield* statusBecomes(client, "idle")
      assert.strictEqual(readFileSync(join(dir, "notes.txt"), "utf8"), "hello from mcp\n")
      assert.deepStrictEqual((yield* call(client, "approvals")).value, [])

      assert.isFalse((yield* call(client, "followup", { message: message("write other.txt: never") })).isError)
      const [denied] = yield* pendingCall
      const refused = yield* call(client, "approve", {
        callId: denied!.callId,
        answer: { kind: "deny", reason: "not in this folder" }
      })
      assert.isFalse(refused.isError)
      yield* statusBecomes(client, "idle")
      assert.isFalse(existsSync(join(dir, "other.txt")))
      const events = (yield* call(client, "events", { limit: 1000 })).value as ReadonlyArray<
        { readonly type: string }
      >
      assert.strictEqual(events.filter((e) => e.type === "tool/result").length, 2)
      assert.include(JSON.stringify(events.filter((e) => e.type === "tool/result")), "not in this folder")
      assert.deepStrictEqual(wellFormed(events), [])
    }))

  it.scoped("compact runs a compaction turn that logs a compaction record", () =>
    Effect.gen(function*() {
      const { client } = yield* connectIn(["--expose", "status,events,followup,compact"], "1")
      assert.isFalse((yield* call(client, "followup", { message: message("hello there") })).isError)
      yield* statusBecomes(client, "idle")
      const compacted = yield* call(client, "compact", { options: { instruction: "Keep it short." } })
      assert.isFalse(compacted.isError)
      yield* statusBecomes(client, "idle")
      const events = (yield* call(client, "events", { limit: 1000 })).value as ReadonlyArray<
        { readonly type: string; readonly data: { readonly trigger?: { readonly kind: string } } }
      >
      assert.strictEqual(events.filter((e) => e.type === "compaction").length, 1)
      assert.include(events.filter((e) => e.type === "turn/start").map((e) => e.data.trigger?.kind), "compaction")
    }))

  it.scoped("R236: a client that cancels its awaitReceipt call interrupts the wait; a call not cancelled answers once the message is final", () =>
    Effect.gen(function*() {
      const client = yield* connect(["--expose", "send,awaitReceipt,withdraw,receipt"])
      const errors: Array<string> = []
      client.onerror = (error) => void errors.push(error.message)
      // Parked messages (next-turn, no wakeup) never run: their fate is final only once withdrawn.
      const park = (text: string) =>
        Effect.map(
          call(client, "send", { message: message(text), options: { target: "next-turn", wakeup: false } }),
          ({ value }) => value as string
        )
      const a = yield* park("cancelled wait")
      const b = yield* park("answered wait")
      const controller = new AbortController()
      const cancelled = Effect.runPromiseExit(
        Effect.promise(() =>
          client.callTool({ name: "awaitReceipt", arguments: { id: a } }, undefined, { signal: controller.signal })
        )
      )
      const answered = client.callTool({ name: "awaitReceipt", arguments: { id: b } })
      // A round trip after both calls: the server has read them, so both waits are in flight.
      assert.strictEqual(((yield* call(client, "receipt", { id: a })).value as { _tag: string })._tag, "pending")
      controller.abort("the client stopped waiting")
      yield* Effect.promise(() => cancelled)
      // The server ends the cancelled wait while its message is still pending: @effect/ai's server answers the
      // cancelled request with its interrupt (the SDK reports an answer to an id it dropped through `onerror`).
      for (let attempt = 0; errors.length === 0 && attempt < 2000; attempt++) {
        assert.strictEqual(((yield* call(client, "receipt", { id: a })).value as { _tag: string })._tag, "pending")
      }
      assert.strictEqual(errors.length, 1, "the cancelled wait did not end")
      assert.include(errors[0], "Interrupt")
      // Both messages become final, `a` first: a wait still running for `a` would answer before `b`'s does.
      assert.strictEqual(((yield* call(client, "withdraw", { id: a })).value as { _tag: string })._tag, "Withdrawn")
      assert.strictEqual(((yield* call(client, "withdraw", { id: b })).value as { _tag: string })._tag, "Withdrawn")
      const result = yield* Effect.promise(() => answered)
      const content = result.content as ReadonlyArray<{ readonly text: string }>
      assert.strictEqual((JSON.parse(content[0]!.text) as { _tag: string })._tag, "withdrawn")
      assert.deepStrictEqual((yield* call(client, "receipt", { id: a })).value, { _tag: "withdrawn" })
      assert.strictEqual(errors.length, 1, errors.join("\n"))
    }))
})
