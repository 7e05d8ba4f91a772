/**
 * W6: append throughput and bytes per event of the durable stores, with the barriers. Each append is one commit
 * of the events of one realistic turn (14 events: prompt, turn/start, request/header, two steps with chunks, a
 * tool call and its result, assistant messages, step and turn ends), appended with `sync: true` (a durability
 * barrier at every `turn/end`). The physical limit is raw `better-sqlite3`: the same rows in the same table, one
 * transaction per turn, WAL with `synchronous = FULL`. Target: SQLite store ≥ 0.5× raw. The turn and the raw writer
 * are `turns.ts`'s, shared with the bench package's W6 (figures from before December 2026 wrote a longer turn: a
 * system prompt and a four-times-longer tool result, so more bytes per event).
 *
 * The `SessionLog` rows run the agent's write path instead: one `append` per event (the log's validation, rules,
 * history fold and publication included), group-committed by the write-behind writer, with `flush` (synced) at
 * every `turn/end` — the barrier the agent uses (ADR 0008).
 *
 * The whole set runs once untimed (so that what is timed is the steady state, not the JIT compiling each write
 * path), then {@link repetitions} times, interleaved; each figure is the median of its runs.
 *
 * Run: `npx tsx packages/store-sqlite/bench/w6.ts [turns] [repetitions]` (default 1000 and 3). Starts its own
 * PostgreSQL server (see `@harness/store-postgres/test/server`). Prints figures; never fails on time.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { Ids } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import { PostgresStore } from "@harness/store-postgres"
import { startServer } from "@harness/store-postgres/test/server"
import Database from "better-sqlite3"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"
import { eventsPerTurn, rawDatabase, turnEvents } from "./turns.js"

const turns = Number(process.argv[2] ?? 1_000)
/** Runs of the whole set; each figure is the median of its runs. */
const repetitions = Number(process.argv[3] ?? 3)

const commits: ReadonlyArray<SessionStore.Commit> = Array.from({ length: turns }, (_, i) => ({
  events: turnEvents(i + 1, i * eventsPerTurn),
  inbox: []
}))
const totalEvents = turns * eventsPerTurn

interface Figures {
  readonly name: string
  readonly seconds: number
  readonly bytes: number
}

const sizeOfDir = (dir: string): number =>
  fs.readdirSync(dir).reduce((n, name) => n + fs.statSync(path.join(dir, name)).size, 0)

/** The repetition being run: in session ids, so that runs on one PostgreSQL server do not collide. */
let run = 0

/**
 * The figures of run `name` on a store built from `layer` (closed afterwards): `prepare` readies session `id` and
 * returns its writes; only the writes are timed.
 */
const measure = (
  name: string,
  layer: Layer.Layer<SessionStore.SessionStore, unknown>,
  bytes: () => number,
  id: Ids.SessionId,
  prepare: (store: SessionStore.Service) => Effect.Effect<Effect.Effect<void, unknown>, unknown, Scope.Scope>
) =>
  Effect.scoped(Effect.gen(function*() {
    const store = Context.get(yield* Layer.build(layer), SessionStore.SessionStore)
    const writes = yield* prepare(store)
    const start = performance.now()
    yield* writes
    const seconds = (performance.now() - start) / 1_000
    const summary = (yield* store.list).find((s) => s.header.id === id)!
    return { name, seconds, bytes: bytes() || summary.bytes } satisfies Figures
  }))

/** The store alone: one append per turn, under the session's writer lease. */
const runStore = (
  name: string,
  layer: Layer.Layer<SessionStore.SessionStore, unknown>,
  sync: boolean,
  bytes: () => number
) => {
  const id = Ids.SessionId.make(`w6 ${name} ${run}`)
  return measure(name, layer, bytes, id, (store) =>
    Effect.gen(function*() {
      yield* store.create({ id, version: 1, createdAt: 0 })
      // Under the session's writer lease, as every writer appends since ADR 0044 (taken once, like a log's open).
      const lease = yield* store.lease(id)
      return Effect.forEach(commits, (commit) => store.append(id, commit, { sync, lease }), { discard: true })
    }))
}

/** The agent's write path: one append per event through a write-behind `SessionLog`, `flush` at each turn/end. */
const runLog = (name: string, layer: Layer.Layer<SessionStore.SessionStore, unknown>, bytes: () => number) => {
  const id = Ids.SessionId.make(`w6 log ${name} ${run}`)
  return measure(name, layer, bytes, id, (store) =>
    Effect.map(
      SessionLog.make({ id }).pipe(Effect.provideService(SessionStore.SessionStore, store)),
      (log) =>
        Effect.gen(function*() {
          for (const commit of commits) {
            for (const { seq: _seq, time: _time, ...input } of commit.events) yield* log.append(input)
            yield* log.flush
          }
        })
    ))
}

