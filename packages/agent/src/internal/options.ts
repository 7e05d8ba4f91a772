/**
 * The agent's options: validated once at creation (a typed `AgentConfigError` naming the bad option), and the
 * transport definition of its tools — what `@effect/ai` is told about them, and what `request/header` records.
 */
import { Tool, type Toolkit } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import { Json } from "@harness/domain"
import { Effect, Schema } from "effect"
import type { Options } from "../Agent.js"
import { AgentConfigError } from "../AgentError.js"
import type { AgentTool } from "../AgentTool.js"

const toolName = /^[a-zA-Z0-9_-]{1,64}$/

const isJsonObject = (value: Json.JsonValue | undefined): value is Json.JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const permissive = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/**
 * Advertises each tool through a permissive transport definition — parameters accept any object, annotated with
 * the tool's real JSON Schema — because `@effect/ai` decodes every `tool-call` part against the toolkit and would
 * fail the whole stream on arguments that do not match. The loop decodes arguments itself (ADR 0005).
 */
const transport = (tools: ReadonlyArray<AgentTool<unknown>>) => {
  const record: Record<string, Tool.Any> = {}
  const descriptors: Array<SessionEvent.ToolDescriptor> = []
  for (const tool of tools) {
    const schema = Tool.getJsonSchemaFromSchemaAst(tool.tool.parametersSchema.ast)
    const copied = Json.copyJson(schema)
    const parameters = "issue" in copied ? undefined : copied.value
    if (!isJsonObject(parameters)) {
      return new AgentConfigError({
        option: "tools",
        message: `tool "${tool.name}" has a parameter schema that is not a JSON object schema`
      })
    }
    const description = tool.tool.description
    record[tool.name] = Tool.make(tool.name, description === undefined ? {} : { description }).setParameters(
      permissive.annotations({ jsonSchema: schema })
    )
    descriptors.push(
      description === undefined
        ? { name: tool.name, parameters }
        : { name: tool.name, description, parameters }
    )
  }
  const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
    tools: record,
    // Tool-call resolution is disabled: the loop runs the tools itself.
    handle: () => Effect.dieMessage("Harness runs tool calls itself; the toolkit handler is never called")
  }
  return { toolkit, descriptors }
}

/** Validates the options: the tool pool cap, the tools (names, parameter schemas) and the route label. */
export const validate = (options: Options<unknown>) =>
  Effect.gen(function*() {
    const maxParallel = options.maxParallelToolCalls ?? 10
    if (!Number.isSafeInteger(maxParallel) || maxParallel < 1) {
      return yield* new AgentConfigError({
        option: "maxParallelToolCalls",
        message: `maxParallelToolCalls must be a positive integer (1 runs calls one at a time), got ${
          String(maxParallel)
        }`
      })
    }
    const tools = new Map<string, AgentTool<unknown>>()
    for (const tool of options.tools ?? []) {
      if (!toolName.test(tool.name)) {
        return yield* new AgentConfigError({
          option: "tools",
          message: `tool name "${tool.name}" is invalid: use 1 to 64 letters, digits, "_" or "-"`
        })
      }
      if (tools.has(tool.name)) {
        return yield* new AgentConfigError({ option: "tools", message: `two tools are named "${tool.name}"` })
      }
      tools.set(tool.name, tool)
    }
    if (options.model !== undefined && options.model === "") {
      return yield* new AgentConfigError({ option: "model", message: "model must be a non-empty route label" })
    }
    const advertised = tools.size === 0 ? undefined : transport([...tools.values()])
    if (advertised instanceof AgentConfigError) return yield* advertised
    return { maxParallel, tools, advertised }
  })
