/**
 * The JSONL writer lease in one process (ADR 0044), against lock files other processes would leave: a live holder
 * is `Busy` at once and named; a holder whose process is gone, a previous process with this pid, and a lock not
 * renewed within the lease time are taken over; a lease another process took over is fenced; two takers of one stale
 * lock never both win; the holder renews its lock. The cross-process behaviour with real processes is in
 * `Writers.test.ts`.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Store } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { ev, sessionId as sid, stamp } from "@harness/testkit/Events"
import { Chunk, Duration, Effect, Layer, TestClock } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { JsonlStore } from "../src/index.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-lease-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const s1 = sid("s1")
const lockFile = (dir: string) => path.join(dir, "s1.lock")

/** A new store instance on `directory`, over `fileSystem` (the Node one by default). */
const storeOn = (
  directory: string,
  options?: Partial<JsonlStore.Options>,
  fileSystem: Layer.Layer<FileSystem.FileSystem> = NodeFileSystem.layer
) => Effect.provide(JsonlStore.make({ directory, ...options }), fileSystem)

const commitAt = (seq: number, text: string) => eventsCommit(stamp([ev.user(text)], { start: seq, time: 2_000 + seq }))

/** Writes a lock file as another writer would have left it. */
const plant = (dir: string, lock: Record<string, unknown>, mtime?: Date) => {
  fs.writeFileSync(lockFile(dir), JSON.stringify(lock))
  if (mtime !== undefined) fs.utimesSync(lockFile(dir), mtime, mtime)
}

const lockOf = (dir: string) => JSON.parse(fs.readFileSync(lockFile(dir), "utf8")) as Record<string, unknown>

/** The pid of a process that ran and is gone (reaped). */
const deadPid = (): number => {
  const ran = spawnSync(process.execPath, ["-e", ""])
  return ran.pid!
}

const refusal = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (result) => result._tag === "Left" ? Effect.succeed(result.left) : Effect.dieMessage("expected the store to refuse")
  )

/** How many descriptors of this process are open on `file` (Linux: `/proc/self/fd`). */
const openDescriptors = (file: string): number =>
  fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === file
    } catch {
      return false
    }
  }).length

