/**
 * `harness sessions compact` over a SQLite file written by a real agent, run as the real executable: it logs one
 * `compaction` record after the history it summarises (which stays as it was), says what it replaced, and refuses
 * a session that does not exist or that another live process writes.
 */
import { assert, describe, it } from "@effect/vitest"
import { History, LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Effect } from "effect"
import { join } from "node:path"
import { onStore, scopedDir, storedEvents, writeOfflineSession } from "./fixtures.js"
import { harness, serve, tempDir } from "./support.js"

/** Writes a two-turn session with the offline model; returns its id. */
const writeSession = (filename: string) => writeOfflineSession(filename, ["hello there", "what is a cat"])

/** A two-turn session in a SQLite file of a temporary directory (removed with the scope), and its events. */
const stored = Effect.gen(function*() {
  const dir = yield* scopedDir
  const db = join(dir, "s.db")
  const id = yield* writeSession(db)
  return { dir, db, id, before: yield* storedEvents(db, id) }
})

describe("harness sessions compact", { timeout: 300_000 }, () => {
  it.live("logs a manual compaction after the history it summarises and says what it replaced (R144, R148, R149)", () =>
    Effect.gen(function*() {
      const { before, db, dir, id } = yield* stored
      const cli = onStore(`sqlite:${db}`, dir)

      const done = yield* cli("sessions", "compact", id.slice(0, 6))
      assert.strictEqual(done.code, 0, done.stderr)
      const after = yield* storedEvents(db, id)
      assert.deepStrictEqual(LogCheck.checkLog(after), [])
      assert.deepStrictEqual(after.slice(0, before.length), before, "the log before the compaction is unchanged")
      const records = after.flatMap((e) => (e.type === "compaction" ? [e] : []))
      assert.strictEqual(records.length, 1)
      const record = records[0]!
      assert.strictEqual(record.data.reason, "manual")
      // It summarises everything logged before its turn (and that turn's opening).
      assert.isAtLeast(record.data.through, before.length - 1)
      assert.isBelow(record.data.through, record.seq)
      assert.isAbove(record.data.messages, 0)
      assert.include(
        done.stdout,
        `compacted session ${id}: seqs 0–${record.data.through} (${record.data.messages} messages, ` +
          `~${record.data.estimate} tokens) are now a summary of ${record.data.summary.length} characters by offline`
      )
      assert.include(done.stdout, `(the compaction record is #${record.seq})`)
      // What a later request sees: the summary first, in place of the messages it replaced.
      const derived = History.deriveMessages(after)
      assert.strictEqual(derived.length, 1)
      assert.include(JSON.stringify(derived[0]), JSON.stringify(record.data.summary).slice(1, -1))

      const show = yield* cli("sessions", "show", id)
      assert.include(show.stdout, "compaction (manual)")
      assert.include(show.stdout, "the log checks clean")

      const missing = yield* cli("sessions", "compact", "ffffffff")
      assert.strictEqual(missing.code, 1)
      assert.include(missing.stderr, "no session \"ffffffff\" in this store")
    }).pipe(Effect.scoped))

  it.live("refuses a session another live process writes, naming the lease, and changes nothing (R149)", () =>
    Effect.gen(function*() {
      const { before, db, dir, id } = yield* stored
      // This test process takes the session's writer lease and holds it while the CLI runs.
      const busy = yield* Effect.scoped(Effect.gen(function*() {
        const held = yield* SessionLog.open(id)
        yield* Effect.addFinalizer(() => Effect.ignore(held.close))
        return yield* Effect.promise(() =>
          harness(["sessions", "compact", "--store", `sqlite:${db}`, id], { cwd: dir })
        )
      })).pipe(Effect.provide(SqliteStore.layer({ filename: db })))
      assert.strictEqual(busy.code, 1)
      assert.include(busy.stderr, `cannot open session ${id}`)
      assert.include(busy.stderr, `is being written by process ${process.pid}`)
      assert.deepStrictEqual(yield* storedEvents(db, id), before)
    }).pipe(Effect.scoped))

  it.live("with --context-window, a resumed prompt compacts the history on its own first (R146, R147)", () =>
    Effect.gen(function*() {
      const { before, db, dir, id } = yield* stored
      const plain = yield* Effect.promise(() =>
        harness(["sessions", "resume", "--store", `sqlite:${db}`, id, "and a dog?"], { cwd: dir })
      )
      assert.strictEqual(plain.code, 0, plain.stderr)
      const unwindowed = yield* storedEvents(db, id)
      assert.isFalse(unwindowed.some((e) => e.type === "compaction"), "without a window nothing compacts by itself")

      const resumed = yield* Effect.promise(() =>
        harness(["sessions", "resume", "--store", `sqlite:${db}`, "--context-window", "200", id, "and a bird?"], {
          cwd: dir
        })
      )
      assert.strictEqual(resumed.code, 0, resumed.stderr)
      const after = yield* storedEvents(db, id)
      assert.deepStrictEqual(LogCheck.checkLog(after), [])
      assert.deepStrictEqual(after.slice(0, unwindowed.length), unwindowed)
      const automatic = after.filter((e) => e.type === "compaction" && e.data.reason === "automatic")
      assert.isAtLeast(automatic.length, 1, "the resumed turn compacted before its request")
      assert.isAbove(after.length, before.length)
      // The turn still answered the prompt after compacting.
      const last = after.findLast((e) => e.type === "turn/end")
      assert.strictEqual(last?.type === "turn/end" ? last.data.reason.kind : undefined, "completed")
    }).pipe(Effect.scoped))

  it.live("R221, R222: the model's HARNESS_CONTEXT_WINDOWS entry and --compact-threshold reach the agent", () =>
    Effect.gen(function*() {
      const { before, db, dir, id } = yield* stored
      // A window of 100 000 tokens compacts nothing this small at the default 0.8; at 0.0014 (140 tokens) the prompt's
      // step does (about 160 tokens estimated), and the steps after the compaction (about 125) do not.
      const resumed = yield* Effect.promise(() =>
        harness(["sessions", "resume", "--store", `sqlite:${db}`, "--compact-threshold", "0.0014", id, "and a bird?"], {
          cwd: dir,
          env: { HARNESS_CONTEXT_WINDOWS: JSON.stringify({ offline: 100_000, other: 10 }) }
        })
      )
      assert.strictEqual(resumed.code, 0, resumed.stderr)
      const after = yield* storedEvents(db, id)
      assert.deepStrictEqual(LogCheck.checkLog(after), [])
      const automatic = after.flatMap((e) => e.type === "compaction" && e.data.reason === "automatic" ? [e.data] : [])
      assert.strictEqual(automatic.length, 1)
      assert.isAbove(automatic[0]!.estimate, 140)
      assert.isBelow(automatic[0]!.estimate, 0.8 * 100_000)
      assert.deepStrictEqual(after.slice(0, before.length), before)
    }).pipe(Effect.scoped))

  it.live("--remote compacts a session on a Harness server (R149)", () =>
    Effect.acquireUseRelease(
      Effect.promise(async () => {
        const [dir, cleanup] = tempDir()
        const server = await serve(dir, { HARNESS_SERVER_TOKENS: "cli:send:remote-secret" }, ["--store", "memory"])
        return { dir, cleanup, server }
      }),
      ({ dir, server }) =>
        Effect.promise(async () => {
          const env = { HARNESS_REMOTE_TOKEN: "remote-secret" }
          const ran = await harness(["run", "--remote", server.url, "hello"], { cwd: dir, env })
          assert.strictEqual(ran.code, 0, ran.stderr)
          const id = /session ([0-9a-f-]{36}) · /.exec(ran.stderr)![1]!
          const done = await harness(["sessions", "compact", "--remote", server.url, id.slice(0, 8)], { cwd: dir, env })
          assert.strictEqual(done.code, 0, done.stderr)
          assert.match(done.stdout, new RegExp(`compacted session ${id}: seqs 0–\\d+ \\(2 messages, ~\\d+ tokens\\)`))
          const missing = await harness(["sessions", "compact", "--remote", server.url, "ffffffff"], { cwd: dir, env })
          assert.strictEqual(missing.code, 1)
          assert.include(missing.stderr, `no session "ffffffff" on ${server.url}`)
        }),
      ({ cleanup, server }) => Effect.promise(() => server.stop().then(cleanup))
    ))
})
