import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@harness/session"
import { accepted, conformance, events, eventsCommit, header, loadAll, texts } from "@harness/session/test/conformance"
import { ev, messageId as mid, promptTurn, sessionId as sid } from "@harness/testkit/Events"
import { Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"
import { fileName } from "../src/internal/jsonlStore.js"
import { markerOf, reframe, replaceFirst } from "./files.js"

/** A fresh temporary directory, deleted when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const inDirectory = (directory: string) => JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer))

conformance("jsonl", Layer.unwrapScoped(Effect.map(tempDir, (dir) => inDirectory(path.join(dir, "sessions")))))

/** Runs `f` with a store on `directory` (a new store instance each time: nothing cached from an earlier one). */
const withStore = <A, E>(directory: string, f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(SessionStore.SessionStore, f).pipe(Effect.provide(inDirectory(directory))))

const s1 = sid("s1")
const turn = events(0, promptTurn(1, "Hello there", "Hi!"))
const commit: SessionStore.Commit = { events: turn, inbox: [accepted("prompt-1", "Hello there")] }

describe("JsonlStore files", () => {
  it.live("a session is a header line, then each commit: a marker with its checksum and one record per line", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), commit)
          yield* store.append(s1, eventsCommit(events(turn.length, [ev.user("idle")])))
        }))
      const lines = fs.readFileSync(path.join(dir, "s1.jsonl"), "utf8").split("\n")
      assert.deepStrictEqual(JSON.parse(lines[0]!), { type: "session", order: 0, framing: "crc32", ...header(s1) })
      const idle = JSON.stringify(events(turn.length, [ev.user("idle")])[0])
      assert.deepStrictEqual(lines.slice(1), [
        markerOf(turn.length + 1, texts([commit])),
        ...texts([commit]),
        markerOf(1, [idle]),
        idle,
        ""
      ])
      assert.isTrue(lines.some((line) => line.includes("\"type\":\"turn/start\"")))
    }).pipe(Effect.scoped))

  it("file names are safe, distinct where ids differ, and bounded", () => {
    assert.strictEqual(fileName("s1"), "s1")
    assert.strictEqual(fileName("a-b_c"), "a-b_c")
    assert.notStrictEqual(fileName("CASE"), fileName("case"))
    assert.strictEqual(fileName(".."), "~002e~002e")
    assert.strictEqual(fileName("sl/ash"), "sl~002fash")
    assert.notStrictEqual(fileName("~0041"), fileName("A"))
    assert.isAtMost(fileName("é".repeat(500)).length, 200)
    assert.notStrictEqual(fileName("é".repeat(500)), fileName("é".repeat(501)))
  })

  it.live("a commit torn by a crash is not loaded, and the next append cuts it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "s1.jsonl")
      yield* withStore(dir, (store) => store.create(header(s1), commit))
      const whole = fs.readFileSync(file)
      const second: SessionStore.Commit = eventsCommit(events(turn.length, promptTurn(2, "Again", "Yes").slice(0, 4)))
      yield* withStore(dir, (store) => store.append(s1, second))
      const full = fs.readFileSync(file)
      // every cut inside the second commit (a group of 4 lines after its marker) leaves the first commit only
      for (const cut of [whole.length + 1, whole.length + 20, full.length - 40, full.length - 1]) {
        fs.writeFileSync(file, full.subarray(0, cut))
        const loaded = yield* withStore(dir, (store) => loadAll(store, s1))
        assert.deepStrictEqual(loaded.map((r) => r.text), texts([commit]), `cut at ${cut}`)
        const summary = (yield* withStore(dir, (store) => store.list))[0]!
        assert.strictEqual(summary.events, turn.length)
      }
      // the next append lands after the committed end; the torn bytes are gone
      yield* withStore(dir, (store) => store.append(s1, second))
      assert.deepStrictEqual(fs.readFileSync(file), full)
      // a single-record commit without its newline is torn too
      const single = eventsCommit(events(turn.length + 4, [ev.user("x")]))
      yield* withStore(dir, (store) => store.append(s1, single))
      fs.writeFileSync(file, fs.readFileSync(file).subarray(0, -1))
      assert.strictEqual((yield* withStore(dir, (store) => loadAll(store, s1))).length, texts([commit, second]).length)
    }).pipe(Effect.scoped))

  it.live("a record that does not decode but is framed right reaches the caller as it is", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "s1.jsonl")
      yield* withStore(dir, (store) => store.create(header(s1), commit))
      // what a writer with a bug would leave: the checksum is the record's (the session, not the store, decodes)
      fs.writeFileSync(file, reframe(replaceFirst(fs.readFileSync(file), "\"turn/start\"", "\"turn/st\u0000rt")))
      const loaded = yield* withStore(dir, (store) => loadAll(store, s1))
      assert.strictEqual(loaded.length, texts([commit]).length)
      assert.include(loaded[2]!.text, "turn/st\u0000rt")
    }).pipe(Effect.scoped))

  it.live("truncating inside a commit rewrites its marker, and the file stays loadable and appendable", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (store) => store.create(header(s1), commit))
      yield* withStore(dir, (store) => store.truncate(s1, 3))
      const lines = fs.readFileSync(path.join(dir, "s1.jsonl"), "utf8").split("\n")
      const before = markerOf(turn.length + 1, texts([commit]))
      assert.strictEqual(lines[1], markerOf(3, texts([commit]).slice(0, 3)).padEnd(before.length, " "))
      const loaded = yield* withStore(dir, (store) => loadAll(store, s1))
      assert.deepStrictEqual(loaded.map((r) => r.text), texts([commit]).slice(0, 3))
      const next = eventsCommit(events(2, [ev.user("after")]))
      yield* withStore(dir, (store) => store.append(s1, next))
      const again = yield* withStore(dir, (store) => loadAll(store, s1))
      assert.deepStrictEqual(again.map((r) => r.text), [...texts([commit]).slice(0, 3), ...texts([next])])
    }).pipe(Effect.scoped))

  it.live("a file whose header is not a session header is Corrupt", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (store) => store.create(header(s1), commit))
      const file = path.join(dir, "s1.jsonl")
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("\"version\":1", "\"version\":7"))
      const error = yield* Effect.flip(withStore(dir, (store) => store.header(s1)))
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, "s1.jsonl")
    }).pipe(Effect.scoped))

  it.live("another process's appends are seen: state is rebuilt when the file changed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (a) =>
        Effect.gen(function*() {
          yield* a.create(header(s1), commit)
          assert.isFalse(yield* a.hasMessage(s1, mid("late")))
          yield* withStore(dir, (b) => b.append(s1, { events: [], inbox: [accepted("late", "x")] }))
          const [summary] = yield* a.list
          assert.strictEqual(summary!.bytes, fs.statSync(path.join(dir, "s1.jsonl")).size)
          assert.isTrue(yield* a.hasMessage(s1, mid("late")))
          yield* a.append(s1, eventsCommit(events(turn.length, [ev.user("mine")])))
          assert.strictEqual((yield* loadAll(a, s1)).length, texts([commit]).length + 2)
        }))
    }).pipe(Effect.scoped))

  it.live("ADR 0027: the snapshot is a head file and a body file; a first-format snapshot file is ignored", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1), commit)
          yield* store.saveSnapshot(s1, { seq: 7, position: 8, head: "{\"h\":1}", body: "[\"body\"]" })
        }))
      const headFile = path.join(dir, "s1.snapshot.json")
      const bodyFile = path.join(dir, "s1.snapshot-body")
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(headFile, "utf8")), { seq: 7, position: 8, head: "{\"h\":1}" })
      assert.strictEqual(
        fs.readFileSync(bodyFile, "utf8"),
        `${JSON.stringify({ seq: 7, position: 8, head: "{\"h\":1}" })}\n["body"]`
      )
      // A body file left by another save (a crash between the two renames) is not this head's body.
      fs.writeFileSync(bodyFile, `${JSON.stringify({ seq: 5, position: 5, head: "{}" })}\n["other"]`)
      const stale = yield* withStore(
        dir,
        (store) =>
          Effect.flatMap(
            store.loadSnapshot(s1),
            (found) =>
              Effect.map(Option.getOrThrow(found).body, (body) => [Option.getOrThrow(found).head, body] as const)
          )
      )
      assert.deepStrictEqual(stale, ["{\"h\":1}", Option.none()])
      // The first format: one file with the whole text.
      fs.rmSync(bodyFile)
      fs.writeFileSync(headFile, JSON.stringify({ seq: 7, position: 8, text: "{\"format\":\"harness/snapshot\"}\n[]" }))
      assert.isTrue(Option.isNone(yield* withStore(dir, (store) => store.loadSnapshot(s1))))
    }).pipe(Effect.scoped))

  it.live("a load from a position far into the file seeks by the index and gives what a full load gives", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // Commits of 1, 3 and 700 records (single lines and framed groups), about 5 000 records in all.
      const sizes = Array.from({ length: 21 }, (_, i) => [1, 3, 700][i % 3]!)
      const after = [0, 1022, 1023, 1024, 1025, 2047, 3000, 4000, 4900]
      const check = (store: SessionStore.Service, what: string) =>
        Effect.gen(function*() {
          const all = yield* loadAll(store, s1)
          for (const a of after) {
            assert.deepStrictEqual(yield* loadAll(store, s1, a), all.slice(a + 1), `${what}: after ${a}`)
          }
          return all
        })
      const written = yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          let seq = 0
          for (const size of sizes) {
            yield* store.append(
              s1,
              eventsCommit(events(seq, Array.from({ length: size }, (_, i) => ev.user(`m${seq + i}`))))
            )
            seq += size
          }
          return yield* check(store, "indexed by the appends")
        }))
      assert.strictEqual(written.length, sizes.reduce((a, b) => a + b, 0))
      // A fresh store indexes by its scan; a truncate in the middle and later appends keep loads right.
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* check(store, "indexed by the scan"), written)
          yield* store.truncate(s1, 2500)
          yield* store.append(s1, eventsCommit(events(2500, Array.from({ length: 1500 }, (_, i) => ev.user(`n${i}`)))))
          const all = yield* check(store, "after a truncate")
          assert.strictEqual(all.length, 4000)
          assert.deepStrictEqual(all.slice(0, 2500), written.slice(0, 2500))
        }))
    }).pipe(Effect.scoped))
})
