/**
 * Harness's durable store under W6 and W7 (`Runtime.StoreBench`), on SQLite (`@harness/store-sqlite`).
 *
 * W6 writes the same turns four ways, each into a file of its own: through a `SessionLog` as the agent commits them
 * (one `transaction` per section the agent commits, `appendTrusted` inside, the durability barrier `flush` at
 * `turn/end`: validation, rules, fold, group commit), through the store alone (one synced `append` per turn), and
 * through raw better-sqlite3 (the store's rows in one transaction per turn, WAL, `synchronous` NORMAL or FULL).
 * W7 writes a long session, lets `open` replay it once (which saves the snapshot), then times what a user waits
 * for when resuming it: `open` from the snapshot, building the agent, and the model's first request.
 */
import { Ids, type SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { rawDatabase, turnEvents, turnSections } from "@harness/store-sqlite/bench/turns"
import Database from "better-sqlite3"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as path from "node:path"
import { cpuUs, nowUs } from "../Measure.js"
import type { Resumed, Script, StoreBench, Writer, WriteRun } from "../Runtime.js"
import { storeTurnEvents } from "../Runtime.js"

const sessionId = Ids.SessionId.make("bench-store")

const storeOf = (filename: string) => SqliteStore.layer({ filename })

/** Runs `f` with a fresh store on `filename`, closed afterwards. */
const withStore = <A, E>(filename: string, f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(storeOf(filename)), (context) => f(Context.get(context, SessionStore.SessionStore)))
  )

/** Times `body` (which writes `turns` turns), wall and CPU, per turn. */
const timed = <E>(turns: number, body: Effect.Effect<void, E>) =>
  Effect.gen(function*() {
    const wall = nowUs()
    const cpu = cpuUs()
    yield* body
    return { usPerTurn: (nowUs() - wall) / turns, cpuUsPerTurn: (cpuUs() - cpu) / turns }
  })

/** The agent's write path: one transaction per section, `appendTrusted` inside, `flush` at each `turn/end`. */
const writeLog = (filename: string, turns: number) =>
  withStore(filename, (store) =>
    Effect.gen(function*() {
      const log = yield* SessionLog.make({ id: sessionId }).pipe(
        Effect.provideService(SessionStore.SessionStore, store)
      )
      const figures = yield* timed(
        turns,
        Effect.gen(function*() {
          for (let turn = 1; turn <= turns; turn++) {
            for (const section of turnSections(turn)) yield* log.transaction((tx) => tx.appendTrusted(section))
            yield* log.flush
          }
        })
      )
      yield* log.close
      return figures
    }))

/** The store alone: one synced commit of the turn's events per turn, under the writer's lease. */
const writeStore = (filename: string, turns: number) =>
  withStore(filename, (store) =>
    Effect.gen(function*() {
      yield* store.create({ id: sessionId, version: 1, createdAt: 0 })
      const lease = yield* store.lease(sessionId)
      return yield* timed(
        turns,
        Effect.gen(function*() {
          for (let turn = 1; turn <= turns; turn++) {
            const events = turnEvents(turn, (turn - 1) * storeTurnEvents)
            yield* store.append(sessionId, { events, inbox: [] }, { sync: true, lease })
          }
        })
      )
    }))

/** Raw better-sqlite3: the store's encoded records in one transaction per turn. */
const writeRaw = (filename: string, turns: number, synchronous: "NORMAL" | "FULL") => {
  const { commit, db } = rawDatabase(filename, synchronous)
  const wall = nowUs()
  const cpu = cpuUs()
  // the same work the store does per commit: encode the records, then one transaction
  for (let turn = 1; turn <= turns; turn++) {
    const base = (turn - 1) * storeTurnEvents
    commit(SessionStore.encodeCommit({ events: turnEvents(turn, base), inbox: [] }, 0), base)
  }
  const figures = { usPerTurn: (nowUs() - wall) / turns, cpuUsPerTurn: (cpuUs() - cpu) / turns }
  db.close()
  const check = new Database(filename, { readonly: true })
  const row = check.prepare("SELECT count(*) AS n FROM records").get() as { readonly n: number } // COUNT's one row
  check.close()
  return { ...figures, stored: row.n, problems: [] } // raw rows are not a log: only counted
}

/** Reads a store-written session back with a fresh store: every event, checked (gap-free seq, `checkLog`). */
const readBack = (filename: string) =>
  withStore(filename, (store) =>
    Effect.gen(function*() {
      const log = yield* SessionLog.open(sessionId, { readOnly: true }).pipe(
        Effect.provideService(SessionStore.SessionStore, store)
      )
      const events = yield* log.events
      const problems = LogCheck.checkLog(events).map((v) => `${v.rule} at seq ${v.seq}: ${v.message}`)
      const gap = events.findIndex((event, i) => event.seq !== i)
      if (gap !== -1) problems.push(`seq gap at index ${gap}`)
      yield* log.close
      return { stored: events.length, problems }
    }))

