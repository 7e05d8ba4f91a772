/**
 * W7: load and repair of a 1,000,000-event session from SQLite and JSONL: time and peak memory. The session is
 * written first (turns of 14 realistic events, 10 000 events per store commit), ending inside a turn with a torn
 * last record, so `SessionLog.open` scans, validates and folds every event, truncates the torn tail and closes the
 * open turn durably. Each load runs in a fresh child process, so its peak RSS is the load's alone.
 *
 * Run: `npx tsx packages/store-sqlite/bench/w7.ts [events]` (default 1 000 000). Prints figures; never fails on
 * time. The original design's implementation restores a 1.3M-event session in ~263 ms (its own loader, no per-event validation).
 */
import { NodeFileSystem } from "@effect/platform-node"
import { Content, Ids, MessageSource, type SessionEvent } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteStore } from "../src/index.js"

const id = Ids.SessionId.make("w7")

const turnInputs = (turn: number): ReadonlyArray<SessionEvent.SessionEventInput> => {
  const callId = Ids.ToolCallId.make(`call_${turn}`)
  const text = (t: string) => Content.text(t)
  return [
    {
      type: "user/message",
      data: {
        messageId: Ids.AgentMessageId.make(`prompt-${turn}`),
        content: [text(`Please look at src/module${turn}.ts and tell me what it does.`)],
        source: MessageSource.user
      }
    },
    { type: "turn/start", data: { turn, trigger: { kind: "message", source: MessageSource.user } } },
    {
      type: "request/header",
      data: { header: { config: { model: "deepseek-chat", provider: "deepseek" } }, reason: "initial" }
    },
    { type: "step/start", data: { turn, step: 1 } },
    { type: "assistant/chunk", data: { turn, step: 1, chunk: { type: "text-delta", id: "0", delta: "Reading." } } },
    {
      type: "assistant/message",
      data: {
        turn,
        step: 1,
        content: [text("Reading."), { type: "tool-call", id: callId, name: "read", arguments: "{\"path\":\"a.ts\"}" }],
        provenance: { model: "deepseek-chat", provider: "deepseek" }
      }
    },
    { type: "tool/call", data: { turn, step: 1, callId, name: "read", arguments: "{\"path\":\"a.ts\"}" } },
    {
      type: "tool/result",
      data: { turn, step: 1, callId, name: "read", content: [text("export const f = 1")], isError: false }
    },
    { type: "step/end", data: { turn, step: 1 } },
    { type: "step/start", data: { turn, step: 2 } },
    {
      type: "assistant/chunk",
      data: { turn, step: 2, chunk: { type: "text-delta", id: "1", delta: "It exports f." } }
    },
    {
      type: "assistant/message",
      data: { turn, step: 2, content: [text("It exports f.")], provenance: { model: "deepseek-chat" } }
    },
    { type: "step/end", data: { turn, step: 2 } },
    { type: "turn/end", data: { turn, reason: { kind: "completed" } } }
  ]
}

/** `total` events: whole turns, the last one cut after its tool call (open, one call owed). */
function* generate(total: number): Generator<SessionEvent.SessionEvent> {
  let seq = 0
  for (let turn = 1; seq < total; turn++) {
    for (const input of turnInputs(turn)) {
      if (seq === total) return
      // Adding seq and time to an input gives the event of its type; TypeScript cannot follow the union.
      yield { ...input, seq, time: 1_700_000_000_000 + seq } as SessionEvent.SessionEvent
      seq++
    }
  }
}

const writeSession = (store: SessionStore.Service, total: number) =>
  Effect.gen(function*() {
    yield* store.create({ id, version: 1, createdAt: 0 })
    let batch: Array<SessionEvent.SessionEvent> = []
    for (const event of generate(total)) {
      batch.push(event)
      if (batch.length === 10_000) {
        yield* store.append(id, { events: batch, inbox: [] })
        batch = []
      }
    }
    if (batch.length > 0) yield* store.append(id, { events: batch, inbox: [] })
  })

type Backend = "sqlite" | "jsonl"

const layerOf = (backend: Backend, dir: string): Layer.Layer<SessionStore.SessionStore, unknown> =>
  backend === "sqlite"
    ? SqliteStore.layer({ filename: path.join(dir, "w7.db") })
    : JsonlStore.layer({ directory: path.join(dir, "jsonl") }).pipe(Layer.provide(NodeFileSystem.layer))

const withStore = <A, E>(backend: Backend, dir: string, f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(layerOf(backend, dir)), (context) => f(Context.get(context, SessionStore.SessionStore)))
  )

/** The child: one timed load and repair. */
const load = (backend: Backend, dir: string) =>
  withStore(backend, dir, (store) =>
    Effect.gen(function*() {
      const start = performance.now()
      const log = yield* SessionLog.open(id).pipe(Effect.provideService(SessionStore.SessionStore, store))
      const ms = performance.now() - start
      const events = (yield* log.events).length
      const state = yield* log.state
      return {
        ms,
        events,
        open: state.openTurn !== undefined,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
        heapMb: process.memoryUsage().heapUsed / 2 ** 20
      }
    }))

const runChild = (backend: Backend, dir: string): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ["load", backend, dir], {
      stdio: ["ignore", "pipe", "inherit", "ipc"]
    })
    let out = ""
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}`))))
  })

const main = async () => {
  if (process.argv[2] === "load") {
    const result = await Effect.runPromise(load(process.argv[3] as Backend, process.argv[4]!))
    process.stdout.write(JSON.stringify(result))
    return
  }
  const total = Number(process.argv[2] ?? 1_000_000)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-w7-"))
  try {
    console.log(`W7: load + repair of a ${total}-event session (${os.cpus().length} cores, ${os.platform()})`)
    console.log("store | write s | file MB | load+repair ms | events after | peak RSS MB | heap MB")
    for (const backend of ["sqlite", "jsonl"] as const) {
      const start = performance.now()
      await Effect.runPromise(withStore(backend, dir, (store) => writeSession(store, total)))
      const writeSeconds = (performance.now() - start) / 1000
      // a torn last record, as a crash mid-write leaves it
      let bytes: number
      if (backend === "sqlite") {
        const db = new Database(path.join(dir, "w7.db"))
        db.prepare("UPDATE records SET text = substr(text, 1, 30) WHERE position = ?").run(total - 1)
        db.pragma("wal_checkpoint(TRUNCATE)")
        db.close()
        bytes = fs.statSync(path.join(dir, "w7.db")).size
      } else {
        const file = path.join(dir, "jsonl", "w7.jsonl")
        fs.appendFileSync(file, "{\"seq\":999999999,\"time\":1,\"type\":\"assistant/ch")
        bytes = fs.statSync(file).size
      }
      const r = (await runChild(backend, dir)) as {
        ms: number
        events: number
        open: boolean
        maxRssMb: number
        heapMb: number
      }
      console.log(
        `${backend} | ${writeSeconds.toFixed(1)} | ${(bytes / 2 ** 20).toFixed(0)} | ${Math.round(r.ms)} | ${r.events}${
          r.open ? " (open!)" : ""
        } | ${Math.round(r.maxRssMb)} | ${Math.round(r.heapMb)}`
      )
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
