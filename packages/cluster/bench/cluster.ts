/**
 * `npm run bench -w @harness/cluster [-- options]`: what running agents on the cluster costs,
 * printed as one Markdown table with the machine's load beside it. Not a test: nothing here gates CI.
 *
 * - msgs/s to one agent, and spread over many agents, with persisted messages through `SingleRunner` on SQLite and on
 *   PostgreSQL, beside the same sends to local agents over the same store (the in-process rate). A message is a
 *   `followup` answered by an instant model: the figure counts from the first send to the last turn's end.
 * - activation time against log length: a stored session of N events, the first `status` on a runner that has not
 *   activated it (the log replayed, then a snapshot saved), then again on a fresh runner (from the snapshot).
 * - heap per active entity (activated by `status`) and per passivated one (after the idle reaper), SQLite, beside a
 *   local agent's heap; run under `--expose-gc` (the npm script does).
 * - failover time: `test/Failover.test.ts` run with `HARNESS_CLUSTER_KILLS` kills, its printed figures summarised.
 *
 * Options: `--messages N` (one agent, 300), `--agents N` (1000), `--spread N` (messages over the agents, 2000),
 * `--logs 1000,100000`, `--heap N` (entities, 1000), `--kills N` (0 skips the failover run, 2), `--backends
 * sqlite,pg`, `--parts throughput,activation,heap`, `--poll 200 millis` (the runner's message poll interval).
 */
import { Sharding, SingleRunner } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Agent } from "@harness/agent"
import { Content, Ids, Message, MessageSource, type SessionEvent } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { PostgresStore } from "@harness/store-postgres"
import { startServer } from "@harness/store-postgres/test/server"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Context, Duration, Effect, Layer, Redacted, Schedule } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { AgentEntity, RemoteAgent } from "../src/index.js"

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url))

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "300" },
    agents: { type: "string", default: "1000" },
    spread: { type: "string", default: "2000" },
    logs: { type: "string", default: "1000,100000" },
    heap: { type: "string", default: "1000" },
    kills: { type: "string", default: "2" },
    backends: { type: "string", default: "sqlite,pg" },
    parts: { type: "string", default: "throughput,activation,heap" },
    poll: { type: "string", default: "200 millis" }
  }
})
const sizes = {
  messages: Number(values.messages),
  agents: Number(values.agents),
  spread: Number(values.spread),
  logs: values.logs.split(",").map(Number),
  heap: Number(values.heap),
  kills: Number(values.kills)
}
const backends = values.backends.split(",") as ReadonlyArray<"sqlite" | "pg">
const parts = new Set(values.parts.split(","))

const rows: Array<readonly [string, string, string]> = []
const row = (what: string, backend: string, figure: string) => {
  rows.push([what, backend, figure])
  console.error(`${what} | ${backend} | ${figure}`)
}

const sessionId = (name: string) => Ids.SessionId.make(name)
const millisSince = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6
const rate = (n: number, millis: number) =>
  `${(n / (millis / 1000)).toFixed(0)} msgs/s (${n} in ${millis.toFixed(0)} ms)`
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

/** An instant model for `n` turns (each answered `ok` at once), with room to spare. */
const model = (n: number) => S.layer(Array.from({ length: n + 16 }, () => S.textResponse("ok")))

/** The stores of one backend: the cluster's SQL client and the session store, fresh for this run. */
interface Backend {
  readonly name: string
  readonly sql: Layer.Layer<SqlClient.SqlClient>
  readonly store: Layer.Layer<SessionStore.SessionStore>
}

/** The runner in this process: the entity on `SingleRunner` over the backend, with an instant model for `turns`. */
const runner = (backend: Backend, turns: number, maxIdleTime?: Duration.DurationInput) =>
  AgentEntity.layer(maxIdleTime === undefined ? {} : { maxIdleTime }).pipe(
    Layer.provideMerge(SingleRunner.layer({
      runnerStorage: "memory",
      shardingConfig: {
        entityMessagePollInterval: Duration.decode(values.poll as Duration.DurationInput),
        entityReplyPollInterval: "20 millis"
      }
    })),
    Layer.provide(backend.sql),
    Layer.provideMerge(backend.store),
    Layer.provideMerge(model(turns)),
    Layer.orDie
  )

/** Runs `body` with a context built from `layer`, closed afterwards. */
const within = <ROut, A, E>(layer: Layer.Layer<ROut>, body: (context: Context.Context<ROut>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(Layer.build(layer), body))

/** `n` follow-ups to each of `ids` (round robin, `concurrency` in flight), timed until every agent is idle. */
const sendAll = (
  agents: ReadonlyArray<{
    readonly followup: (message: ReturnType<typeof Message.make>) => Effect.Effect<unknown, unknown>
    readonly whenIdle: Effect.Effect<void, unknown>
  }>,
  n: number,
  concurrency: number
) =>
  Effect.gen(function*() {
    const start = process.hrtime.bigint()
    yield* Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => agents[i % agents.length]!.followup(Message.make(`message ${i}`)),
      { concurrency, discard: true }
    )
    yield* Effect.forEach(agents, (agent) => agent.whenIdle, { concurrency: 64, discard: true })
    return millisSince(start)
  })

