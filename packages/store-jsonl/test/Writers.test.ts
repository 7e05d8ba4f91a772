/**
 * One writer per session across real processes (R107, ADR 0044): children run `writer-child.ts`, each its
 * own Node process with its own store over the same directory. Two writers racing for hundreds of rounds lose no
 * acknowledged turn and the loser is told who holds the session; reads and a fork beside a live writer disturb
 * nothing; a writer killed with SIGKILL is taken over at once and its open turn repaired; a stalled holder whose
 * lease was taken over is fenced.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Store } from "@harness/domain"
import { LogCheck, SessionLog, Sessions, SessionStore } from "@harness/session"
import { eventsCommit } from "@harness/session/test/conformance"
import { ev, promptTurn, sessionId, stamp } from "@harness/testkit/Events"
import { Deferred, Effect, Layer, Queue } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import { JsonlStore } from "../src/index.js"

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const childScript = path.join(packageDir, "test", "writer-child.ts")

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-writers-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const storeLayer = (directory: string) => JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer))

const inStore = <A, E>(directory: string, f: Effect.Effect<A, E, SessionStore.SessionStore>) =>
  Effect.scoped(f.pipe(Effect.provide(storeLayer(directory))))

const sid = sessionId("shared")

/** A line a child wrote. */
type Reply = Record<string, unknown>

interface Child {
  readonly pid: number
  readonly send: (command: Record<string, unknown>) => Effect.Effect<void>
  /** The child's next line. */
  readonly next: Effect.Effect<Reply>
  /** Its exit (code or signal). */
  readonly exited: Deferred.Deferred<string>
  readonly process: ChildProcess
}

/** Starts a writer child on the session of `directory`; killed (and reaped) when the scope closes. */
const writer = (directory: string, name: string) =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<Reply>()
    const exited = yield* Deferred.make<string>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const proc = spawn(process.execPath, ["--import", "tsx", childScript, directory, sid, name], {
          cwd: packageDir,
          stdio: ["pipe", "pipe", "pipe"]
        })
        let stderr = ""
        proc.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
        readline.createInterface({ input: proc.stdout! }).on("line", (line) => {
          Queue.unsafeOffer(lines, JSON.parse(line) as Reply)
        })
        proc.on("exit", (code, signal) => {
          Queue.unsafeOffer(lines, { exited: code ?? signal, stderr })
          Deferred.unsafeDone(exited, Effect.succeed(String(code ?? signal)))
        })
        return proc
      }),
      (proc) =>
        Effect.zipRight(
          Effect.sync(() => {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL")
          }),
          Deferred.await(exited)
        )
    )
    const next = Effect.flatMap(Queue.take(lines), (line) =>
      "exited" in line
        ? Effect.dieMessage(`writer ${name} exited (${String(line.exited)}): ${String(line.stderr)}`)
        : "failed" in line
        ? Effect.dieMessage(`writer ${name} failed: ${String(line.failed)}`)
        : Effect.succeed(line))
    const ready = yield* next
    assert.strictEqual(ready.ready, true)
    const result: Child = {
      pid: child.pid!,
      send: (command) => Effect.sync(() => void child.stdin!.write(`${JSON.stringify(command)}\n`)),
      next,
      exited,
      process: child
    }
    return result
  })

/** Creates the shared session with one whole turn. */
const seed = (directory: string) =>
  inStore(
    directory,
    Effect.gen(function*() {
      const log = yield* SessionLog.make({ id: sid })
      yield* log.appendAll(promptTurn(1, "Seed", "Seeded"))
      yield* log.close
    })
  )

/** The stored events of the shared session, read by a fresh store of this process. */
const storedEvents = (directory: string) =>
  inStore(directory, Effect.flatMap(SessionLog.open(sid, { readOnly: true }), (log) => log.events))

/** The message ids of the stored prompts. */
const promptIds = (events: ReadonlyArray<{ readonly type: string; readonly data: unknown }>) =>
  events.flatMap((event) => {
    const data = event.data as { readonly messageId?: string }
    return event.type === "user/message" && data.messageId !== undefined ? [data.messageId] : []
  })

