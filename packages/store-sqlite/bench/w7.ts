/**
 * W7: activation of a long session from SQLite and JSONL: load + repair time and peak memory against log length
 * (ADR 0022). For each size the session is written first (turns of 14 realistic events, 10 000 events per store
 * commit), ending inside a turn with a torn last record. Then, each in a fresh child process (so its peak RSS is the
 * load's alone):
 * 1. **first open** (no snapshot yet): `SessionLog.open` replays every event, truncates the torn tail, closes the
 *    open turn durably, and — having replayed more than `snapshotEvery` events — saves a snapshot where the log ends;
 * 2. the session then goes on: a new turn is appended through the log and cut by a crash (a torn last record again);
 * 3. **activation from the snapshot**: `open` decodes the snapshot's head, checks it against the stored record it
 *    names, replays the records after it, truncates the torn tail and closes the open turn; then the first
 *    `history` read (which decodes the snapshot's history, once) is timed apart.
 *
 * Run: `npx tsx packages/store-sqlite/bench/w7.ts [events…] [--only=sqlite|jsonl]` (default 1 000 000, both). Prints figures; never fails on
 * time. The original design's implementation restores a 1.3M-event session in ~263 ms.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { Content, Ids, MessageSource, type SessionEvent } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import Database from "better-sqlite3"
import { Context, Effect, Layer, Option } from "effect"
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

interface LoadResult {
  readonly ms: number
  /** CPU time of the process over the same span (user + system): what the load costs on a machine others share. */
  readonly cpuMs: number
  readonly historyMs: number
  readonly historyCpuMs: number
  readonly events: number
  readonly messages: number
  readonly open: boolean
  readonly snapshot: boolean
  readonly maxRssMb: number
  readonly heapMb: number
}

/**
 * The child: one timed load and repair, then the first history read. Whether a snapshot is there is asked of another
 * store instance first, so the timed one starts cold (a JSONL store's first use of a session scans its file).
 */
const load = (backend: Backend, dir: string) =>
  Effect.flatMap(
    withStore(backend, dir, (store) => Effect.map(store.loadSnapshot(id), Option.isSome)),
    (hadSnapshot) => timedLoad(backend, dir, hadSnapshot)
  )

const timedLoad = (backend: Backend, dir: string, hadSnapshot: boolean) =>
  withStore(backend, dir, (store) =>
    Effect.gen(function*() {
      const cpu = () => {
        const { system, user } = process.cpuUsage()
        return (user + system) / 1000
      }
      const start = performance.now()
      const cpuStart = cpu()
      const log = yield* SessionLog.open(id).pipe(Effect.provideService(SessionStore.SessionStore, store))
      const ms = performance.now() - start
      const cpuMs = cpu() - cpuStart
      const historyStart = performance.now()
      const historyCpuStart = cpu()
      const history = yield* log.history
      const historyMs = performance.now() - historyStart
      const historyCpuMs = cpu() - historyCpuStart
      const state = yield* log.state
      return {
        ms,
        cpuMs,
        historyMs,
        historyCpuMs,
        events: state.nextSeq,
        messages: history.length,
        open: state.openTurn !== undefined,
        snapshot: hadSnapshot,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
        heapMb: process.memoryUsage().heapUsed / 2 ** 20
      } satisfies LoadResult
    }))

/** The session goes on after its first activation: one more turn through the log, cut by a crash. */
const continueSession = (backend: Backend, dir: string) =>
  withStore(backend, dir, (store) =>
    Effect.gen(function*() {
      const log = yield* SessionLog.open(id).pipe(Effect.provideService(SessionStore.SessionStore, store))
      const turn = (yield* log.state).lastTurn + 1
      // up to and including the tool call: the crash comes while the tool runs
      yield* log.appendAll(turnInputs(turn).slice(0, 7))
      yield* log.flush
    }))

const tear = (backend: Backend, dir: string) => {
  if (backend === "sqlite") {
    const db = new Database(path.join(dir, "w7.db"))
    db.prepare("UPDATE records SET text = substr(text, 1, 30) WHERE position = (SELECT max(position) FROM records)")
      .run()
    db.pragma("wal_checkpoint(TRUNCATE)")
    db.close()
    return fs.statSync(path.join(dir, "w7.db")).size
  }
  const file = path.join(dir, "jsonl", "w7.jsonl")
  fs.appendFileSync(file, "{\"seq\":999999999,\"time\":1,\"type\":\"assistant/ch")
  return fs.statSync(file).size
}

const runChild = (args: ReadonlyArray<string>): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [...args], {
      stdio: ["ignore", "pipe", "inherit", "ipc"]
    })
    let out = ""
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
    child.on(
      "exit",
      (
        code
      ) => (code === 0 ? resolve(out === "" ? undefined : JSON.parse(out)) : reject(new Error(`child exited ${code}`)))
    )
  })

const row = (backend: Backend, what: string, total: number, mb: number, r: LoadResult) =>
  console.log(
    `${backend} | ${total} | ${what} | ${mb.toFixed(0)} | ${Math.round(r.ms)} (${Math.round(r.cpuMs)}) | ${
      Math.round(r.historyMs)
    } (${Math.round(r.historyCpuMs)}) | ${r.events} (${r.messages} messages)${r.open ? " (open!)" : ""} | ${
      Math.round(r.maxRssMb)
    } | ${Math.round(r.heapMb)}`
  )

const main = async () => {
  if (process.argv[2] === "load") {
    const result = await Effect.runPromise(load(process.argv[3] as Backend, process.argv[4]!))
    process.stdout.write(JSON.stringify(result))
    return
  }
  if (process.argv[2] === "continue") {
    await Effect.runPromise(continueSession(process.argv[3] as Backend, process.argv[4]!))
    return
  }
  const args = process.argv.slice(2)
  const only = args.find((a) => a.startsWith("--only="))?.slice("--only=".length)
  const backends = (["sqlite", "jsonl"] as const).filter((b) => only === undefined || only === b)
  const numbers = args.filter((a) => !a.startsWith("--")).map(Number)
  const sizes = numbers.length > 0 ? numbers : [1_000_000]
  console.log(
    `W7: activation of a long session (${os.cpus().length} cores, ${os.platform()}, load ${
      os.loadavg()[0]!.toFixed(1)
    })`
  )
  console.log(
    "store | events | open | file MB | load+repair ms (CPU) | first history ms (CPU) | events after | peak RSS MB | heap MB"
  )
  for (const total of sizes) {
    for (const backend of backends) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-w7-"))
      try {
        await Effect.runPromise(withStore(backend, dir, (store) => writeSession(store, total)))
        const first = (await runChild(["load", backend, dir, tear(backend, dir).toString()])) as LoadResult
        row(backend, "first (replay)", total, fs.statSync(dbOrFile(backend, dir)).size / 2 ** 20, first)
        await runChild(["continue", backend, dir])
        const mb = tear(backend, dir) / 2 ** 20
        const second = (await runChild(["load", backend, dir])) as LoadResult
        row(backend, second.snapshot ? "from snapshot" : "replay (no snapshot!)", total, mb, second)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  console.log(`load after: ${os.loadavg()[0]!.toFixed(1)}`)
}

const dbOrFile = (backend: Backend, dir: string) =>
  backend === "sqlite" ? path.join(dir, "w7.db") : path.join(dir, "jsonl", "w7.jsonl")

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
