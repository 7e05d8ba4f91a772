/**
 * Idempotent sends across a server restart: a real child process serving a SQLite file is killed with SIGKILL
 * while a turn runs and an item is queued; a new server process on the same file answers the same caller ids with
 * the same ids and accepts nothing twice — the restored item runs once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import type { SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Effect, Option, Queue, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "../src/index.js"
import { httpClient } from "./support.js"

const child = fileURLToPath(new URL("fixtures/child.ts", import.meta.url))

/**
 * Starts a server process over `filename` (on `port`, default any free one); its URL once it listens. Killed with
 * SIGKILL when the scope ends.
 */
const start = (filename: string, mode: "hang" | "answer", port?: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly process: ChildProcess }>((resume) => {
      const proc = spawn(
        process.execPath,
        [
          "--conditions=@harness/source",
          "--import",
          "tsx",
          child,
          filename,
          mode,
          ...(port === undefined ? [] : [String(port)])
        ],
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

/** A SQLite file in a fresh temporary directory, removed with the scope. */
const sessionsFile = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "harness-server-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "sessions.db")
)

/** A typed client of the server at `url`, with the `send` token. */
const sender = (url: string) => Client.make({ baseUrl: url, token: "send-secret" }).pipe(Effect.provide(httpClient))

describe("restart", () => {
  it.live(
    "a caller id accepted before a SIGKILL is the same id after it, and its message runs once",
    () =>
      Effect.gen(function*() {
        const filename = yield* sessionsFile
        const id = Ids.SessionId.make("restarted")
        const path = { id }
        const first = Ids.AgentMessageId.make("caller-1")
        const queued = Ids.AgentMessageId.make("caller-2")

        const before = yield* start(filename, "hang")
        const client1 = yield* sender(before.url)
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
        const client2 = yield* sender(after.url)
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

  it.live(
    "SSE resume with Last-Event-ID after a SIGKILL of the server: every durable event once, in seq order, no gap (R194)",
    () =>
      Effect.gen(function*() {
        const filename = yield* sessionsFile
        const id = Ids.SessionId.make("followed")
        const path = { id }

        const before = yield* start(filename, "hang")
        const port = Number(new URL(before.url).port)
        const client1 = yield* sender(before.url)
        yield* client1.sessions.create({ payload: { id } })
        yield* client1.agent.followup({ path, payload: { message: Message.make("one") } })

        // One follower for the whole test, from the start of the log, across the kill.
        const frames = yield* Queue.unbounded<Client.StreamEvent>()
        yield* Client.follow({ baseUrl: before.url, token: "read-secret", session: id }).pipe(
          Stream.runForEach((frame) => Queue.offer(frames, frame)),
          Effect.provide(httpClient),
          Effect.forkScoped
        )
        const seen: Array<Client.StreamEvent> = []
        const takeUntil = (done: (frame: Client.StreamEvent) => boolean) =>
          Effect.gen(function*() {
            while (true) {
              const frame = yield* Queue.take(frames)
              seen.push(frame)
              if (done(frame)) return
            }
          })
        yield* takeUntil((f) => f._tag === "Durable" && f.event.type === "assistant/chunk")
        yield* client1.agent.followup({ path, payload: { message: Message.make("two") } })
        yield* takeUntil((f) => f._tag === "Live" && f.event.type === "agent/inbox/enqueue")
        yield* kill(before.process)

        // The same address again: the follower reconnects on its own, with the last seq it received.
        const after = yield* start(filename, "answer", port)
        assert.strictEqual(after.url, before.url)
        yield* takeUntil((f) => f._tag === "Durable" && f.event.type === "turn/end" && f.event.data.turn === 2)

        const durable = seen.flatMap((f) => f._tag === "Durable" ? [f.event] : [])
        assert.deepStrictEqual(durable.map((e) => e.seq), durable.map((_, i) => i))
        assert.deepStrictEqual(LogCheck.checkLog(durable), [])
        const readies = seen.flatMap((f) => f._tag === "Ready" ? [f.after] : [])
        assert.strictEqual(readies.length, 2)
        assert.deepStrictEqual(readies[0], -1)
        // The second connection resumed after the last seq the first one delivered.
        const lastBefore = seen.slice(0, seen.findIndex((f, i) => i > 0 && f._tag === "Ready"))
          .flatMap((f) => f._tag === "Durable" ? [f.event.seq] : []).at(-1)
        assert.strictEqual(readies[1], lastBefore)
        // And what it saw is the log as the restarted server has it.
        const fresh = yield* durableUntil(after.url, id, (events) => events.length >= durable.length)
        assert.deepStrictEqual(fresh, durable)
        const ends = durable.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : [])
        assert.deepStrictEqual(ends, ["interrupted", "completed"])
      }).pipe(Effect.scoped),
    240_000
  )
})
