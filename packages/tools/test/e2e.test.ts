/**
 * End to end: an agent with the built-in tools and a scripted model reads a file, edits it, runs a shell command
 * and answers; the session log and the file system both show the work.
 */
import { FileSystem, Path } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { WorkspaceTools } from "@harness/tools"
import { Effect } from "effect"

describe("an agent at work in a real workspace", () => {
  it.live("reads, edits, runs a command and answers: the log and the disk agree", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* fs.makeTempDirectoryScoped({ prefix: "harness-e2e-" })
      yield* fs.writeFileString(path.join(root, "greeting.txt"), "hello world\n")
      const tools = yield* WorkspaceTools.make({ root })
      const approvals: Array<string> = []
      const agent = yield* Agent.make({
        tools,
        hooks: {
          toolApproval: ({ name }) =>
            Effect.sync(() => approvals.push(name)).pipe(Effect.as({ kind: "allow" as const }))
        }
      })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(
          S.text("Reading it first."),
          S.toolCall("read_file", { path: "greeting.txt" }, { id: "read" })
        ),
        S.toolCallResponse(
          S.toolCall("edit_file", { path: "greeting.txt", oldString: "world", newString: "harness" }, { id: "edit" })
        ),
        S.toolCallResponse(S.toolCall("shell", { command: "cat greeting.txt && wc -l < greeting.txt" }, { id: "run" })),
        S.textResponse("Done: the file now greets harness.")
      )
      yield* agent.followup(Message.make("Change the greeting to greet harness, then show me the file."))
      yield* agent.whenIdle

      // The disk shows the work.
      assert.strictEqual(yield* fs.readFileString(path.join(root, "greeting.txt")), "hello harness\n")
      // The log shows it too, in order, and is well-formed.
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const results = new Map(log.flatMap((e) => (e.type === "tool/result" ? [[e.data.callId as string, e.data]] : [])))
      const text = (id: string) => results.get(id)!.content.map((b) => b.text).join("")
      assert.isFalse(results.get("read")!.isError)
      assert.include(text("read"), "hello world")
      assert.isFalse(results.get("edit")!.isError)
      assert.isFalse(results.get("run")!.isError)
      assert.include(text("run"), "hello harness")
      assert.include(text("run"), "[exit code: 0]")
      const answer = log.findLast((e) => e.type === "assistant/message")
      assert.deepStrictEqual(
        answer?.type === "assistant/message" ? answer.data.content : undefined,
        [{ type: "text", text: "Done: the file now greets harness." }]
      )
      const end = log.findLast((e) => e.type === "turn/end")
      assert.deepStrictEqual(end?.type === "turn/end" ? end.data.reason : undefined, { kind: "completed" })
      // Writes and shell went through the approval hook; reads did not.
      assert.deepStrictEqual(approvals, ["edit_file", "shell"])
      // The model saw each result before its next request.
      const requests = yield* model.requests
      assert.strictEqual(requests.length, 4)
      const lastTool = requests[3]!.prompt.content.filter((m) => m.role === "tool").at(-1)
      assert.include(JSON.stringify(lastTool), "hello harness")
    }).pipe(Effect.scoped, Effect.provide([S.layer(), NodeContext.layer])))

  it.live("without an approval hook, writes and shell are denied and the disk is untouched", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* fs.makeTempDirectoryScoped({ prefix: "harness-e2e-" })
      yield* fs.writeFileString(path.join(root, "a.txt"), "keep me\n")
      const agent = yield* Agent.make({ tools: yield* WorkspaceTools.make({ root }) })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(
          S.toolCall("write_file", { path: "a.txt", content: "overwritten" }, { id: "w" }),
          S.toolCall("shell", { command: "rm a.txt" }, { id: "s" })
        ),
        S.textResponse("I was not allowed.")
      )
      yield* agent.followup(Message.make("Clobber a.txt"))
      yield* agent.whenIdle
      assert.strictEqual(yield* fs.readFileString(path.join(root, "a.txt")), "keep me\n")
      const codes = (yield* agent.log).flatMap((e) => (e.type === "tool/result" ? [e.data.error?.code] : []))
      assert.deepStrictEqual(codes, ["DENIED", "DENIED"])
    }).pipe(Effect.scoped, Effect.provide([S.layer(), NodeContext.layer])))
})
