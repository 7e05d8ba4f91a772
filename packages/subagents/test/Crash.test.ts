/**
 * A crash with children running: a real process (a parent spawning two children, over one SQLite file) is killed
 * with SIGKILL while both children's tools run; this process reopens the parent, reports the children, and checks
 * every log and the stored tree.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"
import { LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Subagents from "../src/Subagents.js"
import { childOf, stored } from "./fixtures.js"
import { blocking, subagentTools } from "./fixtures/crashTools.js"

const fixture = fileURLToPath(new URL("fixtures/crashChild.ts", import.meta.url))

/** Runs the fixture over `filename` until it says both children's tools run; killed with SIGKILL at scope end. */
const startReady = (filename: string) =>
  Effect.acquireRelease(
    Effect.async<ChildProcess>((resume) => {
      const proc = spawn(process.execPath, ["--conditions=@harness/source", "--import", "tsx", fixture, filename], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      let out = ""
      proc.stdout!.setEncoding("utf8").on("data", (text: string) => {
        out += text
        if (out.includes("{\"ready\":true}\n")) resume(Effect.succeed(proc))
      })
      proc.on("exit", (code) => resume(Effect.dieMessage(`the fixture exited with ${code} before it was ready`)))
    }),
    (proc) => Effect.sync(() => proc.kill("SIGKILL"))
  )

const kill = (proc: ChildProcess) =>
  Effect.async<void>((resume) => {
    proc.once("exit", () => resume(Effect.void))
    proc.kill("SIGKILL")
  })

const toolResults = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((event) => event.type === "tool/result" ? [[event.data.callId, event.data.error?.code]] : [])

describe("Subagents across a crash", () => {
  it.live(
    "R181: SIGKILL mid-way; the parent and both children reopen well-formed, the parent is told each child's fate once",
    () =>
      Effect.gen(function*() {
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "harness-subagents-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        )
        const filename = join(dir, "sessions.db")
        yield* kill(yield* startReady(filename))

        yield* Effect.gen(function*() {
          const p = Ids.SessionId.make("p")
          const [modelA] = yield* S.make([])
          const [modelB] = yield* S.make([])
          const never = yield* Deferred.make<void>()
          const subagents = yield* Subagents.make()
          const parent = yield* Agent.make({
            session: yield* SessionLog.open(p),
            tools: subagentTools({ researcher: [modelA, blocking(never)], reviewer: [modelB, blocking(never)] })
          }).pipe(Effect.provideService(Subagents.Subagents, subagents))
          const a = yield* childOf(parent, "a")
          const b = yield* childOf(parent, "b")
          // Crash repair answered both cut spawn calls.
          assert.deepStrictEqual(toolResults(yield* parent.log), [
            ["a", "TOOL_OUTCOME_UNKNOWN"],
            ["b", "TOOL_OUTCOME_UNKNOWN"]
          ])

          const reported = yield* subagents.resume(parent)
          assert.deepStrictEqual(reported.map((outcome) => [outcome.session, outcome.agent, outcome.status]), [
            [a, "researcher", "interrupted"],
            [b, "reviewer", "interrupted"]
          ])
          const told = (yield* parent.log).flatMap((event) =>
            event.type === "user/message" && event.data.source.kind === "plugin" ? [event.data.content[0].text] : []
          )
          assert.deepStrictEqual(told, [
            `[subagent researcher · session ${a} · interrupted (a crash cut its turn)]\n(no answer)`,
            `[subagent reviewer · session ${b} · interrupted (a crash cut its turn)]\n(no answer)`
          ])
          // A second resume owes nothing: the reports are in the parent's log.
          assert.deepStrictEqual(yield* subagents.resume(parent), [])

          // Each child was repaired by its own reopening: its cut tool call answered, its turn closed.
          for (const [child, call] of [[a, "x"], [b, "y"]] as const) {
            const events = yield* stored(child)
            assert.deepStrictEqual(toolResults(events), [[call, "TOOL_OUTCOME_UNKNOWN"]])
            assert.deepStrictEqual(events.at(-1)?.type === "turn/end" && events.at(-1)?.data, {
              turn: 1,
              reason: { kind: "interrupted" }
            })
            assert.deepStrictEqual(LogCheck.checkLog(events), [])
          }
          assert.deepStrictEqual(LogCheck.checkLog(yield* parent.log), [])

          const tree = yield* Subagents.tree(p)
          assert.deepStrictEqual(
            tree.children.map((child) => [child.id, child.agent, child.spawnedBy?.callId, child.last]),
            [[a, "researcher", "a", "interrupted"], [b, "reviewer", "b", "interrupted"]]
          )
          assert.strictEqual(tree.last, "interrupted")
        }).pipe(Effect.scoped, Effect.provide(S.layer([])), Effect.provide(SqliteStore.layer({ filename })))
      }).pipe(Effect.scoped),
    60_000
  )
})
