/**
 * The scan cache (ADR 0032): written beside the file with each snapshot, used by a later store instance to read only
 * the bytes after its boundary, and never trusted when it does not check out against the file: a missing, damaged,
 * mismatched or stale cache gives what a full scan of the file gives (figures, `hasMessage`, `load({ after })`).
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { MessageSource } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { accepted, events, eventsCommit, header, loadAll } from "@harness/session/test/conformance"
import { ev, messageId as mid, promptTurn, sessionId as sid } from "@harness/testkit/Events"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"
import { reframe } from "./files.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-cache-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `f` with a new store instance on `directory` (nothing cached in memory from an earlier one). */
const withStore = <A, E>(directory: string, f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(JsonlStore.make({ directory }), f).pipe(Effect.provide(NodeFileSystem.layer)))

const s1 = sid("s1")
const file = (dir: string) => path.join(dir, "s1.jsonl")
const cacheFile = (dir: string) => path.join(dir, "s1.scan-cache.json")

/**
 * Appends turns `from` … `to` - 1 of prompts (8 events each, with an accepted inbox record): most as one commit, every
 * fifth as single-record commits, so the file has framed groups and single lines.
 */
const appendTurns = (store: SessionStore.Service, from: number, to: number, seq: number, tag = "") =>
  Effect.gen(function*() {
    for (let turn = from; turn < to; turn++) {
      const inputs = [
        ev.user(`Prompt ${tag}${turn}`, MessageSource.user, `prompt-${tag}${turn}`),
        ...promptTurn(turn, "", `Answer ${turn}`).slice(1)
      ]
      const turnEvents = events(seq, inputs, 2_000 + turn)
      seq += turnEvents.length
      if (turn % 5 === 0) {
        yield* store.append(s1, { events: [], inbox: [accepted(`in-${tag}${turn}`, "x", 2_000 + turn)] })
        for (const event of turnEvents) yield* store.append(s1, eventsCommit([event]))
      } else {
        yield* store.append(s1, { events: turnEvents, inbox: [accepted(`in-${tag}${turn}`, "x", 2_000 + turn)] })
      }
    }
    return seq
  })

/** A session of 400 turns (3 600 records), with a snapshot (and so a scan cache) at its end. */
const build = (dir: string) =>
  withStore(dir, (store) =>
    Effect.gen(function*() {
      yield* store.create(header(s1))
      const seq = yield* appendTurns(store, 1, 401, 0)
      yield* store.saveSnapshot(s1, { seq: seq - 1, position: 3599, head: "{}", body: "[]" })
      return seq
    }))

const ids = ["prompt-1", "prompt-17", "prompt-xx", "prompt-400", "in-5", "in-400", "prompt-b1", "in-b2", "absent"]
const afters = [undefined, 0, 1023, 1500, 2500, 3598, 3599, 3700]

/** What a store says of `s1`, its first use being `first`. */
const observe = (store: SessionStore.Service, first: "hasMessage" | "list" | "load" = "hasMessage") =>
  Effect.gen(function*() {
    if (first === "list") yield* store.list
    if (first === "load") yield* loadAll(store, s1, 3000)
    const has = yield* Effect.forEach(ids, (id) => store.hasMessage(s1, mid(id)))
    const [summary] = yield* store.list
    const loads = yield* Effect.forEach(afters, (after) => loadAll(store, s1, after))
    return { has, summary, header: yield* store.header(s1), loads }
  })

/** What a full scan gives: the same files in another directory, without any scan cache. */
const truth = (dir: string) =>
  Effect.gen(function*() {
    const copy = yield* tempDir
    for (const name of fs.readdirSync(dir).filter((n) => !n.endsWith(".scan-cache.json"))) {
      fs.copyFileSync(path.join(dir, name), path.join(copy, name))
    }
    return yield* withStore(copy, (store) => observe(store))
  })

const assertAsScanned = (dir: string, what: string, first?: "hasMessage" | "list" | "load") =>
  Effect.gen(function*() {
    const expected = yield* truth(dir)
    const actual = yield* withStore(dir, (store) => observe(store, first))
    assert.deepStrictEqual(actual, expected, what)
    return actual
  })

/** Rewrites one field of the cache file. */
const editCache = (dir: string, edit: (cache: Record<string, unknown>) => void) => {
  const cache = JSON.parse(fs.readFileSync(cacheFile(dir), "utf8")) as Record<string, unknown>
  edit(cache)
  fs.writeFileSync(cacheFile(dir), JSON.stringify(cache))
}

/**
 * Changes `from` to `to` (as many bytes) at its first occurrence in the file, checksums recomputed: a file that
 * differs from what the cache was made from, yet holds together.
 */
