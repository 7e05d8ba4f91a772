/**
 * The CLI's subagents: the `agents` object of `.harness/agents.json` in the workspace, each entry a `SubagentTool`
 * of the agent (ADR 0055) whose child runs on the same model with a subset of the workspace tools. No file, no
 * subagents.
 */
import type { LanguageModel } from "@effect/ai"
import type { AgentTool, Hooks } from "@harness/agent"
import type { SessionStore } from "@harness/session"
import { Subagents, SubagentTool } from "@harness/subagents"
import type { Scope } from "effect"
import { Effect, Either, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { CommandError } from "../CliError.js"

const Entry = Schema.Struct({
  description: Schema.String,
  system: Schema.optional(Schema.String),
  /** Names of workspace tools the child gets (none when absent). */
  tools: Schema.optional(Schema.Array(Schema.String)),
  background: Schema.optional(Schema.Boolean),
  onCancel: Schema.optional(Schema.Literal("interrupt", "finish"))
})

const File = Schema.parseJson(Schema.Struct({ agents: Schema.Record({ key: Schema.String, value: Entry }) }))

/** Where the subagents are configured, under a workspace. */
const fileOf = (workspace: string): string => join(workspace, ".harness", "agents.json")

const invalid = (file: string, message: string) =>
  new CommandError({
    reason: "Input",
    message: `${file}: ${message} (it must be JSON of the form { "agents": { "<name>": { "description": …, ` +
      `"system"?: …, "tools"?: ["read_file", …], "background"?: false, "onCancel"?: "interrupt" | "finish" } } })`
  })

/** The subagents' tools and the service that runs them, for one agent in the scope. */
export interface Attached {
  readonly tools: ReadonlyArray<AgentTool.AgentTool<Subagents.Subagents | LanguageModel.LanguageModel>>
  readonly subagents: Subagents.Service
}

/**
 * The subagents configured under `workspace`, as tools of an agent whose workspace tools are `workspace tools`;
 * `undefined` when there is no `.harness/agents.json`. A child's call that needs approval goes through `approval`
 * (the parent's hook); an `ask` there is a denial, since only the parent's own calls are asked in the terminal.
 */
export const attach = (
  workspace: string,
  workspaceTools: ReadonlyArray<AgentTool.AgentTool>,
  approval: Hooks.ToolApproval<never> | undefined
): Effect.Effect<Attached | undefined, CommandError, Scope.Scope | SessionStore.SessionStore> =>
  Effect.gen(function*() {
    const file = fileOf(workspace)
    const text = yield* Effect.tryPromise(() => readFile(file, "utf8")).pipe(Effect.option)
    if (text._tag === "None") return undefined
    const parsed = Schema.decodeUnknownEither(File)(text.value)
    if (Either.isLeft(parsed)) return yield* invalid(file, "not a subagents file")
    const byName = new Map(workspaceTools.map((tool) => [tool.name, tool]))
    const configs: Array<Parameters<typeof SubagentTool.make>[0]> = []
    for (const [name, entry] of Object.entries(parsed.right.agents)) {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
        return yield* invalid(
          file,
          `the subagent name ${JSON.stringify(name)} is not a tool name (letters, digits, _ -)`
        )
      }
      const tools: Array<AgentTool.AgentTool> = []
      for (const wanted of entry.tools ?? []) {
        const tool = byName.get(wanted)
        if (tool === undefined) {
          return yield* invalid(
            file,
            `the subagent "${name}" asks for the tool "${wanted}", which is not a workspace tool (${
              [...byName.keys()].join(", ")
            })`
          )
        }
        tools.push(tool)
      }
      configs.push({
        name,
        description: entry.description,
        system: entry.system,
        tools,
        background: entry.background,
        onCancel: entry.onCancel
      })
    }
    const subagents = yield* Subagents.make({
      approval: approval === undefined ?
        undefined :
        (input, next) =>
          Effect.map(approval(input, next), (decision): Hooks.ApprovalDecision =>
            decision.kind === "ask"
              ? { kind: "deny", reason: "a subagent's call cannot ask the person; allow it with `a` in the chat first" }
              : decision)
    })
    return { tools: configs.map((config) => SubagentTool.make(config)), subagents }
  })
