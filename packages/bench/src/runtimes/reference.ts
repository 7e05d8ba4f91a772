/**
 * The reference loop (`@deepseek-ai/dsh-agent-loop` rc.8) booted as a minimal Cordis context: the agent registry,
 * the in-memory session store, the LLM runtime, the system prompt and tool registries, and the loop itself — the
 * five services the loop injects, nothing else (no persistence, no invariant companions). Agents are created
 * through `ctx.agents.create()`, the programmatic factory its README documents. The model is one `LlmAdapter`
 * registered for the route `scripted`; it finds each agent's script by the request's `sessionId`.
 */
import "./polyfill.js"
import { Context } from "@deepseek-ai/cordis"
import AgentRegistry, { type AgentHandle } from "@deepseek-ai/dsh-agent"
import AgentLoop from "@deepseek-ai/dsh-agent-loop"
import LlmRuntime, {
  CallId,
  createUserMessage,
  type GenerateOptions,
  LlmAdapter,
  type Message,
  type StreamChunk
} from "@deepseek-ai/dsh-llm"
import SessionStore, { type SessionEvent, SessionId } from "@deepseek-ai/dsh-session"
import SystemPrompt from "@deepseek-ai/dsh-system-prompt"
import ToolRuntime, { defineTool } from "@deepseek-ai/dsh-tools"
import { createRequire } from "node:module"
import type { AgentOptions, BenchAgent, BenchRuntime, Observed, Reply, Script, Transcript } from "../Runtime.js"
import { countReply, noopToolName, raceAbort, tally } from "../Runtime.js"

const provider = "scripted"

const textOf = (message: Message): string =>
  message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("")

/** Streams one scripted reply in the loop's raw chunk protocol. */
async function* replyChunks(reply: Reply, index: number, signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
  if (reply._tag === "tool-call") {
    const waiting = reply.wait?.(0)
    if (waiting !== undefined) await raceAbort(waiting, signal)
    const id = CallId(`call-${index}`)
    yield { type: "block-start", index: 0, blockType: "tool-call" }
    yield { type: "tool-call-delta", index: 0, id, name: reply.name, argumentsDelta: reply.arguments }
    yield {
      type: "block-end",
      index: 0,
      block: { type: "tool-call", id, name: reply.name, arguments: reply.arguments }
    }
    yield { type: "finish", reason: { kind: "tool-calls" } }
    return
  }
  yield { type: "block-start", index: 0, blockType: "text" }
  let text = ""
  for (let k = 0; k < reply.tokens.length; k++) {
    const waiting = reply.wait?.(k)
    if (waiting !== undefined) await raceAbort(waiting, signal)
    const token = reply.tokens[k]!
    text += token
    yield { type: "text-delta", index: 0, text: token }
  }
  yield { type: "block-end", index: 0, block: { type: "text", text } }
  yield { type: "usage", usage: { inputTokens: 0, outputTokens: reply.tokens.length } }
  yield { type: "finish", reason: { kind: "stop" } }
}

interface Scripted {
  readonly script: Script
  requests: number
}

/** The scripted adapter: the only method an `LlmAdapter` must implement is `stream()`. */
class ScriptedAdapter extends LlmAdapter {
  readonly agents = new Map<string, Scripted>()

  stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const scripted = options.sessionId === undefined ? undefined : this.agents.get(options.sessionId)
    if (scripted === undefined) throw new Error(`no script for session ${String(options.sessionId)}`)
    const index = scripted.requests++
    const reply = scripted.script({
      index,
      userTexts: () =>
        options.messages.flatMap((message) =>
          message.role === "user" && message.content.every((block) => block.type === "text") ? [textOf(message)] : []
        )
    })
    return replyChunks(reply, index, options.signal)
  }
}

const version = (): string => {
  const require = createRequire(import.meta.url)
  const pkg: unknown = require("@deepseek-ai/dsh-agent-loop/package.json")
  return `@deepseek-ai/dsh-agent-loop ${
    typeof pkg === "object" && pkg !== null && "version" in pkg ? String(pkg.version) : "?"
  }`
}

/** Reads the transcript from the session log: a turn's first `user/message` is its prompt, later ones steering. */
const transcriptOf = (events: ReadonlyArray<SessionEvent>): Transcript => {
  const t = tally()
  let promptSeen = false
  for (const event of events) {
    switch (event.type) {
      case "turn/start":
        promptSeen = false
        break
      case "turn/end":
        if (event.data.reason.kind === "completed") t.completedTurns++
        if (event.data.reason.kind === "aborted") t.abortedTurns++
        break
      case "user/message":
        if (event.data.source.kind !== "user") break
        t.userTexts.push(textOf(event.data))
        if (promptSeen) t.steering.push(textOf(event.data))
        else t.prompts.push(textOf(event.data))
        promptSeen = true
        break
      case "assistant/message":
        countReply(t, textOf(event.data.message))
        break
      case "tool/result":
        t.toolResults++
        break
    }
  }
  return { ...t, entries: events.length }
}

/** Boots the reference loop in this process. */
export const make = async (): Promise<BenchRuntime> => {
  const root = new Context()
  await root.plugin(AgentRegistry)
  await root.plugin(SessionStore)
  await root.plugin(LlmRuntime)
  await root.plugin(SystemPrompt, {})
  await root.plugin(ToolRuntime, {})
  await root.plugin(AgentLoop, { agents: [] })
  const adapter = new ScriptedAdapter()
  root.llm.registerAdapter([provider], adapter)
  root.tools.register(defineTool({
    name: noopToolName,
    description: "Does nothing.",
    parameters: {},
    output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
    execute: () => Promise.resolve("ok")
  }))
  let created = 0

  const createAgent = async (options: AgentOptions): Promise<BenchAgent> => {
    const sessionId = SessionId(`bench-${++created}`)
    adapter.agents.set(sessionId, { script: options.script, requests: 0 })
    const handle: AgentHandle = await root.agents.create({ sessionId, agentOptions: { provider, model: "scripted-1" } })
    const agent = handle.agent
    const message = (text: string) => createUserMessage({ content: [{ type: "text", text }], source: { kind: "user" } })
    return {
      followUp: (text) => {
        agent.followup(message(text))
        return Promise.resolve()
      },
      followUpAll: (texts) => {
        for (const text of texts) agent.followup(message(text))
        return Promise.resolve()
      },
      steer: (text) => {
        agent.steer(message(text))
        return Promise.resolve()
      },
      cancel: () => {
        agent.cancel({ kind: "user" })
        return Promise.resolve()
      },
      waitIdle: () => agent.whenIdle(),
      transcript: () => Promise.resolve(transcriptOf(agent.session.events)),
      observe: (listener: (event: Observed) => void) => {
        const offClaimed = root.on("agent/inbox/claimed", (payload) => {
          if (payload.agent === agent) listener({ _tag: "dequeued", text: textOf(payload.message) })
        })
        const offEvents = root.on("session/event", (session, event) => {
          if (session === agent.session && event.type === "turn/end") {
            listener({ _tag: "turn-ended", aborted: event.data.reason.kind === "aborted" })
          }
        })
        return Promise.resolve(() => {
          offClaimed()
          offEvents()
        })
      },
      dispose: async () => {
        await handle.dispose()
        adapter.agents.delete(sessionId)
      }
    }
  }

  return {
    name: "reference",
    version: `${version()} (scripted LlmAdapter in process: its packages have no OpenAI-compatible client)`,
    createAgent,
    close: () => root.fiber.dispose().then(() => undefined)
  }
}
