/**
 * Crash repair (R106) over real JSONL files cut by hand: every cut inside the tail loads, is balanced, keeps every
 * complete commit, and leaves no torn bytes on disk; damage before the last committed turn/end is a readable error.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { LogCheck, SessionLog } from "@harness/session"
import { block, ev, promptTurn, sessionId } from "@harness/testkit/Events"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"
import { reframe, replaceFirst } from "./files.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-repair-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `f` over a fresh store instance on `directory` (nothing cached from an earlier one). */
const withStore = <A, E>(directory: string, f: Effect.Effect<A, E, SessionStore.SessionStore>) =>
  Effect.scoped(f.pipe(Effect.provide(JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer)))))

const sid = sessionId("s1")
const file = (dir: string) => path.join(dir, "s1.jsonl")

/** Writes `inputs` as one flushed commit of a new session `s1` in `dir`. */
const writeFlushed = (dir: string, inputs: ReadonlyArray<SessionEvent.SessionEventInput>) =>
  withStore(
    dir,
    Effect.flatMap(SessionLog.make({ id: sid }), (log) => Effect.zipRight(log.appendAll(inputs), log.flush))
  )

const openTurn: ReadonlyArray<SessionEvent.SessionEventInput> = [
  ev.user("Run it", MessageSource.user, "p2"),
  ev.turnStart(2),
  ev.stepStart(2, 1),
  ev.chunk(2, 1, { type: "text-delta", delta: "Running" }),
  ev.assistant(2, 1, [block.text("Running"), block.toolCall("a", "sh", "{}"), block.toolCall("b", "sh", "{}")]),
  ev.toolCall(2, 1, "a", "sh")
]

/** Turn 1 in one commit, then turn 2's events one commit each (flushed), as a crash could leave them. */
const writeSession = (dir: string) =>
  withStore(
    dir,
    Effect.gen(function*() {
      const log = yield* SessionLog.make({ id: sid })
      assert.strictEqual(log.commitMode, "write-behind")
      yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
      yield* log.flush
      for (const input of openTurn) {
        yield* log.append(input)
        yield* log.flush
      }
      return yield* log.events
    })
  )

describe("JsonlStore crash repair (R106)", () => {
  it.live(
    "every cut after the last turn/end: loads balanced, keeps each complete line, truncates the torn bytes",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const written = yield* writeSession(dir)
        const full = fs.readFileSync(file(dir))
        const lines = full.toString("utf8").split("\n")
        // the committed end of turn 1: header, marker, 8 records
        const turn1End = Buffer.byteLength(lines.slice(0, 10).join("\n") + "\n")
        let cuts = 0
        for (let cut = turn1End; cut <= full.length; cut += 37) {
          fs.writeFileSync(file(dir), full.subarray(0, cut))
          // whole commits of turn 2: one record each, after its marker
          const complete = Math.floor((full.subarray(0, cut).toString("utf8").split("\n").length - 1 - 10) / 2)
          const events = yield* withStore(dir, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
          assert.deepStrictEqual(events.slice(0, 8 + complete), written.slice(0, 8 + complete), `cut at ${cut}`)
          assert.deepStrictEqual(LogCheck.checkLog(events), [], `cut at ${cut}`)
          if (complete >= 2) assert.deepStrictEqual(events.at(-1)!.data, { turn: 2, reason: { kind: "interrupted" } })
          // physically: the file ends with a whole line, and a second open reads the same log and repairs nothing
          const after = fs.readFileSync(file(dir))
          assert.strictEqual(after.at(-1), 0x0a, `cut at ${cut}`)
          const again = yield* withStore(dir, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
          assert.deepStrictEqual(again, events)
          assert.deepStrictEqual(fs.readFileSync(file(dir)), after)
          cuts++
        }
        assert.isAtLeast(cuts, 20)
      }).pipe(Effect.scoped),
    180_000
  )

  it.live("a torn tail without a newline is cut from the file on open, even with nothing to repair", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeFlushed(dir, promptTurn(1, "Hi", "Hello"))
      const whole = fs.readFileSync(file(dir))
      fs.appendFileSync(file(dir), "{\"seq\":8,\"time\":1,\"type\":\"user/mess")
      const events = yield* withStore(dir, Effect.flatMap(SessionLog.open(sid), (log) => log.events))
      assert.strictEqual(events.length, 8)
      assert.deepStrictEqual(fs.readFileSync(file(dir)), whole)
    }).pipe(Effect.scoped))

  it.live("damage before the last committed turn/end fails open with a readable error and changes nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeFlushed(dir, [...promptTurn(1, "Hi", "Hello"), ...promptTurn(2, "More", "Ok")])
      // framed right (its checksum recomputed): the session's own check finds it
      const damaged = reframe(
        replaceFirst(fs.readFileSync(file(dir)), "\"type\":\"step/start\"", "\"type\":\"step/st@rt\"")
      ).toString("utf8")
      fs.writeFileSync(file(dir), damaged)
      const error = yield* Effect.flip(withStore(dir, SessionLog.open(sid)))
      assert.strictEqual(error.reason, "corrupt")
      assert.strictEqual(error.position, 3)
      assert.include(error.message, "session \"s1\" is corrupt at stored record 3")
      assert.include(error.message, "step/st@rt")
      assert.strictEqual(fs.readFileSync(file(dir), "utf8"), damaged)
    }).pipe(Effect.scoped))
})
