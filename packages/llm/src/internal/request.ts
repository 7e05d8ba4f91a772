/**
 * Prompt → chat-completions request body. Pure: the same prompt and settings always give the same bytes, which
 * keeps provider prefix caches warm. Holds the DeepSeek thinking rule: in thinking mode an assistant message that
 * made tool calls carries its `reasoning_content` (`""` when none was logged), and no other message does.
 */
import type { LanguageModel, Prompt } from "@effect/ai"
import { Tool } from "@effect/ai"
import { ToolArguments } from "@harness/domain"
import { Either } from "effect"
import type { Settings } from "./settings.js"
import type { WireMessage, WireTool, WireToolCall, WireToolChoice } from "./wire.js"

/** The provider-options key under which the history derived by `@harness/session` carries Harness facts on parts. */
const optionsKey = ToolArguments.harnessKey

/** The raw argument text a tool-call part carries in `options.harness.rawArguments`, when it does. */
const rawArgumentsOf = (part: Prompt.ToolCallPart): string | undefined => {
  const raw = part.options[optionsKey]?.["rawArguments"]
  return typeof raw === "string" ? raw : undefined
}

const argumentsText = (part: Prompt.ToolCallPart): string => {
  const raw = rawArgumentsOf(part)
  if (raw !== undefined) return raw === "" ? "{}" : raw
  return JSON.stringify(part.params === undefined ? {} : part.params)
}

const resultText = (result: unknown): string => {
  if (typeof result === "string") return result
  if (result === undefined) return ""
  return JSON.stringify(result)
}

const userText = (message: Prompt.UserMessage): Either.Either<string, string> => {
  const texts: Array<string> = []
  for (const part of message.content) {
    if (part.type !== "text") {
      return Either.left(`a user message holds a "${part.type}" part; this provider sends text only`)
    }
    texts.push(part.text)
  }
  return Either.right(texts.join("\n"))
}

const assistantMessage = (
  message: Prompt.AssistantMessage,
  thinkingMode: boolean
): Either.Either<WireMessage | undefined, string> => {
  const texts: Array<string> = []
  const reasoning: Array<string> = []
  const calls: Array<WireToolCall> = []
  for (const part of message.content) {
    switch (part.type) {
      case "text":
        texts.push(part.text)
        break
      case "reasoning":
        reasoning.push(part.text)
        break
      case "tool-call":
        calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: argumentsText(part) } })
        break
      case "tool-result":
        // Results of provider-executed tools live with the provider; chat completions has no place for them.
        break
      case "file":
        return Either.left("an assistant message holds a file part; this provider sends text only")
    }
  }
  if (calls.length === 0) {
    if (texts.length === 0) return Either.right(undefined)
    return Either.right({ role: "assistant", content: texts.join("") })
  }
  const content = texts.length === 0 ? null : texts.join("")
  return Either.right(
    thinkingMode
      ? { role: "assistant", content, reasoning_content: reasoning.join(""), tool_calls: calls }
      : { role: "assistant", content, tool_calls: calls }
  )
}

/**
 * The `messages` array, or a sentence saying why the prompt cannot be sent.
 *
 * Contract: one `tool` message per tool-result part, in order; an assistant message with neither text nor tool
 * calls is dropped (only reasoning: nothing the API would accept).
 */
const messages = (
  prompt: Prompt.Prompt,
  thinkingMode: boolean
): Either.Either<ReadonlyArray<WireMessage>, string> => {
  const out: Array<WireMessage> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content })
        break
      case "user": {
        const text = userText(message)
        if (Either.isLeft(text)) return Either.left(text.left)
        out.push({ role: "user", content: text.right })
        break
      }
      case "assistant": {
        const wire = assistantMessage(message, thinkingMode)
        if (Either.isLeft(wire)) return Either.left(wire.left)
        if (wire.right !== undefined) out.push(wire.right)
        break
      }
      case "tool":
        for (const part of message.content) {
          out.push({ role: "tool", tool_call_id: part.id, content: resultText(part.result) })
        }
        break
    }
  }
  return Either.right(out)
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const schemaLists = ["anyOf", "oneOf", "allOf", "prefixItems"]
const schemaMaps = ["properties", "patternProperties", "$defs", "definitions"]
const schemaValues = ["items", "additionalProperties", "not", "if", "then", "else", "contains"]

