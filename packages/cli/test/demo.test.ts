/**
 * `harness demo` and `harness sessions`: the walkthrough completes, its session reloads from the SQLite file with
 * a clean log, and the sessions commands show, export, fork and remove it.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Effect, Schema } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { scopedDir, storedEvents } from "./fixtures.js"
import { harness } from "./support.js"

const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(SessionEvent.SessionEvent))

describe("harness demo", { timeout: 300_000 }, () => {
  it.live("walks through queue, steer, inject, withdraw, cancel-with-keepInbox and a two-round goal; the session reloads clean (R28, R77, R81, R100)", () =>
    Effect.gen(function*() {
      const dir = yield* scopedDir
      writeFileSync(join(dir, "README.md"), "# A demo workspace\n")
      const db = join(dir, "sessions.db")
      const store = `sqlite:${db}`
      const demo = yield* Effect.promise(() => harness(["demo", "--store", store], { cwd: dir }))
      assert.strictEqual(demo.code, 0, demo.stderr)
      const out = demo.stdout
      assert.include(out, "offline model")
      assert.include(out, "tool call list_dir()")
      assert.include(out, "inbox: + steering \"Keep it brief, please.\"")
      assert.include(out, "turn 2 ends: aborted")
      assert.include(out, "inbox: withdrew \"What is a dog?\"")
      assert.include(out, "goal round 1: List the files")
      assert.include(out, "goal round 2: List the files")
      assert.match(out, /Goal [0-9a-f]+ is complete after 2 round\(s\)\./)
      assert.include(out, "the log checks clean")
      assert.include(out, `The session is stored in ${store}`)
      const id = /sessions show ([0-9a-f-]{36})/.exec(out)?.[1]
      assert.isDefined(id)

      const events = yield* storedEvents(db, id!)
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
      // The steer landed inside turn 1, after the tool result; the injection is a plugin-sourced user message.
      const steering = events.find((e) => e.type === "steering/message")
      assert.strictEqual(steering?.type === "steering/message" && steering.data.turn, 1)
      const toolResult = events.find((e) => e.type === "tool/result")
      assert.isTrue(toolResult !== undefined && steering !== undefined && toolResult.seq < steering.seq)
      assert.isTrue(
        events.some((e) =>
          e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === "demo"
        )
      )
      // The queued follow-ups survived the keepInbox cancel and ran afterwards.
      // The withdrawn follow-up never ran (it is not in the log); the goal took two rounds, the second completing it.
      const ends = events.flatMap((e) => (e.type === "turn/end" ? [e.data.reason.kind] : []))
      assert.deepStrictEqual(ends, ["completed", "aborted", "completed", "completed", "completed"])
      assert.isFalse(JSON.stringify(events).includes("What is a dog?"))
      const rounds = events.flatMap((e) =>
        e.type === "user/message" && e.data.source.kind === "goal" && e.data.source.round > 0
          ? [e.data.source.round]
          : []
      )
      assert.deepStrictEqual(rounds, [1, 2])
      assert.isTrue(events.some((e) => e.type === "tool/result" && e.data.name === "update_goal" && !e.data.isError))
      assert.isTrue(events.some((e) =>
        e.type === "tool/result" && e.data.name === "read_file" && !e.data.isError &&
        e.data.content.some((b) => b.text.includes("A demo workspace"))
      ))

      const show = yield* Effect.promise(() =>
        harness(["sessions", "show", "--store", store, id!.slice(0, 8)], { cwd: dir })
      )
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, `session ${id}`)
      assert.include(show.stdout, "turn 2 ends: aborted")
      assert.include(show.stdout, "steering (user): Keep it brief, please.")
      assert.include(show.stdout, "goal round 2: List the files")
      assert.match(show.stdout, /goal complete → complete: List the files/)
      assert.include(show.stdout, `${events.length} events; the log checks clean.`)

      const jsonl = yield* Effect.promise(() => harness(["sessions", "export", "--store", store, id!], { cwd: dir }))
      assert.strictEqual(jsonl.code, 0, jsonl.stderr)
      // The export is the stored records as they are: the events and the durable inbox's records (ADR 0017).
      const exported = jsonl.stdout.trim().split("\n")
        .filter((line) => !String(JSON.parse(line).type).startsWith("inbox/"))
        .map((line) => decodeEvent(line))
      assert.deepStrictEqual(exported.map((e) => e.seq), events.map((e) => e.seq))

      const md = yield* Effect.promise(() =>
        harness(["sessions", "export", "--store", store, "--format", "md", id!], { cwd: dir })
      )
      assert.include(md.stdout, "## Turn 2")
      assert.include(md.stdout, "**Steering (user):** Keep it brief, please.")

      // Fork in the middle of turn 2: the copy is cut back to the end of turn 1 (a seed must be balanced, R97).
      const turn2 = events.find((e) => e.type === "turn/start" && e.data.turn === 2)!
      const fork = yield* Effect.promise(() =>
        harness(["sessions", "fork", "--store", store, "--at", String(turn2.seq + 2), id!], { cwd: dir })
      )
      assert.strictEqual(fork.code, 0, fork.stderr)
      const forkId = /into ([0-9a-f-]{36}) \((\d+) events\)/.exec(fork.stdout)
      assert.isNotNull(forkId)
      assert.strictEqual(Number(forkId![2]), turn2.seq)
      const forked = yield* storedEvents(db, forkId![1]!)
      assert.strictEqual(forked.length, turn2.seq)
      assert.deepStrictEqual(LogCheck.checkLog(forked), [])

      const rm = yield* Effect.promise(() => harness(["sessions", "rm", "--store", store, forkId![1]!], { cwd: dir }))
      assert.strictEqual(rm.code, 0, rm.stderr)
      const list = yield* Effect.promise(() => harness(["sessions", "list", "--store", store], { cwd: dir }))
      assert.include(list.stdout, "1 session (last active last)")
      assert.notInclude(list.stdout, forkId![1]!)
    }).pipe(Effect.scoped))
})