const throughput = (backend: Backend) =>
  Effect.gen(function*() {
    const ids = Array.from({ length: sizes.agents }, (_, i) => sessionId(`spread-${i}`))
    const turns = sizes.messages + sizes.spread + 2
    // Through the cluster: persisted sends, one agent then many.
    yield* within(runner(backend, turns), (context) =>
      Effect.gen(function*() {
        const one = yield* Effect.provide(RemoteAgent.make(sessionId("one")), context)
        yield* one.followup(Message.make("warm up"))
        yield* one.whenIdle
        row(
          "msgs/s, one agent",
          `${backend.name}, cluster`,
          rate(sizes.messages, yield* sendAll([one], sizes.messages, 1))
        )
        const many = yield* Effect.forEach(ids, (id) => Effect.provide(RemoteAgent.make(id), context))
        row(
          `msgs/s, ${sizes.agents} agents`,
          `${backend.name}, cluster`,
          rate(sizes.spread, yield* sendAll(many, sizes.spread, 64))
        )
      }))
    // In process: local agents over the same kind of store.
    const local = Layer.merge(backend.store, model(turns))
    yield* within(local, (context) =>
      Effect.gen(function*() {
        const agentOf = (id: Ids.SessionId) =>
          Effect.gen(function*() {
            const log = yield* Effect.acquireRelease(SessionLog.make({ id }), (log) => Effect.ignore(log.close))
            return yield* Agent.make({ session: log })
          }).pipe(Effect.provide(context))
        const one = yield* agentOf(sessionId("local-one"))
        row(
          "msgs/s, one agent",
          `${backend.name}, in process`,
          rate(sizes.messages, yield* sendAll([one], sizes.messages, 1))
        )
        const many = yield* Effect.forEach(ids, (id) => agentOf(sessionId(`local-${id}`)))
        row(
          `msgs/s, ${sizes.agents} agents`,
          `${backend.name}, in process`,
          rate(sizes.spread, yield* sendAll(many, sizes.spread, 64))
        )
      }).pipe(Effect.scoped))
  })

/** Turn `turn` of a synthetic log (7 events, as the agent writes a one-step text turn), numbered from `seq`. */
const turnEvents = (turn: number, seq: number): ReadonlyArray<SessionEvent.SessionEvent> => {
  const provenance = { model: "bench", provider: "bench" }
  const inputs: ReadonlyArray<SessionEvent.SessionEventInput> = [
    {
      type: "user/message",
      data: {
        messageId: Ids.AgentMessageId.make(`prompt-${turn}`),
        content: [Content.text(`question ${turn}`)],
        source: MessageSource.user
      }
    },
    { type: "turn/start", data: { turn, trigger: { kind: "message", source: MessageSource.user } } },
    { type: "request/header", data: { header: { config: provenance }, reason: "initial" } },
    { type: "step/start", data: { turn, step: 1 } },
    {
      type: "assistant/message",
      data: {
        turn,
        step: 1,
        content: [Content.text(`answer ${turn}`)],
        provenance,
        finishReason: "stop",
        usage: { inputTokens: 100, outputTokens: 10 }
      }
    },
    { type: "step/end", data: { turn, step: 1 } },
    { type: "turn/end", data: { turn, reason: { kind: "completed" } } }
  ]
  // Adding seq and time to an input gives the event of its type; TypeScript cannot follow the union.
  return inputs.map((input, i) =>
    ({ ...input, seq: seq + i, time: 1_700_000_000_000 + seq + i }) as SessionEvent.SessionEvent
  )
}

/** A stored session of about `events` events, written straight to the store (a commit per 100 turns). */
const writeLog = (store: SessionStore.Service, id: Ids.SessionId, events: number) =>
  Effect.gen(function*() {
    yield* store.create({ id, version: 1, createdAt: 0 })
    const turns = Math.ceil(events / 7)
    for (let from = 1; from <= turns; from += 100) {
      const batch = Array.from({ length: Math.min(100, turns - from + 1) }, (_, i) => from + i)
        .flatMap((turn) => turnEvents(turn, (turn - 1) * 7))
      yield* store.append(id, { events: batch, inbox: [] })
    }
    return turns * 7
  })

const activation = (backend: Backend) =>
  Effect.gen(function*() {
    for (const length of sizes.logs) {
      const id = sessionId(`log-${length}`)
      const written = yield* within(backend.store, (context) =>
        writeLog(Context.get(context, SessionStore.SessionStore), id, length))
      for (const attempt of ["first (replay)", "again (snapshot)"]) {
        yield* within(runner(backend, 4), (context) =>
          Effect.gen(function*() {
            const warm = yield* Effect.provide(RemoteAgent.make(sessionId(`warm-${length}-${attempt}`)), context)
            yield* warm.status
            const agent = yield* Effect.provide(RemoteAgent.make(id), context)
            const start = process.hrtime.bigint()
            yield* agent.status
            row(`activation, ${written} events, ${attempt}`, backend.name, `${millisSince(start).toFixed(0)} ms`)
          }))
      }
    }
  })