/** Checks a refusal: `busy`, naming `holder` (the other writer) in its holder and its message. */
const assertBusy = (reply: Reply, holder: Child, what: string) => {
  assert.strictEqual(reply.ok, false, what)
  assert.strictEqual(reply.reason, "busy", `${what}: ${String(reply.message)}`)
  const named = reply.holder as Store.LeaseHolder
  assert.strictEqual(named.pid, holder.pid, what)
  assert.strictEqual(named.host, os.hostname(), what)
  assert.include(String(reply.message), Store.describeHolder(named), what)
}

describe("JsonlStore: one writer per session across processes (ADR 0044)", () => {
  it.live(
    "two writers racing 200 rounds: every acknowledged turn is stored, each loser is told who holds the session",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        yield* seed(dir)
        const a = yield* writer(dir, "a")
        const b = yield* writer(dir, "b")
        const acknowledged: Array<string> = []
        let refused = 0
        for (let round = 0; round < 200; round++) {
          if (round % 10 === 5) {
            // A round where one of them surely holds the session while the other tries.
            const [holder, other] = round % 20 === 5 ? [a, b] : [b, a]
            yield* holder.send({ op: "round", round, pause: true })
            assert.strictEqual((yield* holder.next).opened, true)
            yield* other.send({ op: "round", round })
            assertBusy(yield* other.next, holder, `round ${round}`)
            refused++
            yield* holder.send({ op: "continue" })
            const done = yield* holder.next
            assert.strictEqual(done.ok, true, `round ${round}: ${String(done.message)}`)
            acknowledged.push(`${holder === a ? "a" : "b"}-${round}`)
            continue
          }
          yield* a.send({ op: "round", round })
          yield* b.send({ op: "round", round })
          for (const [child, other, name] of [[a, b, "a"], [b, a, "b"]] as const) {
            const reply = yield* child.next
            if (reply.ok === true) acknowledged.push(`${name}-${round}`)
            else {
              assertBusy(reply, other, `round ${round}, writer ${name}`)
              refused++
            }
          }
        }
        yield* a.send({ op: "exit" })
        yield* b.send({ op: "exit" })
        const events = yield* storedEvents(dir)
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        const stored = promptIds(events)
        // 0 lost, nothing else: every acknowledged turn once, in the order acknowledged within each round
        assert.deepStrictEqual([...stored].sort(), [...acknowledged, "prompt-1"].sort())
        assert.isAtLeast(acknowledged.length, 200)
        assert.isAtLeast(refused, 20)
        assert.isFalse(fs.existsSync(path.join(dir, "shared.lock")), "the last writer gave its lock up")
      }).pipe(Effect.scoped),
    300_000
  )

  it.live(
    "a read-only open, a list and a fork beside a live writer leave it alone: its turn is stored",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        yield* seed(dir)
        const live = yield* writer(dir, "live")
        yield* live.send({ op: "hold" })
        const held = yield* live.next
        assert.strictEqual(held.held, true)
        const forked = yield* inStore(
          dir,
          Effect.gen(function*() {
            // reads: the open turn as stored so far, nothing cut
            const reader = yield* SessionLog.open(sid, { readOnly: true })
            const seen = yield* reader.events
            assert.strictEqual(promptIds(seen).at(-1), "live-held")
            assert.strictEqual(seen.at(-1)!.type, "step/start")
            const [summary] = yield* Sessions.list
            assert.strictEqual(summary!.id, sid)
            // a fork reads the parent and writes only the child
            const child = yield* Sessions.fork(sid)
            // a second writer is refused at once, naming the live one; so is a write without the lease
            const second = yield* Effect.flip(SessionLog.open(sid))
            assert.strictEqual(second.reason, "busy")
            assert.strictEqual(second.holder?.pid, live.pid)
            const store = yield* SessionStore.SessionStore
            const unleased = yield* Effect.flip(
              store.append(sid, eventsCommit(stamp([ev.user("intruder")], { start: seen.length, time: 9 })))
            )
            assert.strictEqual(unleased.reason, "Busy")
            assert.strictEqual(unleased.holder?.pid, live.pid)
            assert.include(unleased.message, Store.describeHolder(unleased.holder!))
            return child
          })
        )
        yield* live.send({ op: "finish" })
        assert.strictEqual((yield* live.next).finished, true)
        const events = yield* storedEvents(dir)
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        assert.deepStrictEqual(promptIds(events), ["prompt-1", "live-held"])
        const end = events.at(-1)!
        assert.strictEqual(end.type, "turn/end")
        assert.deepStrictEqual((end.data as { readonly reason: unknown }).reason, { kind: "completed" })
        const child = yield* inStore(
          dir,
          Effect.flatMap(SessionLog.open(forked, { readOnly: true }), (log) => log.events)
        )
        assert.deepStrictEqual(promptIds(child), ["prompt-1"])
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "SIGKILL of the lease holder: the next writer takes over at once and repair closes the open turn",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        yield* seed(dir)
        const victim = yield* writer(dir, "victim")
        yield* victim.send({ op: "hold" })
        assert.strictEqual((yield* victim.next).held, true)
        const lock = JSON.parse(fs.readFileSync(path.join(dir, "shared.lock"), "utf8")) as Record<string, unknown>
        assert.strictEqual(lock.pid, victim.pid)
        victim.process.kill("SIGKILL")
        assert.strictEqual(yield* Deferred.await(victim.exited), "SIGKILL")
        const events = yield* inStore(
          dir,
          Effect.gen(function*() {
            const log = yield* SessionLog.open(sid)
            const taken = JSON.parse(fs.readFileSync(path.join(dir, "shared.lock"), "utf8")) as Record<string, unknown>
            assert.strictEqual(taken.pid, process.pid)
            const events = yield* log.events
            yield* log.close
            return events
          })
        )
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        assert.deepStrictEqual(promptIds(events), ["prompt-1", "victim-held"])
        assert.deepStrictEqual(events.at(-1)!.data, { turn: 2, reason: { kind: "interrupted" } })
        assert.deepStrictEqual(yield* storedEvents(dir), events)
        assert.isFalse(fs.existsSync(path.join(dir, "shared.lock")))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a stalled holder whose lease expired is taken over; its later writes are fenced, not merged",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        yield* seed(dir)
        const stalled = yield* writer(dir, "stalled")
        yield* stalled.send({ op: "hold" })
        assert.strictEqual((yield* stalled.next).held, true)
        stalled.process.kill("SIGSTOP")
        // not renewed for a minute: expired, though its process still runs
        const lockFile = path.join(dir, "shared.lock")
        const old = new Date(Date.now() - 60_000)
        fs.utimesSync(lockFile, old, old)
        yield* inStore(
          dir,
          Effect.gen(function*() {
            const log = yield* SessionLog.open(sid)
            const state = yield* log.state
            yield* log.appendAll(
              promptTurn(state.lastTurn + 1, "Taken", "Over").map((input, i) =>
                i === 0 ? ev.user("Taken", undefined, "taker-1") : input
              )
            )
            yield* log.flush
            // the stalled writer resumes while the taker still holds the session
            stalled.process.kill("SIGCONT")
            yield* stalled.send({ op: "finish" })
            const finished = yield* stalled.next
            assert.strictEqual(finished.finished, false)
            assert.strictEqual(finished.reason, "busy")
            assert.strictEqual((finished.holder as Store.LeaseHolder).pid, process.pid)
            yield* log.close
          })
        )
        const events = yield* storedEvents(dir)
        assert.deepStrictEqual(LogCheck.checkLog(events), [])
        // the stalled turn was closed by the taker's repair, and nothing the stalled writer wrote later is stored
        assert.deepStrictEqual(promptIds(events), ["prompt-1", "stalled-held", "taker-1"])
        assert.notInclude(JSON.stringify(events), "Answer stalled-held")
      }).pipe(Effect.scoped),
    120_000
  )
})
