/**
 * Durable approvals across a SIGKILL (ADR 0054, R166–R169), on a real SQLite file with real child processes: a
 * child asks for approval of a tool call and is killed while it waits; a second child resumes the session and finds
 * the approval still pending and listed, the call not started; a third allows it — the tool runs exactly once (its
 * side effect is counted), the model reads its result, and the log stays well-formed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Ids, type SessionEvent } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runChild, tempDir } from "./fixtures.js"

const notes = (dir: string): ReadonlyArray<string> => {
  const file = path.join(dir, "notes.txt")
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []
}

describe("durable approvals across a SIGKILL", () => {
  it.scopedLive(
    "R166 R167 R168 R169: a pending approval survives SIGKILL, is listed after resume, and the allowed call runs once",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("approval")
        // 1. The call is asked about, durably; the process is killed while it waits.
        const asked = yield* runChild("approvalChild.ts", ["ask", dir], (out) => out.includes("PENDING call-1"))
        assert.include(asked.out, "PENDING call-1")
        assert.deepStrictEqual(notes(dir), [], "the call has not run")

        // 2. A new process resumes the session: the approval is pending again, listed, and nothing ran.
        const listed = yield* runChild("approvalChild.ts", ["list", dir])
        assert.strictEqual(listed.code, 0)
        const approvals: ReadonlyArray<{ callId: string; name: string; live: boolean; arguments: string }> = JSON
          .parse(listed.out.trim())
        assert.deepStrictEqual(
          approvals.map((a) => [a.callId, a.name, a.live, a.arguments]),
          [["call-1", "write_note", false, "{\"text\":\"hello\"}"]]
        )
        assert.deepStrictEqual(notes(dir), [], "listing runs nothing")

        // 3. Another process answers (it holds the session now): the tool runs exactly once.
        const answered = yield* runChild("approvalChild.ts", ["answer", dir, "call-1"])
        assert.include(answered.out, "DONE")
        assert.deepStrictEqual(notes(dir), ["hello"])

        // 4. The log: the cut call was answered APPROVAL_PENDING by repair, the result reached the model as a
        //    message, the answer is recorded once; the log is well-formed; a second answer is refused by name.
        const check = yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.open(Ids.SessionId.make("approval-session"))
          const agent = yield* Agent.make({ session: log }).pipe(Effect.provide(S.layer([])))
          const events = yield* log.events
          const records = yield* log.inboxRecords
          const again = yield* Effect.exit(agent.approve(Ids.ToolCallId.make("call-1"), { kind: "allow" }))
          return { events, records, again, pending: yield* agent.approvals }
        })).pipe(Effect.provide(SqliteStore.layer({ filename: path.join(dir, "sessions.db") })))
        assert.deepStrictEqual(Invariants.logWellFormed(check.events), [])
        const results = check.events.filter((e): e is SessionEvent.SessionEventOf<"tool/result"> =>
          e.type === "tool/result"
        )
        assert.deepStrictEqual(results.map((r) => r.data.error?.code), ["APPROVAL_PENDING"])
        const followup = check.events.find((e) =>
          e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === "harness/approval"
        )
        assert.isDefined(followup)
        assert.include(JSON.stringify(followup), "written")
        assert.deepStrictEqual(
          check.records.filter((r) => r.type.startsWith("approval/")).map((r) => r.type),
          ["approval/requested", "approval/answered"]
        )
        assert.deepStrictEqual(check.pending, [])
        assert.isTrue(Exit.isFailure(check.again))
        if (Exit.isFailure(check.again)) {
          assert.include(JSON.stringify(check.again.cause), "not-pending")
          assert.include(JSON.stringify(check.again.cause), "call-1")
        }
        assert.deepStrictEqual(notes(dir), ["hello"], "still once")
      }),
    120_000
  )
})