const heapNow = () => {
  globalThis.gc?.()
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

const heap = (backend: Backend) =>
  Effect.gen(function*() {
    if (globalThis.gc === undefined) return row("heap", backend.name, "skipped: run with --expose-gc")
    const n = sizes.heap
    yield* within(runner(backend, 4, "2 seconds"), (context) =>
      Effect.gen(function*() {
        const warm = yield* Effect.provide(RemoteAgent.make(sessionId("heap-warm")), context)
        yield* warm.status
        const agents = yield* Effect.forEach(
          Array.from({ length: n }, (_, i) => sessionId(`heap-${i}`)),
          (id) => Effect.provide(RemoteAgent.make(id), context)
        )
        const base = heapNow()
        yield* Effect.forEach(agents, (agent) => agent.status, { concurrency: 64, discard: true })
        const active = heapNow()
        row("heap per active entity", backend.name, kb((active - base) / n))
        const sharding = Context.get(context, Sharding.Sharding)
        // Waits for the idle reaper (at most 90 s), then counts what is left: `repeat` answers its schedule's
        // output (how many times it ran), not the count.
        yield* sharding.activeEntityCount.pipe(
          Effect.repeat({ schedule: Schedule.spaced("500 millis"), until: (count) => count === 0 }),
          Effect.timeout("90 seconds"),
          Effect.ignore
        )
        const left = yield* sharding.activeEntityCount
        row(
          "heap per passivated entity",
          backend.name,
          `${kb((heapNow() - base) / n)}${left === 0 ? "" : ` (${left} of ${n} still active after 90 s)`}`
        )
      }))
    yield* within(Layer.merge(backend.store, model(4)), (context) =>
      Effect.gen(function*() {
        const base = heapNow()
        yield* Effect.forEach(Array.from({ length: n }, (_, i) => sessionId(`heap-local-${i}`)), (id) =>
          Effect.gen(function*() {
            const log = yield* Effect.acquireRelease(SessionLog.make({ id }), (log) => Effect.ignore(log.close))
            return yield* Agent.make({ session: log })
          }), { discard: true })
        row("heap per local agent (no cluster)", backend.name, kb((heapNow() - base) / n))
      }).pipe(Effect.scoped, Effect.provide(context)))
  })

/** Runs the failover test with `kills` kills and summarises the failover times it prints. */
const failover = () => {
  if (sizes.kills === 0) return
  const run = spawnSync("npx", ["vitest", "run", "--project", "cluster", "packages/cluster/test/Failover.test.ts"], {
    cwd: repoRoot,
    env: { ...process.env, HARNESS_CLUSTER_KILLS: String(sizes.kills) },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
  const line = run.stdout.split("\n").find((l) => l.startsWith("{\"kills\""))
  if (line === undefined) return row("failover", "PostgreSQL, 2 runner processes", `no figures (exit ${run.status})`)
  const printed = JSON.parse(line) as { readonly failovers: ReadonlyArray<{ readonly millis: number }> }
  const times = printed.failovers.map((f) => f.millis).sort((a, b) => a - b)
  const at = (q: number) => (times[Math.min(times.length - 1, Math.floor(q * times.length))]! / 1000).toFixed(1)
  row(
    `failover (SIGKILL → cut turn closed by the new host), ${times.length} kills`,
    "PostgreSQL, 2 runner processes",
    `min ${at(0)} s, median ${at(0.5)} s, max ${at(1)} s (test settings: 3 s lock expiry)`
  )
}

const sqliteBackend = (dir: string): Backend => ({
  name: "SQLite",
  sql: Layer.orDie(SqliteClient.layer({ filename: path.join(dir, "cluster.db") })),
  store: Layer.orDie(SqliteStore.layer({ filename: path.join(dir, "sessions.db") }))
})

const pgBackend = (url: string): Backend => ({
  name: "PostgreSQL",
  sql: Layer.orDie(PgClient.layer({ url: Redacted.make(url) })),
  store: Layer.orDie(PostgresStore.layer({ url: Redacted.make(url) }))
})

const main = async () => {
  const started = new Date().toISOString()
  const loadAtStart = os.loadavg()
  for (const kind of backends) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-cluster-bench-"))
    const server = kind === "pg" ? await startServer() : undefined
    try {
      const backend = server === undefined ? sqliteBackend(dir) : pgBackend(server.url)
      await Effect.runPromise(Effect.gen(function*() {
        if (parts.has("throughput")) yield* throughput(backend)
        if (parts.has("activation")) yield* activation(backend)
        if (parts.has("heap") && kind === "sqlite") yield* heap(backend)
      }))
    } finally {
      server?.stop()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  failover()
  const loadAtEnd = os.loadavg()
  const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(1)).join(" / ")
  console.log(
    `Cluster bench, ${started}: ${os.cpus().length} cores, Node ${process.version}; load average (1/5/15 min) ${
      load(loadAtStart)
    } at the start, ${load(loadAtEnd)} at the end.\n`
  )
  console.log("| measure | where | figure |\n|---|---|---|")
  for (const [what, where, figure] of rows) console.log(`| ${what} | ${where} | ${figure} |`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
