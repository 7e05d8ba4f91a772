/**
 * The file's integrity: every commit carries a checksum, a commit marker that does not fit is
 * corruption (never a torn tail that silently drops later commits), a line longer than the maximum record size is a
 * typed error found without reading it whole, framing is linear in a line's length, and files written before
 * checksums keep loading.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionLog, type SessionStore } from "@harness/session"
import { eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { ev, promptTurn, sessionId as sid, stamp } from "@harness/testkit/Events"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { afterEach, vi } from "vitest"
import { JsonlStore } from "../src/index.js"
import { Framer } from "../src/internal/framing.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-integrity-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `f` over a fresh store instance on `directory` (nothing cached from an earlier one). */
const withStore = <A, E>(
  directory: string,
  f: (store: SessionStore.Service) => Effect.Effect<A, E>,
  options?: Partial<JsonlStore.Options>
) =>
  Effect.scoped(
    Effect.flatMap(JsonlStore.make({ directory, ...options }), f).pipe(Effect.provide(NodeFileSystem.layer))
  )

const withLog = <A, E>(directory: string, f: Effect.Effect<A, E, SessionStore.SessionStore>) =>
  Effect.scoped(f.pipe(Effect.provide(JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer)))))

const s1 = sid("s1")
const file = (dir: string) => path.join(dir, "s1.jsonl")

/** A session of three turns, each one commit (flushed). */
const threeTurns = (dir: string) =>
  withLog(
    dir,
    Effect.gen(function*() {
      const log = yield* SessionLog.make({ id: s1 })
      for (const turn of [1, 2, 3]) {
        yield* log.appendAll(promptTurn(turn, `Prompt ${turn}`, `Answer ${turn}`))
        yield* log.flush
      }
      yield* log.close
    })
  )

/** The reason and message of a failure, failing the test when the effect succeeds. */
const failure = <A, R>(effect: Effect.Effect<A, SessionStore.SessionStoreError, R>) =>
  Effect.map(Effect.flip(effect), (e) => ({ reason: e.reason, message: e.message }))

