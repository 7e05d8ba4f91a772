/**
 * pi (`@mariozechner/pi-agent-core` 0.73.1): one `Agent` per bench agent, its LLM injected as the `streamFn` its
 * README offers for custom backends. The scripted stream function builds pi-ai's `AssistantMessageEventStream`
 * with `createAssistantMessageEventStream()` and emits the events a pi-ai provider emits (`start`, `text_*` or
 * `toolcall_*`, then `done`, or `error` with `aborted` when the run's signal aborts).
 *
 * pi's `followUp()` only queues a message for a run that is already going; it does not wake an idle agent. So a
 * bench follow-up to an idle pi agent calls `prompt()` (without awaiting the run) and one to a running agent calls
 * `followUp()`, the way pi's README tells callers to queue work.
 */
import { Agent, type AgentEvent, type AgentMessage, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  type Model,
  type TextContent,
  type ToolCall,
  Type,
  type Usage
} from "@mariozechner/pi-ai"
import { createRequire } from "node:module"
import type { AgentOptions, BenchAgent, BenchRuntime, Observed, Reply, Script, Transcript } from "../Runtime.js"
import { countReply, noopToolName, raceAbort, tally, textOf } from "../Runtime.js"
import { servedUrl, sseUrlEnv } from "../SseServer.js"

const model: Model<"scripted"> = {
  id: "scripted-1",
  name: "Scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 100_000
}

/** pi-ai's own OpenAI-compatible client (`openai-completions`) against the loopback server (ADR 0057). */
const servedModel = (baseUrl: string): Model<"openai-completions"> => ({
  id: "bench",
  name: "Bench (loopback SSE)",
  api: "openai-completions",
  provider: "bench",
  baseUrl,
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 100_000
})

const usage = (output: number): Usage => ({
  input: 0,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
})

// Message timestamps are data pi carries, not something it computes with: a constant keeps runs deterministic.
const timestamp = 0

/** Emits one scripted reply into `stream`, as a pi-ai provider does (one mutable output message, `partial` = it). */
const emit = async (
  stream: AssistantMessageEventStream,
  reply: Reply,
  index: number,
  signal: AbortSignal | undefined
) => {
  const output: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: usage(0),
    stopReason: "stop",
    timestamp
  }
  stream.push({ type: "start", partial: output })
  try {
    if (reply._tag === "tool-call") {
      const waiting = reply.wait?.(0)
      if (waiting !== undefined) await raceAbort(waiting, signal)
      const call: ToolCall = { type: "toolCall", id: `call-${index}`, name: reply.name, arguments: {} }
      output.content.push(call)
      stream.push({ type: "toolcall_start", contentIndex: 0, partial: output })
      stream.push({ type: "toolcall_delta", contentIndex: 0, delta: reply.arguments, partial: output })
      const parsed: unknown = JSON.parse(reply.arguments)
      if (typeof parsed === "object" && parsed !== null) Object.assign(call.arguments, parsed)
      stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: output })
      output.stopReason = "toolUse"
      stream.push({ type: "done", reason: "toolUse", message: output })
      return
    }
    const block: TextContent = { type: "text", text: "" }
    output.content.push(block)
    stream.push({ type: "text_start", contentIndex: 0, partial: output })
    for (let k = 0; k < reply.tokens.length; k++) {
      const waiting = reply.wait?.(k)
      if (waiting !== undefined) await raceAbort(waiting, signal)
      const token = reply.tokens[k]!
      block.text += token
      stream.push({ type: "text_delta", contentIndex: 0, delta: token, partial: output })
    }
    stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial: output })
    output.usage = usage(reply.tokens.length)
    stream.push({ type: "done", reason: "stop", message: output })
  } catch (error) {
    output.stopReason = signal?.aborted === true ? "aborted" : "error"
    output.errorMessage = error instanceof Error ? error.message : String(error)
    stream.push({ type: "error", reason: output.stopReason, error: output })
  }
}

