/**
 * The inbox's changes across a SIGKILL (ADR 0050, ADR 0059, R136–R143, R200–R204), on real SQLite and JSONL files
 * with real child processes. A child (`fixtures/inboxChild.ts`) keeps one turn running and makes a seeded sequence
 * of sends (some expiring while it runs, some superseding), steers, edits, moves, promotes and demotes, printing each
 * before and after; it is killed a seeded few ms after a seeded line of that report, reopens the store and resumes the
 * session with an agent that runs everything restored. Checked: the log checks clean; each accepted id has exactly
 * one fate (logged, or settled in the store) and its receipt says the same; the content that runs is the last edit
 * acknowledged (or the one in flight); the restored queue keeps the order the report last showed (or the one the
 * operation in flight made); the restored items run in the stored order.
 *
 * `HARNESS_CRASH_INBOX_KILLS` kills per backend (default 1, for `npm test`; e.g. 25 for a manual campaign).
 */
import { LanguageModel } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids, type Inbox as InboxT, type SessionEvent, type Store } from "@harness/domain"
import { LogCheck, SessionLog, type SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, type Scope } from "effect"
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bundleOf } from "../src/Parent.js"
import type { Backend } from "../src/Protocol.js"
import * as Stores from "../src/Stores.js"
import type { Op } from "./fixtures/inboxChild.js"

const entry = fileURLToPath(new URL("./fixtures/inboxChild.ts", import.meta.url))
const root = fileURLToPath(new URL("../../..", import.meta.url))
const kills = Number(process.env.HARNESS_CRASH_INBOX_KILLS ?? "1")
const ops = 24
const seedBase = Number(process.env.HARNESS_CRASH_INBOX_SEED ?? "101")
const session = Ids.SessionId.make("inbox-session")

type Listed = ReadonlyArray<{ readonly id: string; readonly placement: "queued" | "steering" }>
type Line =
  | { readonly t: "try"; readonly index: number; readonly op: Op; readonly inbox: Listed }
  | { readonly t: "done"; readonly index: number; readonly ok: boolean; readonly inbox: Listed }
  | { readonly t: "end" }

/** Runs the child (it kills itself at the seeded point); reads what it printed until it died. */
const runChild = (outfile: string, args: ReadonlyArray<string>) =>
  Effect.async<{ readonly lines: ReadonlyArray<Line>; readonly signal: string | null; readonly err: string }>(
    (resume) => {
      const proc = childProcess.spawn(process.execPath, [outfile, ...args], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      proc.stdout.on("data", (chunk: Buffer) => out += chunk.toString())
      proc.stderr.on("data", (chunk: Buffer) => err += chunk.toString())
      proc.on("exit", (_, signal) => {
        const lines = out.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line) as Line)
        resume(Effect.succeed({ lines, signal, err }))
      })
      return Effect.sync(() => proc.kill("SIGKILL"))
    }
  )

/**
 * The seeded kill point: after which line of the report (1 … 2 × ops), then at which hook of the store appends that
 * follow (0 … 3: before the first, after it, before the second, after it).
 */
const killLine = (seed: number) => 1 + ((seed * 2654435761) >>> 0) % (2 * ops)
const killAt = (seed: number) => ((seed * 40503) >>> 0) % 4

/** What the report says each id should hold, and which operation (if any) was in flight at the kill. */
const expectations = (lines: ReadonlyArray<Line>) => {
  const sent = new Map<string, { readonly timed: boolean; readonly returned: boolean }>()
  /** Each id's content as acknowledged: its send's, then each edit that returned. */
  const confirmed = new Map<string, string>()
  let inFlight: Op | undefined
  let last: Listed = []
  for (const line of lines) {
    if (line.t === "end") continue
    last = line.inbox
    if (line.t === "try") {
      inFlight = line.op
      const op = line.op
      if (op.kind === "send" || op.kind === "steer") {
        sent.set(op.id, { timed: op.kind === "send" && op.ttl !== undefined, returned: false })
        confirmed.set(op.id, op.text)
      }
      continue
    }
    const op = inFlight!
    inFlight = undefined
    if ((op.kind === "send" || op.kind === "steer") && line.ok) sent.set(op.id, { ...sent.get(op.id)!, returned: true })
    // An edit that returned is durable; one refused changed nothing.
    if (op.kind === "edit" && line.ok) confirmed.set(op.id, op.text)
  }
  /** The contents an id may run with: the last acknowledged, or an edit's still in flight at the kill. */
  const texts = (id: string): ReadonlyArray<string> => [
    confirmed.get(id) ?? "",
    ...(inFlight?.kind === "edit" && inFlight.id === id ? [inFlight.text] : [])
  ]
  return { sent, texts, inFlight, last }
}

const onStore = <A, E>(
  backend: Backend,
  location: string,
  effect: Effect.Effect<A, E, SessionStore.SessionStore | Scope.Scope>
) => Effect.scoped(effect).pipe(Effect.provide(Stores.layer(backend, location)))