/** The byte offset just past line `n` (1-based) of the file. */
const endOfLine = (bytes: Buffer, n: number): number => {
  let at = -1
  for (let i = 0; i < n; i++) at = bytes.indexOf(0x0a, at + 1)
  return at + 1
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("JsonlStore integrity", () => {
  it.live("a commit marker that is not the next expected is corruption, not a torn tail: nothing is cut", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* threeTurns(dir)
      const whole = fs.readFileSync(file(dir))
      // after turn 1 (header, marker, 8 records): a marker announcing more records than the file holds
      const at = endOfLine(whole, 10)
      const bad = Buffer.concat([whole.subarray(0, at), Buffer.from("{\"commit\":99999999}\n"), whole.subarray(at)])
      fs.writeFileSync(file(dir), bad)
      const loaded = yield* withStore(dir, (store) => failure(loadAll(store, s1)))
      assert.strictEqual(loaded.reason, "Corrupt")
      assert.include(loaded.message, `byte ${at} (line 11)`)
      // the session log refuses to open it, and the file keeps every committed turn
      const opened = yield* Effect.flip(withLog(dir, SessionLog.open(s1)))
      assert.include(opened.message, "Corrupt")
      assert.deepStrictEqual(fs.readFileSync(file(dir)), bad)
      // a marker with a checksum that announces too many records swallows the next marker: corruption too
      const forged = Buffer.concat([
        whole.subarray(0, at),
        Buffer.from("{\"commit\":99999999,\"crc\":\"00000000\"}\n"),
        whole.subarray(at)
      ])
      fs.writeFileSync(file(dir), forged)
      const swallowed = yield* withStore(dir, (store) => failure(loadAll(store, s1)))
      assert.strictEqual(swallowed.reason, "Corrupt")
      assert.include(swallowed.message, "a commit marker inside the commit")
      assert.deepStrictEqual(fs.readFileSync(file(dir)), forged)
    }).pipe(Effect.scoped))

  it.live("a flipped byte or invalid UTF-8 inside a committed record is Corrupt, never loaded as U+FFFD", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* threeTurns(dir)
      const whole = fs.readFileSync(file(dir))
      const target = whole.indexOf("Answer 2")
      for (const [what, byte] of [["a flipped bit", whole[target]! ^ 0x01], ["invalid UTF-8", 0xff]] as const) {
        const bad = Buffer.from(whole)
        bad[target] = byte
        fs.writeFileSync(file(dir), bad)
        const error = yield* withStore(dir, (store) => failure(loadAll(store, s1)))
        assert.strictEqual(error.reason, "Corrupt", what)
        assert.include(error.message, "checksum", what)
        assert.include(error.message, "s1.jsonl", what)
        // the summary leaves it out, and says why
        const [listed, damaged] = yield* withStore(dir, (store) => Effect.all([store.list, store.damaged]))
        assert.deepStrictEqual(listed, [], what)
        assert.deepStrictEqual(damaged.map((d) => d.id), [s1], what)
        assert.include(damaged[0]!.problem, "checksum", what)
      }
    }).pipe(Effect.scoped))

  it.live("a marker whose count was raised is corruption even on the last commit (its checksum matches)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* threeTurns(dir)
      const text = fs.readFileSync(file(dir), "utf8")
      const last = text.lastIndexOf("{\"commit\":8,")
      fs.writeFileSync(file(dir), `${text.slice(0, last)}{"commit":9,${text.slice(last + "{\"commit\":8,".length)}`)
      const error = yield* withStore(dir, (store) => failure(loadAll(store, s1)))
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, "announces 9 records")
    }).pipe(Effect.scoped))

  it.live("a file written before checksums loads as it was written, takes appends, and still finds bad markers", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const turn = stamp(promptTurn(1, "Hi", "Hello"), { start: 0, time: 2_000 })
      const texts = turn.map((event) => JSON.stringify(event))
      const headerLine = JSON.stringify({ type: "session", order: 0, ...header(s1) })
      // the first format: a marker without checksum for a group, a single record as its bare line
      const old = [headerLine, "{\"commit\":7}", ...texts.slice(0, 7), texts[7]!, ""].join("\n")
      fs.writeFileSync(file(dir), old)
      const loaded = yield* withStore(dir, (store) => loadAll(store, s1))
      assert.deepStrictEqual(loaded.map((r) => r.text), texts)
      const next = stamp([ev.user("again")], { start: 8, time: 3_000 })
      yield* withStore(dir, (store) => store.append(s1, eventsCommit(next)))
      const again = yield* withStore(dir, (store) => loadAll(store, s1))
      assert.deepStrictEqual(again.map((r) => r.text), [...texts, JSON.stringify(next[0])])
      // a marker inside a group of that format is corruption there too
      const injected = [headerLine, "{\"commit\":7}", ...texts.slice(0, 3), "{\"commit\":2}", ...texts.slice(3), ""]
      fs.writeFileSync(file(dir), injected.join("\n"))
      const error = yield* withStore(dir, (store) => failure(loadAll(store, s1)))
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, "line 6")
    }).pipe(Effect.scoped))

  it.live("a record over the maximum record size is refused on write (Conflict) and found on read (Corrupt)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const small = { maxRecordBytes: 4096 }
      yield* withStore(dir, (store) => store.create(header(s1)), small)
      const big = stamp([ev.user("x".repeat(5000))], { start: 0, time: 2_000 })
      const refused = yield* withStore(dir, (store) => failure(store.append(s1, eventsCommit(big))), small)
      assert.strictEqual(refused.reason, "Conflict")
      assert.include(refused.message, "maximum record size (4096 bytes)")
      assert.deepStrictEqual(yield* withStore(dir, (store) => loadAll(store, s1), small), [])
      // written by a store with the default maximum, read by one with the small one
      yield* withStore(dir, (store) => store.append(s1, eventsCommit(big)))
      const error = yield* withStore(dir, (store) => failure(loadAll(store, s1)), small)
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, "line 3")
      assert.include(error.message, "longer than the maximum record size (4096 bytes)")
    }).pipe(Effect.scoped))

  it.live("a 64 MiB line under a 1 MiB maximum fails typed, after reading about 1 MiB of it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (store) => store.create(header(s1)))
      const line = Buffer.alloc(64 * 1024 * 1024, 0x61)
      fs.appendFileSync(file(dir), Buffer.concat([Buffer.from("{\"commit\":1,\"crc\":\"00000000\"}\n"), line]))
      const framed: Array<Framer> = []
      const push = Framer.prototype.push
      vi.spyOn(Framer.prototype, "push").mockImplementation(function(this: Framer, chunk) {
        if (!framed.includes(this)) framed.push(this)
        return push.call(this, chunk)
      })
      const error = yield* withStore(dir, (store) => failure(loadAll(store, s1)), { maxRecordBytes: 1024 * 1024 })
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, "longer than the maximum record size")
      // the read stopped within a chunk or two of the limit (256 KiB chunks), not at the line's end
      assert.strictEqual(framed.length, 1)
      assert.isAtMost(framed[0]!.fed, 2 * 1024 * 1024)
      assert.isAtMost(framed[0]!.copied, 2 * 1024 * 1024)
      // the listing leaves it out and says why, also quickly
      const damaged = yield* withStore(dir, (store) => store.damaged, { maxRecordBytes: 1024 * 1024 })
      assert.deepStrictEqual(damaged.map((d) => d.id), [s1])
    }).pipe(Effect.scoped))

  it.live("framing is linear in a line's length: a 16 MiB line is copied once, not once per chunk", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const text = "y".repeat(16 * 1024 * 1024)
      const big = stamp([ev.user(text)], { start: 0, time: 2_000 })
      yield* withStore(dir, (store) => store.create(header(s1), eventsCommit(big)))
      let concatenated = 0
      const concat = Buffer.concat
      vi.spyOn(Buffer, "concat").mockImplementation((list, length) => {
        const joined = concat(list, length)
        concatenated += joined.length
        return joined
      })
      const loaded = yield* withStore(dir, (store) => Effect.zip(loadAll(store, s1), store.list))
      vi.restoreAllMocks()
      assert.strictEqual(loaded[0].length, 1)
      assert.strictEqual(loaded[0][0]!.text, JSON.stringify(big[0]))
      assert.strictEqual(loaded[1][0]!.events, 1)
      // two reads of the file (load and the list's scan): each line joined once
      assert.isAtMost(concatenated, 2 * 2 * (text.length + 1024))
    }).pipe(Effect.scoped))

  it("the framer reads a line split over many chunks as one, whatever the chunk size", () => {
    const lines = [
      "{\"type\":\"session\",\"framing\":\"crc32\"}",
      "{\"commit\":2,\"crc\":\"XXXXXXXX\"}",
      "a".repeat(3000),
      "b"
    ]
    const crc = (zlib.crc32(Buffer.from(`${lines[2]}\n${lines[3]}\n`)) >>> 0).toString(16).padStart(8, "0")
    const bytes = Buffer.from(`${lines.join("\n").replace("XXXXXXXX", crc)}\n`)
    for (const size of [1, 7, 1000, 4096]) {
      const framer = new Framer(1 << 20)
      const records = []
      for (let at = 0; at < bytes.length; at += size) records.push(...framer.push(bytes.subarray(at, at + size)))
      framer.finish()
      assert.isUndefined(framer.problem, `chunks of ${size}`)
      assert.deepStrictEqual(records.map((r) => r.text), [lines[2], lines[3]], `chunks of ${size}`)
      assert.isAtMost(framer.copied, 2 * bytes.length, `chunks of ${size}`)
    }
  })
})
