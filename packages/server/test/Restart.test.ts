/**
 * Idempotent sends across a server restart: a real child process serving a SQLite file is killed with SIGKILL
 * while a turn runs and an item is queued; a new server process on the same file answers the same caller ids with
 * the same ids and accepts nothing twice — the restored item runs once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import type { SessionEvent } from "@harness/domain"
import { Effect, Option, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "../src/index.js"
import { httpClient } from "./support.js"

const child = fileURLToPath(new URL("fixtures/child.ts", import.meta.url))

/** Starts a server process over `filename`; its URL once it listens. Killed with SIGKILL when the scope ends. */
const start = (filename: string, mode: "hang" | "answer") =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly process: ChildProcess }>((resume) => {
      const proc = spawn(
        process.execPath,
        ["--conditions=@harness/source", "--import", "tsx", child, filename, mode],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
      let out = ""
      proc.stdout!.setEncoding("utf8").on("data", (text: string) => {
        out += text
        const line = out.split("\n").find((l) => l.startsWith("{"))
        if (line !== undefined && out.includes("\n")) {
          resume(Effect.succeed({ url: JSON.parse(line).url, process: proc }))
        }
      })
      proc.on("exit", (code) => resume(Effect.dieMessage(`the server process exited with ${code} before listening`)))
    }),
    ({ process: proc }) => Effect.sync(() => proc.kill("SIGKILL"))
  )

const kill = (proc: ChildProcess) =>
  Effect.async<void>((resume) => {
    proc.once("exit", () => resume(Effect.void))
    proc.kill("SIGKILL")
  })

const durableUntil = (
  url: string,
  session: Ids.SessionId,
  done: (events: ReadonlyArray<SessionEvent.SessionEvent>) => boolean
) =>
  Client.events({ baseUrl: url, token: "read-secret", session }).pipe(
    Stream.filterMap((e) => e._tag === "Durable" ? Option.some(e.event) : Option.none()),
    Stream.scan([] as ReadonlyArray<SessionEvent.SessionEvent>, (all, event) => [...all, event]),
    Stream.takeUntil(done),
    Stream.runLast,
    Effect.map(Option.getOrElse(() => [] as ReadonlyArray<SessionEvent.SessionEvent>)),
    Effect.provide(httpClient)
  )

describe("restart", () => {
  it.live(
    "a caller id accepted before a SIGKILL is the same id after it, and its message runs once",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "harness-server-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const filename = join(dir, "sessions.db")
        const id = Ids.SessionId.make("restarted")
        const path = { id }
        const first = Ids.AgentMessageId.make("caller-1")
        const queued = Ids.AgentMessageId.make("caller-2")

        const before = yield* start(filename, "hang")
        const client1 = yield* Client.make({ baseUrl: before.url, token: "send-secret" }).pipe(
          Effect.provide(httpClient)
        )
        yield* client1.sessions.create({ payload: { id } })
        const a = yield* client1.agent.followup({
          path,
          payload: { message: Message.make("one"), options: { id: first } }
        })
        yield* durableUntil(before.url, id, (events) => events.some((e) => e.type === "assistant/chunk"))
        const b = yield* client1.agent.followup({
          path,
          payload: { message: Message.make("two"), options: { id: queued } }
        })
        const again = yield* client1.agent.followup({
          path,
          payload: { message: Message.make("two, sent twice"), options: { id: queued } }
        })
        assert.deepStrictEqual([a, b, again], [first, queued, queued])
        assert.deepStrictEqual((yield* client1.agent.inbox({ path })).map((item) => item.id), [queued])
        yield* kill(before.process)

        const after = yield* start(filename, "answer")
        const client2 = yield* Client.make({ baseUrl: after.url, token: "send-secret" }).pipe(
          Effect.provide(httpClient)
        )
        // The same caller ids again, after the restart: the same answers, nothing accepted twice.
        const resent = yield* client2.agent.followup({
          path,
          payload: { message: Message.make("two, after the restart"), options: { id: queued } }
        })
        const resentFirst = yield* client2.agent.steer({
          path,
          payload: { message: Message.make("one, after the restart"), options: { id: first } }
        })
        assert.deepStrictEqual([resent, resentFirst], [queued, first])
        const events = yield* durableUntil(
          after.url,
          id,
          (events) => events.some((e) => e.type === "turn/end" && e.data.turn === 2)
        )
        const prompts = events.flatMap((e) => e.type === "user/message" ? [[e.data.messageId, e.data.content]] : [])
        assert.deepStrictEqual(prompts, [
          [first, [{ type: "text", text: "one" }]],
          [queued, [{ type: "text", text: "two" }]]
        ])
        const ends = events.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : [])
        assert.deepStrictEqual(ends, ["interrupted", "completed"])
        assert.deepStrictEqual(yield* client2.agent.inbox({ path }), [])
      }).pipe(Effect.scoped),
    120_000
  )
})