describe("JsonlStore writer lease", () => {
  it.live("a lease keeps its session file open for its writes and closes it when it ends, also when taken over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(fs.realpathSync(dir), "s1.jsonl")
      const store = yield* storeOn(dir)
      yield* store.create(header(s1))
      const first = yield* store.lease(s1)
      for (let seq = 0; seq < 3; seq++) yield* store.append(s1, commitAt(seq, `first ${seq}`), { lease: first })
      assert.strictEqual(openDescriptors(file), 1)
      // a later lease in this process takes over: the first one's descriptor is closed, the new one writes on
      const second = yield* store.lease(s1)
      assert.strictEqual(openDescriptors(file), 0)
      yield* store.append(s1, commitAt(3, "second"), { lease: second, sync: true })
      assert.strictEqual(openDescriptors(file), 1)
      yield* second.release
      assert.strictEqual(openDescriptors(file), 0)
      assert.strictEqual((yield* loadAll(store, s1)).length, 4)
    }).pipe(Effect.scoped))

  it.live("a lease is a lock file naming this process, given up on release; a write without one takes none", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* storeOn(dir)
      yield* store.create(header(s1))
      // a write without a lease on a session nobody holds: stored, and no lock left behind
      yield* store.append(s1, commitAt(0, "unleased"))
      assert.isFalse(fs.existsSync(lockFile(dir)))
      const lease = yield* store.lease(s1)
      const lock = lockOf(dir)
      assert.deepStrictEqual(
        { ...lock, start: typeof lock.start },
        { token: lease.token, pid: process.pid, host: os.hostname(), since: lease.holder.since, start: "number" }
      )
      assert.deepStrictEqual(lease.holder, { pid: process.pid, host: os.hostname(), since: lease.holder.since })
      yield* store.append(s1, commitAt(1, "leased"), { lease })
      yield* lease.release
      assert.isFalse(fs.existsSync(lockFile(dir)))
      assert.deepStrictEqual((yield* loadAll(store, s1)).length, 2)
    }).pipe(Effect.scoped))

  it.live("closing the store's scope gives up the leases it still holds (the process is ending)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* storeOn(dir)
        yield* store.create(header(s1))
        yield* store.lease(s1)
        assert.isTrue(fs.existsSync(lockFile(dir)))
      }))
      assert.isFalse(fs.existsSync(lockFile(dir)))
    }).pipe(Effect.scoped))

  it.live("a live holder in another process: Busy at once, naming it; its lock is left alone", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* storeOn(dir)
      yield* store.create(header(s1))
      // the test runner's parent process: alive, on this host, not this process
      const holder: Store.LeaseHolder = { pid: process.ppid, host: os.hostname(), since: 1_700_000_000_000 }
      plant(dir, { token: 7, ...holder })
      const planted = fs.readFileSync(lockFile(dir))
      for (
        const [what, attempt] of [
          ["lease", Effect.asVoid(store.lease(s1))],
          ["append", store.append(s1, commitAt(0, "x"))],
          ["truncate", store.truncate(s1, 0)],
          ["snapshot", store.saveSnapshot(s1, { seq: 0, position: 0, head: "h", body: "b" })],
          ["remove", store.remove(s1)]
        ] as const
      ) {
        const error = yield* refusal(attempt)
        assert.strictEqual(error.reason, "Busy", what)
        assert.deepStrictEqual(error.holder, holder, what)
        assert.include(error.message, Store.describeHolder(holder), what)
      }
      assert.deepStrictEqual(fs.readFileSync(lockFile(dir)), planted)
      assert.deepStrictEqual(yield* loadAll(store, s1), [])
    }).pipe(Effect.scoped))

  it.live("a holder that is gone is taken over at once: its process ended, or this pid was another process's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* storeOn(dir)
      yield* store.create(header(s1))
      const locks = [
        { token: 41, pid: deadPid(), host: os.hostname(), since: 1_700_000_000_000 },
        // this pid, but a process that started before this one
        { token: 42, pid: process.pid, host: os.hostname(), since: 1_000, start: performance.timeOrigin - 60_000 }
      ]
      for (const lock of locks) {
        plant(dir, lock)
        const lease = yield* store.lease(s1)
        assert.isAbove(lease.token, lock.token)
        assert.strictEqual(lockOf(dir).pid, process.pid)
        yield* store.append(s1, commitAt(lock.token - 41, `after ${lock.token}`), { lease })
        yield* lease.release
      }
      assert.strictEqual((yield* loadAll(store, s1)).length, 2)
      // no stale lock was left behind under another name
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["s1.jsonl"])
    }).pipe(Effect.scoped))

  it.live("a lock of another host is live until it is older than the lease time, then taken over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // A lease time far longer than a loaded machine takes between the plant and the check: the fresh lock is
      // live however slow the machine, the one renewed past the lease time expired.
      const store = yield* storeOn(dir, { leaseTime: Duration.minutes(5) })
      yield* store.create(header(s1))
      const holder = { token: 3, pid: 12345, host: "elsewhere", since: 1_700_000_000_000 }
      plant(dir, holder)
      const busy = yield* refusal(store.lease(s1))
      assert.strictEqual(busy.reason, "Busy")
      assert.strictEqual(busy.holder?.host, "elsewhere")
      plant(dir, holder, new Date(Date.now() - 6 * 60_000))
      const lease = yield* store.lease(s1)
      assert.strictEqual(lockOf(dir).host, os.hostname())
      yield* lease.release
    }).pipe(Effect.scoped))

  it.live("a lease another process took over is fenced: its writes are Busy and store nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* storeOn(dir)
      yield* store.create(header(s1))
      const lease = yield* store.lease(s1)
      yield* store.append(s1, commitAt(0, "mine"), { lease })
      // another host judged this lease expired and put its own lock in place (a new file)
      const taker: Store.LeaseHolder = { pid: 999, host: "elsewhere", since: 1_800_000_000_000 }
      fs.writeFileSync(`${lockFile(dir)}.other`, JSON.stringify({ token: lease.token + 1, ...taker }))
      fs.renameSync(`${lockFile(dir)}.other`, lockFile(dir))
      const before = fs.readFileSync(path.join(dir, "s1.jsonl"))
      for (
        const [what, write] of [
          ["append", store.append(s1, commitAt(1, "late"), { lease })],
          ["truncate", store.truncate(s1, 0, { lease })],
          ["snapshot", store.saveSnapshot(s1, { seq: 0, position: 0, head: "h", body: "b" }, { lease })],
          ["remove", store.remove(s1, { lease })]
        ] as const
      ) {
        const error = yield* refusal(write)
        assert.strictEqual(error.reason, "Busy", what)
      }
      const first = yield* refusal(store.append(s1, commitAt(1, "late"), { lease }))
      assert.include(first.message, "taken over")
      assert.deepStrictEqual(fs.readFileSync(path.join(dir, "s1.jsonl")), before)
      assert.isFalse(fs.existsSync(path.join(dir, "s1.snapshot.json")))
      // giving it up leaves the taker's lock alone
      yield* lease.release
      assert.deepStrictEqual(lockOf(dir).host, "elsewhere")
    }).pipe(Effect.scoped))

  it.live("two takers of one stale lock: the one whose rename finds the other's new lock puts it back and is Busy", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const winner: Store.LeaseHolder = { pid: process.ppid, host: os.hostname(), since: 1_800_000_000_000 }
      // Between this store's judgement (stale) and its rename, another taker replaced the stale lock with its own.
      let raced = false
      const racing = Layer.effect(
        FileSystem.FileSystem,
        Effect.map(FileSystem.FileSystem, (base): FileSystem.FileSystem => ({
          ...base,
          rename: (from, to) =>
            Effect.suspend(() => {
              if (raced || from !== lockFile(dir) || !to.endsWith(".stale")) return base.rename(from, to)
              raced = true
              fs.rmSync(lockFile(dir))
              fs.writeFileSync(lockFile(dir), JSON.stringify({ token: 50, ...winner }))
              return base.rename(from, to)
            })
        }))
      ).pipe(Layer.provide(NodeFileSystem.layer))
      const store = yield* storeOn(dir, {}, racing)
      yield* store.create(header(s1))
      plant(dir, { token: 41, pid: deadPid(), host: os.hostname(), since: 1_700_000_000_000 })
      const error = yield* refusal(store.lease(s1))
      assert.isTrue(raced)
      assert.strictEqual(error.reason, "Busy")
      assert.deepStrictEqual(error.holder, winner)
      // the winner's lock is back in place, and nothing else is left
      assert.strictEqual(lockOf(dir).token, 50)
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["s1.jsonl", "s1.lock"])
    }).pipe(Effect.scoped))

  it.effect("the holder renews its lock every third of the lease time while it holds it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* storeOn(dir, { leaseTime: Duration.seconds(30) })
      yield* store.create(header(s1))
      const lease = yield* store.lease(s1)
      const mtime = () => fs.statSync(lockFile(dir)).mtimeMs
      /**
       * Waits on real I/O, never on the test clock: until the lock's mtime is `expected` and the next renewal is due
       * at `next`. Polled every few real milliseconds; the minute's bound is a safety net (a count of event-loop
       * turns would be one a loaded machine's file system can outlast).
       */
      const settled = (expected: number | undefined, next: number) =>
        Effect.gen(function*() {
          for (let i = 0; i < 12_000; i++) {
            const due = Chunk.toReadonlyArray(yield* TestClock.sleeps())
            if ((expected === undefined || mtime() === expected) && due.includes(next)) return
            yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))
          }
          assert.fail(`the lock was not renewed to ${expected} with the next renewal due at ${next}`)
        })
      yield* settled(undefined, 10_000)
      assert.notStrictEqual(mtime(), 10_000)
      yield* TestClock.adjust(Duration.seconds(10))
      yield* settled(10_000, 20_000)
      yield* TestClock.adjust(Duration.seconds(10))
      yield* settled(20_000, 30_000)
      yield* lease.release
      assert.isFalse(fs.existsSync(lockFile(dir)))
    }).pipe(Effect.scoped))
})