const write = (writer: Writer, dir: string, turns: number): Promise<WriteRun> => {
  const filename = path.join(dir, `w6-${writer}.db`)
  if (writer === "raw-normal" || writer === "raw-full") {
    return Promise.resolve(writeRaw(filename, turns, writer === "raw-normal" ? "NORMAL" : "FULL"))
  }
  return Effect.runPromise(
    Effect.gen(function*() {
      const figures = yield* (writer === "log" ? writeLog(filename, turns) : writeStore(filename, turns))
      return { ...figures, ...(yield* readBack(filename)) }
    })
  )
}

/** A session of whole turns (at least `events` events) in 10 000-event commits, then one `open` that snapshots it. */
const prepareLong = (filename: string, events: number) =>
  Effect.runPromise(Effect.gen(function*() {
    const turns = Math.ceil(events / storeTurnEvents)
    yield* withStore(filename, (store) =>
      Effect.gen(function*() {
        yield* store.create({ id: sessionId, version: 1, createdAt: 0 })
        const lease = yield* store.lease(sessionId)
        let batch: Array<SessionEvent.SessionEvent> = []
        for (let turn = 1; turn <= turns; turn++) {
          batch.push(...turnEvents(turn, (turn - 1) * storeTurnEvents))
          if (batch.length >= 10_000 || turn === turns) {
            yield* store.append(sessionId, { events: batch, inbox: [] }, { lease })
            batch = []
          }
        }
        yield* lease.release
      }))
    // The first open replays everything and, past `snapshotEvery` events, saves the snapshot a resume starts from.
    yield* withStore(filename, (store) =>
      Effect.flatMap(
        SessionLog.open(sessionId, { commit: { snapshotEvery: Math.min(10_000, Math.floor(events / 2)) } }),
        (log) => log.close
      ).pipe(Effect.provideService(SessionStore.SessionStore, store)))
    return { turns }
  }))

/**
 * The resume a user waits for, with a fresh store (as a new process has): `open` from the snapshot, the agent
 * built on the log, then `text` followed up until the model's first request. `agentOn` builds the agent as the
 * adapter does, over `script`, in `scope`.
 */
const resume = (
  filename: string,
  text: string,
  agentOn: (
    session: SessionLog.Service,
    script: Script,
    scope: Scope.Scope
  ) => Effect.Effect<
    { readonly followUp: (text: string) => Effect.Effect<void, unknown>; readonly whenIdle: Effect.Effect<void> },
    unknown
  >
): Promise<Resumed> =>
  Effect.runPromise(Effect.gen(function*() {
    const fromSnapshot = yield* withStore(filename, (store) => Effect.map(store.loadSnapshot(sessionId), Option.isSome))
    const scope = yield* Scope.make()
    const store = Context.get(yield* Layer.buildWithScope(storeOf(filename), scope), SessionStore.SessionStore)
    let requested = 0
    let requestedCpu = 0
    let userTexts: ReadonlyArray<string> = []
    const script: Script = (request) => {
      if (request.index === 0) {
        requested = nowUs()
        requestedCpu = cpuUs()
        userTexts = request.userTexts()
      }
      return { _tag: "text", tokens: ["ok"] }
    }
    const start = nowUs()
    const startCpu = cpuUs()
    const log = yield* SessionLog.open(sessionId).pipe(Effect.provideService(SessionStore.SessionStore, store))
    const agent = yield* agentOn(log, script, scope)
    const built = nowUs()
    const builtCpu = cpuUs()
    yield* agent.followUp(text)
    yield* agent.whenIdle
    const ends = (yield* log.events).filter((event) => event.type === "turn/end")
    const completed = ends.at(-1)?.data.reason.kind === "completed" && requested > 0
    yield* Scope.close(scope, Exit.void)
    yield* Effect.ignore(log.close)
    return {
      openUs: built - start,
      firstRequestUs: requested - built,
      totalUs: requested - start,
      openCpuUs: builtCpu - startCpu,
      firstRequestCpuUs: requestedCpu - builtCpu,
      requestUserTexts: userTexts.length,
      lastUserText: userTexts.at(-1) ?? "",
      completed,
      fromSnapshot
    } satisfies Resumed
  }))

/** The store benches, with the adapter's way of building an agent on a session. */
export const storeBench = (agentOn: Parameters<typeof resume>[2]): StoreBench => ({
  write,
  prepareLong: (file, events) => prepareLong(file, events),
  resume: (file, text) => resume(file, text, agentOn)
})
