/**
 * One damaged session never hides the others: `list` leaves out a file whose header does not decode,
 * a file not of the store's format and a file whose framing is damaged, `damaged` names each with its problem, and
 * `remove` deletes it with everything beside it (lock, snapshot, scan cache).
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Sessions, SessionStore } from "@harness/session"
import { header } from "@harness/session/test/conformance"
import { sessionId as sid } from "@harness/testkit/Events"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"
import { fileName } from "../src/internal/jsonlStore.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-damaged-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const inStore = <A, E>(directory: string, f: Effect.Effect<A, E, SessionStore.SessionStore>) =>
  Effect.scoped(f.pipe(Effect.provide(JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer)))))

const store = SessionStore.SessionStore

describe("JsonlStore damaged sessions", () => {
  it.live("list leaves damaged sessions out, damaged names each with its problem, remove deletes them whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const odd = sid("Odd id/1")
      yield* inStore(
        dir,
        Effect.gen(function*() {
          const s = yield* store
          for (const id of ["good-1", "bad-header", "good-2", "torn-frame"]) yield* s.create(header(sid(id)))
          yield* s.create(header(odd))
        })
      )
      const file = (id: string) => path.join(dir, `${fileName(id)}.jsonl`)
      // a header that does not decode (another version), a file not of this format, a commit whose checksum fails,
      // and a header whose id is not its file's
      fs.writeFileSync(
        file("bad-header"),
        fs.readFileSync(file("bad-header"), "utf8").replace("\"version\":1", "\"version\":7")
      )
      fs.writeFileSync(path.join(dir, "notes.jsonl"), "hello\n")
      fs.appendFileSync(file("torn-frame"), "{\"commit\":1,\"crc\":\"00000000\"}\n{\"seq\":0}\n")
      fs.writeFileSync(file(odd), fs.readFileSync(file(odd), "utf8").replace("Odd id/1", "Another"))
      // beside the damaged one: its lock, snapshot and scan cache
      for (const extra of [".lock", ".snapshot.json", ".snapshot-body", ".scan-cache.json"]) {
        fs.writeFileSync(path.join(dir, `bad-header${extra}`), "{}")
      }
      const [listed, damaged] = yield* inStore(dir, Effect.flatMap(store, (s) => Effect.all([s.list, s.damaged])))
      assert.deepStrictEqual(listed.map((s) => s.header.id), ["good-1", "good-2"])
      assert.deepStrictEqual(damaged.map((d) => d.id).sort(), ["Odd id/1", "bad-header", "notes", "torn-frame"])
      const problem = (id: string) => damaged.find((d) => d.id === id)!.problem
      assert.include(problem("bad-header"), "header")
      assert.include(problem("notes"), "does not start with a session header")
      assert.include(problem("torn-frame"), "checksum")
      assert.include(problem("Odd id/1"), "\"Another\"")
      // the session API too: list and damaged, then remove by the reported ids
      const sessions = yield* inStore(dir, Effect.all([Sessions.list, Sessions.damaged]))
      assert.deepStrictEqual(sessions[0].map((s) => s.id), ["good-1", "good-2"])
      assert.strictEqual(sessions[1].length, 4)
      yield* inStore(dir, Effect.forEach(damaged, (d) => Sessions.remove(d.id), { discard: true }))
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["good-1.jsonl", "good-2.jsonl"])
      const after = yield* inStore(dir, Effect.flatMap(store, (s) => Effect.all([s.list, s.damaged])))
      assert.deepStrictEqual(after[0].map((s) => s.header.id), ["good-1", "good-2"])
      assert.deepStrictEqual(after[1], [])
    }).pipe(Effect.scoped))

  it.live("a damaged session stays damaged for a store that listed it before, and a repaired one comes back", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* inStore(
        dir,
        Effect.gen(function*() {
          const s = yield* store
          yield* s.create(header(sid("s1")))
          const whole = fs.readFileSync(path.join(dir, "s1.jsonl"))
          assert.strictEqual((yield* s.list).length, 1)
          fs.writeFileSync(path.join(dir, "s1.jsonl"), "not a session\n")
          assert.deepStrictEqual(yield* s.list, [])
          assert.deepStrictEqual((yield* s.damaged).map((d) => d.id), ["s1"])
          fs.writeFileSync(path.join(dir, "s1.jsonl"), whole)
          assert.deepStrictEqual((yield* s.list).map((x) => x.header.id), ["s1"])
          assert.deepStrictEqual(yield* s.damaged, [])
        })
      )
    }).pipe(Effect.scoped))
})