/**
 * A JSON Schema without `title` keywords. Effect derives a `title` from every refinement's identifier (`"title":
 * "positive"` on `Schema.positive()`), which is noise to a model; `title` never constrains validation, and the
 * `description` stays. Contract: only keywords in schema positions are removed — a property *named* `title` stays.
 */
const withoutTitles = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(withoutTitles)
  if (!isRecord(schema)) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "title" && typeof value === "string") continue
    if (schemaLists.includes(key) && Array.isArray(value)) out[key] = value.map(withoutTitles)
    else if (schemaMaps.includes(key) && isRecord(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, withoutTitles(inner)]))
    } else if (schemaValues.includes(key)) out[key] = withoutTitles(value)
    else out[key] = value
  }
  return out
}

/**
 * The advertised functions, with each tool's JSON Schema (its `jsonSchema` annotation when it has one), without
 * `title` keywords ({@link withoutTitles}).
 */
const tools = (advertised: ReadonlyArray<Tool.Any>): Either.Either<ReadonlyArray<WireTool>, string> => {
  const out: Array<WireTool> = []
  for (const tool of advertised) {
    if (Tool.isProviderDefined(tool)) {
      return Either.left(`the provider-defined tool "${tool.name}" cannot be sent to a chat-completions server`)
    }
    const description = tool.description
    const parameters = withoutTitles(Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast))
    out.push({
      type: "function",
      function: description === undefined
        ? { name: tool.name, parameters }
        : { name: tool.name, description, parameters }
    })
  }
  return Either.right(out)
}

/** `tool_choice` from `@effect/ai`'s choice (`oneOf` already narrowed the advertised tools). */
const toolChoice = (choice: LanguageModel.ToolChoice<string>): WireToolChoice => {
  if (typeof choice === "string") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode ?? "auto"
}

/** Keys the extra body fields may not override: they carry the request itself. */
const protectedKeys = new Set(["messages", "tools", "tool_choice", "stream", "stream_options"])

/**
 * The request body, or a sentence saying why it cannot be built.
 *
 * Contract: in thinking mode `temperature` and `top_p` are never sent (DeepSeek ignores them there); the extra body
 * fields are merged last and win, except over the keys that carry the request itself.
 */
export const body = (
  settings: Settings,
  options: LanguageModel.ProviderOptions,
  stream: boolean
): Either.Either<{ readonly [key: string]: unknown }, string> =>
  Either.gen(function*() {
    const wireMessages = yield* messages(options.prompt, settings.thinkingMode)
    const wireTools = yield* tools(options.tools)
    const out: Record<string, unknown> = { model: settings.model, messages: wireMessages }
    if (wireTools.length > 0) {
      out.tools = wireTools
      out.tool_choice = toolChoice(options.toolChoice)
    }
    if (stream) {
      out.stream = true
      out.stream_options = { include_usage: true }
    }
    if (settings.maxOutputTokens !== undefined) out[settings.maxTokensParameter] = settings.maxOutputTokens
    if (!settings.thinkingMode) {
      if (settings.temperature !== undefined) out.temperature = settings.temperature
      if (settings.topP !== undefined) out.top_p = settings.topP
    }
    if (settings.thinking !== undefined) out.thinking = { type: settings.thinking }
    if (settings.reasoningEffort !== undefined) out.reasoning_effort = settings.reasoningEffort
    if (options.responseFormat.type === "json") out.response_format = { type: "json_object" }
    for (const [key, value] of Object.entries(settings.body)) {
      if (!protectedKeys.has(key)) out[key] = value
    }
    return out
  })