const patchFile = (dir: string, from: string, to: string) => {
  const bytes = fs.readFileSync(file(dir))
  const at = bytes.indexOf(from)
  assert.isAtLeast(at, 0)
  bytes.write(to, at, "utf8")
  fs.writeFileSync(file(dir), reframe(bytes))
  return at
}

// Each test writes a 400-turn session (3 600 records, thousands of real appends): a few seconds on a quiet machine, up
// to 30 s beside a CPU hog. Real file I/O, no race: the bound is for the slowest machine, not vitest's default 30 s.
describe("JsonlStore scan cache (ADR 0032)", { timeout: 180_000 }, () => {
  it.live("a snapshot writes the cache; a later store reads only the bytes after it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* build(dir)
      const cache = JSON.parse(fs.readFileSync(cacheFile(dir), "utf8"))
      assert.strictEqual(cache.bytes, fs.statSync(file(dir)).size)
      assert.strictEqual(cache.records, 3600)
      assert.strictEqual(cache.events, 3200)
      assert.strictEqual(cache.messageIds.length, 800)
      const scanned = yield* assertAsScanned(dir, "the cache agrees with a scan")
      assert.deepStrictEqual(scanned.has, [true, true, false, true, true, true, false, false, false])
      assert.strictEqual(scanned.summary!.firstPrompt, "Prompt 1")
      // Damage inside the cached prefix that only a scan would read (a message id, the first prompt's text), far
      // from the bytes the cache checks: a store that uses the cache does not see it, a scan does.
      const at = patchFile(dir, "\"prompt-17\"", "\"prompt-xx\"")
      patchFile(dir, "\"Prompt 1\"", "\"Prompt X\"")
      assert.isBelow(at, cache.checkFrom)
      for (const first of ["hasMessage", "list", "load"] as const) {
        const cached = yield* withStore(dir, (store) => observe(store, first))
        assert.deepStrictEqual(cached.has.slice(1, 3), [true, false], first)
        assert.strictEqual(cached.summary!.firstPrompt, "Prompt 1", first)
        assert.deepStrictEqual(cached.summary, scanned.summary, first)
      }
      const rescanned = yield* truth(dir)
      assert.deepStrictEqual(rescanned.has.slice(1, 3), [false, true])
      assert.strictEqual(rescanned.summary!.firstPrompt, "Prompt X")
    }).pipe(Effect.scoped))

  it.live("records another process appended after the cache are scanned", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const seq = yield* build(dir)
      yield* withStore(dir, (store) => appendTurns(store, 1, 4, seq, "b"))
      const after = yield* assertAsScanned(dir, "after appends")
      assert.deepStrictEqual(after.has.slice(6), [true, true, false])
      assert.strictEqual(after.summary!.events, 3224)
      // the appending store also answers from the cache and its own appends
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          assert.isTrue(yield* store.hasMessage(s1, mid("prompt-17")))
          yield* appendTurns(store, 4, 5, seq + 24, "b")
          assert.isTrue(yield* store.hasMessage(s1, mid("in-b4")))
          assert.strictEqual((yield* store.list)[0]!.events, 3232)
        }))
      yield* assertAsScanned(dir, "after more appends", "load")
      // a store that never asked for an id saves the next cache: it holds the cached ids and the new ones
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          yield* appendTurns(store, 5, 6, seq + 32, "b")
          yield* store.saveSnapshot(s1, { seq: seq + 39, position: 3644, head: "{}", body: "[]" })
        }))
      const cache = JSON.parse(fs.readFileSync(cacheFile(dir), "utf8"))
      assert.strictEqual(cache.records, 3645)
      assert.strictEqual(cache.messageIds.length, 810)
      yield* assertAsScanned(dir, "from the next cache")
    }).pipe(Effect.scoped))

  it.live("a missing, damaged or mismatched cache falls back to a full scan", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* build(dir)
      const good = fs.readFileSync(cacheFile(dir), "utf8")
      // a cache that checks out but whose figures lie is used (that is what a cache is): every edit below breaks a
      // check, so a store that used it anyway would answer with these wrong figures and ids
      const lying = (cache: Record<string, unknown>) => {
        cache.events = 1
        cache.turns = 1
        cache.messageIds = ["absent"]
        cache.firstPrompt = null
      }
      editCache(dir, lying)
      const lied = yield* withStore(dir, (store) => observe(store))
      assert.strictEqual(lied.summary!.events, 1)
      assert.isTrue(lied.has.at(-1))
      const edits: ReadonlyArray<readonly [string, (cache: Record<string, unknown>) => void]> = [
        ["another format", (c) => (c.format = 2)],
        ["another inode", (c) => (c.ino = (c.ino as number) + 1)],
        ["another device", (c) => (c.dev = (c.dev as number) + 1)],
        ["another header", (c) => (c.header = (c.header as string).replace("1000", "1001"))],
        ["a boundary past the end", (c) => (c.bytes = (c.bytes as number) + 10)],
        ["a boundary off a commit", (c) => (c.bytes = (c.bytes as number) - 1)],
        ["another digest", (c) => (c.checkDigest = (c.checkDigest as string).replace(/^./, (d) =>
          d === "0" ? "1" : "0"))],
        ["ids of the wrong type", (c) => (c.messageIds = [1])],
        ["an index past the boundary", (c) => (c.offsets = [...(c.offsets as Array<number>), 1e9])]
      ]
      for (const [what, edit] of edits) {
        fs.writeFileSync(cacheFile(dir), good)
        editCache(dir, (c) => {
          lying(c)
          edit(c)
        })
        yield* assertAsScanned(dir, what)
      }
      for (const [what, text] of [["not JSON", "{\"format\":1,"], ["empty", ""], ["an array", "[]"]] as const) {
        fs.writeFileSync(cacheFile(dir), text)
        yield* assertAsScanned(dir, what)
      }
      fs.rmSync(cacheFile(dir))
      yield* assertAsScanned(dir, "no cache")
      // bytes before the boundary changed behind the store's back: the file cut short, or rewritten at its end
      fs.writeFileSync(cacheFile(dir), good)
      editCache(dir, lying)
      const full = fs.readFileSync(file(dir))
      fs.writeFileSync(file(dir), full.subarray(0, full.length - 100))
      yield* assertAsScanned(dir, "a file cut short")
      fs.writeFileSync(file(dir), full)
      patchFile(dir, "\"prompt-400\"", "\"prompt-4x0\"")
      yield* assertAsScanned(dir, "a file rewritten near its end")
    }).pipe(Effect.scoped))

  it.live("a truncate drops a cache that covers the bytes it cuts, and keeps one that ends before them", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const seq = yield* build(dir)
      yield* withStore(dir, (store) => appendTurns(store, 1, 3, seq, "b"))
      // past the cache's boundary: the cache stays, and the truncated store agrees with a scan
      yield* withStore(dir, (store) => store.truncate(s1, 3600 + 9 + 3))
      assert.isTrue(fs.existsSync(cacheFile(dir)))
      const kept = yield* assertAsScanned(dir, "truncated after the boundary")
      assert.deepStrictEqual(kept.has.slice(6), [true, true, false])
      // before it (inside a commit: its marker is rewritten): the cache goes, then another process appends other
      // records until the file is longer than the boundary was
      const old = fs.readFileSync(cacheFile(dir), "utf8")
      yield* withStore(dir, (store) => store.truncate(s1, 1000))
      assert.isFalse(fs.existsSync(cacheFile(dir)))
      yield* withStore(
        dir,
        (store) => Effect.flatMap(store.list, ([summary]) => appendTurns(store, 1, 400, summary!.events, "c"))
      )
      assert.isAbove(fs.statSync(file(dir)).size, JSON.parse(old).bytes)
      const after = yield* assertAsScanned(dir, "truncated before the boundary, then appended to")
      assert.deepStrictEqual(after.has.slice(0, 6), [true, true, false, false, true, false])
      // the stale cache put back (a backup restored) beside the file now there is not used either
      fs.writeFileSync(cacheFile(dir), old)
      yield* assertAsScanned(dir, "a stale cache put back")
    }).pipe(Effect.scoped))

  it.live("remove takes the cache with the session; a session created again under the id never uses an old one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* build(dir)
      const old = fs.readFileSync(cacheFile(dir))
      yield* withStore(dir, (store) => store.remove(s1))
      assert.isFalse(fs.existsSync(cacheFile(dir)))
      // The same header, other records; the old cache restored beside the new file (as a backup tool could).
      yield* withStore(dir, (store) =>
        Effect.gen(function*() {
          yield* store.create(header(s1))
          yield* appendTurns(store, 1, 500, 0, "d")
        }))
      fs.writeFileSync(cacheFile(dir), old)
      const after = yield* assertAsScanned(dir, "a new session under the id")
      assert.deepStrictEqual(after.has.slice(0, 4), [false, false, false, false])
      // created again over a cache left behind: the cache is removed with the create
      fs.rmSync(file(dir))
      yield* withStore(dir, (store) => store.create(header(s1), eventsCommit(events(0, [ev.user("again")]))))
      assert.isFalse(fs.existsSync(cacheFile(dir)))
    }).pipe(Effect.scoped))
})