const streamFnOf = (script: Script): StreamFn => {
  let requests = 0
  return (_model, context, options) => {
    const index = requests++
    const reply = script({
      index,
      userTexts: () => context.messages.flatMap((message) => (message.role === "user" ? [textOf(message.content)] : []))
    })
    const stream = createAssistantMessageEventStream()
    void emit(stream, reply, index, options?.signal)
    return stream
  }
}

const noopTool: AgentTool = {
  name: noopToolName,
  label: "No-op",
  description: "Does nothing.",
  parameters: Type.Object({}),
  execute: () => Promise.resolve({ content: [{ type: "text", text: "ok" }], details: {} })
}

const transcriptOf = (messages: ReadonlyArray<AgentMessage>): Transcript => {
  const t = tally()
  for (const message of messages) {
    switch (message.role) {
      case "user":
        t.prompts.push(textOf(message.content))
        break
      case "assistant":
        if (message.stopReason === "stop") t.completedTurns++
        if (message.stopReason === "aborted") t.abortedTurns++
        countReply(t, textOf(message.content))
        break
      case "toolResult":
        t.toolResults++
        break
    }
  }
  // pi records steering as an ordinary user message: every user message counts as a prompt here.
  return { ...t, userTexts: t.prompts, entries: messages.length }
}

const version = (): string => {
  const require = createRequire(import.meta.url)
  const pkg: unknown = require("@mariozechner/pi-agent-core/package.json")
  return `@mariozechner/pi-agent-core ${
    typeof pkg === "object" && pkg !== null && "version" in pkg ? String(pkg.version) : "?"
  }`
}

/** pi needs no process-wide boot: each agent is a plain object. */
export const make = (): Promise<BenchRuntime> => {
  const url = process.env[sseUrlEnv]
  const createAgent = (options: AgentOptions): Promise<BenchAgent> => {
    const tools = options.tools === true ? [noopTool] : []
    // A served script goes through pi's default stream function (pi-ai's client for the model's `api`).
    const route = url === undefined ? undefined : servedUrl(url, options.served)
    const agent = route !== undefined
      ? new Agent({ initialState: { systemPrompt: "", model: servedModel(route), tools }, getApiKey: () => "bench" })
      : new Agent({ initialState: { systemPrompt: "", model, tools }, streamFn: streamFnOf(options.script) })
    const failures: Array<unknown> = []
    const message = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp })
    const followUp = (text: string) => {
      if (agent.state.isStreaming) agent.followUp(message(text))
      else agent.prompt(message(text)).catch((error: unknown) => failures.push(error))
    }
    return Promise.resolve<BenchAgent>({
      followUp: (text) => {
        followUp(text)
        return Promise.resolve()
      },
      followUpAll: (texts) => {
        for (const text of texts) followUp(text)
        return Promise.resolve()
      },
      steer: (text) => {
        agent.steer(message(text))
        return Promise.resolve()
      },
      cancel: () => {
        agent.clearAllQueues()
        agent.abort()
        return Promise.resolve()
      },
      waitIdle: async () => {
        await agent.waitForIdle()
        if (failures.length > 0) throw new Error(`pi prompt() failed: ${String(failures[0])}`)
      },
      transcript: () => Promise.resolve(transcriptOf(agent.state.messages)),
      observe: (listener: (event: Observed) => void) =>
        Promise.resolve(agent.subscribe((event: AgentEvent) => {
          if (event.type === "message_start" && event.message.role === "user") {
            listener({ _tag: "dequeued", text: textOf(event.message.content) })
          } else if (
            event.type === "turn_end" && event.message.role === "assistant" && event.message.stopReason !== "toolUse"
          ) {
            listener({ _tag: "turn-ended", aborted: event.message.stopReason === "aborted" })
          }
        })).then((unsubscribe) => () => {
          unsubscribe()
        }),
      dispose: async () => {
        agent.abort()
        await agent.waitForIdle()
      }
    })
  }
  return Promise.resolve({
    name: "pi",
    version: `${version()} (${url === undefined ? "scripted streamFn only" : "openai-completions over loopback SSE"})`,
    createAgent,
    close: () => Promise.resolve()
  })
}