/** The size of the SQLite file `file` once its write-ahead log is checkpointed into it. */
const sqliteBytes = (file: string) => () => {
  const db = new Database(file)
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
  return fs.statSync(file).size
}

const raw = (dir: string, synchronous: "FULL" | "NORMAL"): Figures => {
  const file = path.join(dir, `raw-${synchronous}.db`)
  const { commit, db } = rawDatabase(file, synchronous)
  const start = performance.now()
  // the same work the store does per commit: encode the records, then one transaction
  for (const [i, turn] of commits.entries()) commit(SessionStore.encodeCommit(turn, 0), i * eventsPerTurn)
  const seconds = (performance.now() - start) / 1_000
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
  return { name: `raw better-sqlite3 (synchronous ${synchronous})`, seconds, bytes: fs.statSync(file).size }
}

/** One run of every writer, in a directory of its own. */
const once = (dir: string, server: { readonly url: string }) =>
  Effect.gen(function*() {
    const figures: Array<Figures> = []
    figures.push(raw(dir, "FULL"))
    figures.push(raw(dir, "NORMAL"))
    for (const sync of [true, false]) {
      const file = path.join(dir, `store-${sync}.db`)
      figures.push(
        yield* runStore(
          `SqliteStore (sync ${sync ? "every turn" : "never"})`,
          SqliteStore.layer({ filename: file }),
          sync,
          sqliteBytes(file)
        )
      )
      const jsonlDir = path.join(dir, `jsonl-${sync}`)
      figures.push(
        yield* runStore(
          `JsonlStore (sync ${sync ? "every turn" : "never"})`,
          JsonlStore.layer({ directory: jsonlDir }).pipe(Layer.provide(NodeFileSystem.layer)),
          sync,
          () => sizeOfDir(jsonlDir)
        )
      )
      figures.push(
        yield* runStore(
          `PostgresStore (sync ${sync ? "every turn" : "never"})`,
          PostgresStore.layer({ url: Redacted.make(server.url) }),
          sync,
          () => 0
        )
      )
    }
    const logFile = path.join(dir, "log.db")
    figures.push(
      yield* runLog(
        "SessionLog on SQLite (append per event, flush per turn)",
        SqliteStore.layer({ filename: logFile }),
        sqliteBytes(logFile)
      )
    )
    const logJsonl = path.join(dir, "log-jsonl")
    figures.push(
      yield* runLog(
        "SessionLog on JSONL (append per event, flush per turn)",
        JsonlStore.layer({ directory: logJsonl }).pipe(Layer.provide(NodeFileSystem.layer)),
        () => sizeOfDir(logJsonl)
      )
    )
    figures.push(
      yield* runLog(
        "SessionLog on PostgreSQL (append per event, flush per turn)",
        PostgresStore.layer({ url: Redacted.make(server.url) }),
        () => 0
      )
    )
    return figures
  })

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const main = Effect.gen(function*() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-w6-"))
  const server = yield* Effect.promise(() => startServer())
  try {
    const runs: Array<ReadonlyArray<Figures>> = []
    // run 0 warms up and is not counted
    for (run = 0; run <= repetitions; run++) {
      const runDir = path.join(dir, `run-${run}`)
      fs.mkdirSync(runDir)
      const figures = yield* once(runDir, server)
      if (run > 0) runs.push(figures)
    }
    const figures = runs[0]!.map((f, i): Figures => ({
      name: f.name,
      seconds: median(runs.map((r) => r[i]!.seconds)),
      bytes: f.bytes
    }))
    const rawFull = figures[0]!
    console.log(
      `W6: ${turns} turns × ${eventsPerTurn} events, one commit per turn; medians of ${repetitions} runs after one untimed (${os.cpus().length} cores, ${os.platform()})`
    )
    console.log("store | events/s | µs/turn | bytes/event | × raw (FULL)")
    for (const f of figures) {
      const rate = totalEvents / f.seconds
      console.log(
        `${f.name} | ${Math.round(rate)} | ${Math.round((f.seconds * 1e6) / turns)} | ${
          Math.round(f.bytes / totalEvents)
        } | ${(rawFull.seconds / f.seconds).toFixed(2)}`
      )
    }
    console.log(
      "bytes/event: SQLite = database file after a checkpoint; JSONL = files; PostgreSQL = the summary's record bytes (text only)"
    )
  } finally {
    server.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

Effect.runPromise(main).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
