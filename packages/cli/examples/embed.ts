/**
 * Embedding the agent in an Effect program: the model as a `Layer` (the offline model here; swap in
 * `ChatCompletions.layerConfig()` for DeepSeek or any chat-completions server), the workspace tools confined to
 * one directory, and an approval hook that decides which writes may happen. Compiled by `tsc -b` and run by the
 * CLI's tests; the root README shows it.
 */
import { Agent, type Hooks } from "@harness/agent"
import { Message } from "@harness/domain"
import * as NodeWorkspaceTools from "@harness/tools/NodeWorkspaceTools"
import { Effect } from "effect"
import { OfflineModel } from "../src/index.js"

/** Allows writes under `notes/` only; everything else that needs approval is denied with a reason. */
const approval: Hooks.Hooks = {
  toolApproval: ({ name, params }) =>
    Effect.succeed(
      name === "write_file" && typeof params === "object" && params !== null && "path" in params &&
        String(params.path).startsWith("notes/")
        ? { kind: "allow" as const }
        : { kind: "deny" as const, reason: `${name} is not allowed here` }
    )
}

/** Asks the agent to write a note in `root`, waits until it is idle, and returns its answer. */
export const program = (root: string) =>
  Effect.gen(function*() {
    const tools = yield* NodeWorkspaceTools.make({ root })
    const agent = yield* Agent.make({ system: "You are terse.", tools, hooks: approval })
    yield* agent.followup(Message.make("write notes/today.md: ship the CLI"))
    yield* agent.whenIdle
    const log = yield* agent.log
    return log.flatMap((event) =>
      event.type === "assistant/message"
        ? event.data.content.flatMap((block) => (block.type === "text" ? [block.text] : []))
        : []
    ).join("\n")
  }).pipe(
    Effect.scoped,
    Effect.provide(OfflineModel.layer({ pace: 0 })) // or: ChatCompletions.layerConfig() + NodeHttpClient.layerUndici
  )
