/**
 * Durability claims at the system-call level: a counting `FileSystem` (the Node one, with every file's
 * `sync` counted) shows that an append with `sync: true` fsyncs the session file and one without does not; and the
 * bytes of a torn commit are cut before the next append writes, so nothing of them stays behind the new commit.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import type { SessionStore } from "@harness/session"
import { eventsCommit, header, loadAll, texts } from "@harness/session/test/conformance"
import { ev, sessionId as sid, stamp } from "@harness/testkit/Events"
import { Effect, Layer, Ref } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"
import { markerOf } from "./files.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-durability-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const s1 = sid("s1")
const commitAt = (seq: number, ...lines: ReadonlyArray<string>) =>
  eventsCommit(stamp(lines.map((text) => ev.user(text)), { start: seq, time: 2_000 + seq }))

/** The Node file system with every `sync` of an opened file counted, by the path it was opened with. */
const countingFileSystem = (syncs: Ref.Ref<ReadonlyArray<string>>) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (base): FileSystem.FileSystem => ({
      ...base,
      open: (file, options) =>
        Effect.map(base.open(file, options), (opened): FileSystem.File =>
          // Every other member is the platform file's own, bound to it (it keeps its position in a field).
          new Proxy(opened, {
            get: (target, key) => {
              if (key === "sync") return Effect.zipRight(Ref.update(syncs, (all) => [...all, file]), target.sync)
              const value: unknown = Reflect.get(target, key, target)
              return typeof value === "function" ? value.bind(target) : value
            }
          }))
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

describe("JsonlStore durability", () => {
  it.live("sync: true fsyncs the session file (once per append); an append without it never does", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const syncs = yield* Ref.make<ReadonlyArray<string>>([])
      const store = yield* Effect.provide(JsonlStore.make({ directory: dir }), countingFileSystem(syncs))
      const file = path.join(dir, "s1.jsonl")
      yield* store.create(header(s1))
      yield* Ref.set(syncs, [])
      yield* store.append(s1, commitAt(0, "a"))
      yield* store.append(s1, commitAt(1, "b", "c"))
      const lease = yield* store.lease(s1)
      yield* store.append(s1, commitAt(3, "d"), { lease })
      assert.deepStrictEqual(yield* Ref.get(syncs), [], "unsynced appends")
      yield* store.append(s1, commitAt(4, "e"), { sync: true, lease })
      assert.deepStrictEqual(yield* Ref.get(syncs), [file], "a synced append")
      // the barrier of a log whose commits went out unsynced: an empty commit with sync
      yield* store.append(s1, { events: [], inbox: [] }, { sync: true, lease })
      assert.deepStrictEqual(yield* Ref.get(syncs), [file, file], "a synced empty commit")
      yield* store.append(s1, commitAt(5, "f"), { lease })
      assert.deepStrictEqual(yield* Ref.get(syncs), [file, file], "unsynced again")
      yield* lease.release
      assert.strictEqual((yield* loadAll(store, s1)).length, 6)
    }).pipe(Effect.scoped))

  it.live("a torn commit is cut before the next append: the file is the committed bytes and the new commit", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "s1.jsonl")
      const store = (f: (store: SessionStore.Service) => Effect.Effect<void, SessionStore.SessionStoreError>) =>
        Effect.flatMap(Effect.provide(JsonlStore.make({ directory: dir }), NodeFileSystem.layer), f)
      const first = commitAt(0, "first")
      yield* store((s) => s.create(header(s1), first))
      const committed = fs.readFileSync(file)
      // a long commit a crash tore near its end (never acknowledged), longer than what comes next
      const long = commitAt(1, "x".repeat(500), "y".repeat(500), "z".repeat(500))
      yield* store((s) => s.append(s1, long))
      const torn = fs.readFileSync(file).subarray(0, -10)
      fs.writeFileSync(file, torn)
      // a new store instance (no state from the write) appends a short commit
      const short = commitAt(1, "short")
      yield* store((s) => s.append(s1, short))
      const written = fs.readFileSync(file)
      const line = texts([short])[0]!
      assert.deepStrictEqual(written, Buffer.concat([committed, Buffer.from(`${markerOf(1, [line])}\n${line}\n`)]))
      assert.isBelow(written.length, torn.length, "the torn bytes are gone")
      const loaded = yield* Effect.flatMap(
        Effect.provide(JsonlStore.make({ directory: dir }), NodeFileSystem.layer),
        (s) => loadAll(s, s1)
      )
      assert.deepStrictEqual(loaded.map((r) => r.text), texts([first, short]))
      assert.strictEqual(written.toString("utf8").split("\n").length, 1 + 2 + 2 + 1)
    }).pipe(Effect.scoped))
})