/** One kill: run, kill, verify, resume, verify. */
const killOnce = (outfile: string, backend: Backend, seed: number) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `harness-inbox-${backend}-`))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const location = Stores.locationIn(backend, dir)
    if (backend === "jsonl") fs.mkdirSync(location, { recursive: true })
    const run = yield* runChild(outfile, [
      backend,
      location,
      String(seed),
      String(ops),
      String(killLine(seed)),
      String(killAt(seed))
    ])
    assert.strictEqual(run.signal, "SIGKILL", run.err)
    const { inFlight, last, sent, texts } = expectations(run.lines)
    const where = `${backend} seed ${seed}, killed at append hook ${killAt(seed)} after line ${
      killLine(seed)
    } (in flight: ${JSON.stringify(inFlight)})`

    yield* onStore(
      backend,
      location,
      Effect.gen(function*() {
        const log = yield* SessionLog.open(session)
        assert.deepStrictEqual(LogCheck.checkLog(yield* log.events), [], where)
        // The restored queue keeps the order last shown, or the one the operation in flight made.
        const restored = log.pendingInbox
        const restoredIds = new Set(restored.map((r) => r.message.id as string))
        const steady = (id: string) =>
          sent.get(id)?.timed !== true && restoredIds.has(id) && !(inFlight?.kind === "move" && inFlight.id === id)
        const queuedNow = restored.filter((r) => placementOf(r) === "queued").map((r) => r.message.id as string)
          .filter(steady)
        const shown = last.filter((item) => item.placement === "queued").map((item) => item.id).filter(steady)
        const candidates = [shown]
        if (inFlight !== undefined && (inFlight.kind === "send" || inFlight.kind === "demote")) {
          candidates.push([...shown.filter((id) => id !== inFlight.id), inFlight.id].filter(steady))
        }
        assert.isTrue(
          candidates.some((candidate) => JSON.stringify(candidate) === JSON.stringify(queuedNow)),
          `${where}: restored queue ${JSON.stringify(queuedNow)}, expected one of ${JSON.stringify(candidates)}`
        )

        // The next process runs everything restored (expired items are settled first, R204).
        const [model] = yield* S.make(Array.from({ length: 2 * ops }, () => S.textResponse("ok")))
        const agent = yield* Agent.make({ session: log, model: "scripted" }).pipe(
          Effect.provideService(LanguageModel.LanguageModel, model)
        )
        yield* agent.whenIdle
        const events = yield* agent.log
        assert.deepStrictEqual(LogCheck.checkLog(events), [], where)
        const records = yield* log.inboxRecords
        const logged = loggedById(events)
        const settled = settledById(records)

        // Restored items ran in the stored order (those not expired at resume).
        const ranAfter = events.filter((e) => e.type === "user/message" && e.data.messageId !== undefined)
          .map((e) => (e.type === "user/message" ? e.data.messageId : undefined) as string)
          .filter((id) => restoredIds.has(id))
        assert.deepStrictEqual(
          ranAfter,
          restored.map((r) => r.message.id as string).filter((id) => ranAfter.includes(id)),
          where
        )

        for (const [id, { returned }] of sent) {
          const fates = (logged.has(id) ? 1 : 0) + (settled.has(id) ? 1 : 0)
          const receipt = yield* agent.receipt(Ids.AgentMessageId.make(id))
          if (!returned && fates === 0) {
            // A send in flight at the kill may not have been accepted: then nothing knows it.
            assert.strictEqual(receipt._tag, "unknown", `${where}: ${id}`)
            continue
          }
          assert.strictEqual(fates, 1, `${where}: ${id} has ${fates} fates`)
          const event = logged.get(id)
          if (event !== undefined) {
            assert.include(["ran", "joined"], receipt._tag, `${where}: ${id}`)
            // The content that ran is the last edit acknowledged, or the one in flight.
            assert.include(texts(id), textOf(event), `${where}: ${id} ran with other content`)
          } else {
            const record = settled.get(id)!
            assert.strictEqual(
              receipt._tag,
              record.cause === "expired" ? "expired" : record.cause === "superseded" ? "superseded" : "discarded",
              `${where}: ${id} settled ${record.cause}, receipt ${receipt._tag}`
            )
          }
        }
        assert.deepStrictEqual(yield* agent.inbox, [], where)
      })
    )
  }).pipe(Effect.scoped)

const placementOf = (record: Store.InboxAccepted): InboxT.InboxItem["placement"] =>
  record.placement === "queued" ? "queued" : "steering"

const loggedById = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const byId = new Map<string, SessionEvent.SessionEvent>()
  for (const event of events) {
    const id = event.type === "user/message"
      ? event.data.messageId
      : event.type === "steering/message"
      ? event.data.messageId
      : undefined
    if (id === undefined) continue
    assert.isFalse(byId.has(id), `${id} is in the log twice`)
    byId.set(id, event)
  }
  return byId
}

const settledById = (records: ReadonlyArray<Store.InboxRecord>) => {
  const byId = new Map<string, Extract<Store.InboxRecord, { readonly type: "inbox/settled" }>>()
  for (const record of records) {
    if (record.type !== "inbox/settled" || record.fate === "claimed") continue
    assert.isFalse(byId.has(record.id), `${record.id} is settled twice`)
    byId.set(record.id, record)
  }
  return byId
}

const textOf = (event: SessionEvent.SessionEvent): string =>
  event.type === "user/message" || event.type === "steering/message"
    ? event.data.content.map((block) => block.text).join("")
    : ""

describe("the inbox's changes across a SIGKILL", () => {
  it.live(
    `edit, move, promote, demote and expiry mid-flight: one fate per id, receipts agree, edited content runs, order kept (${kills} kills per backend)`,
    () =>
      Effect.gen(function*() {
        // The child bundled once into one ES module, as the campaign bundles its own: a start costs ~1 s.
        const outfile = (yield* bundleOf(entry)).args[0]!
        const runs = (["sqlite", "jsonl"] as const).flatMap((backend) =>
          Array.from({ length: kills }, (_, index) =>
            [backend, seedBase + index * 7919 + (backend === "jsonl" ? 3 : 0)] as const)
        )
        yield* Effect.forEach(runs, ([backend, seed]) =>
          killOnce(outfile, backend, seed), { concurrency: 2 })
      }).pipe(Effect.scoped),
    300_000
  )
})
