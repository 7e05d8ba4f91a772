/**
 * Assembles one model response from its stream parts: text, reasoning and tool calls in order of appearance, the
 * finish reason and usage. Tool calls are built from `tool-params-start/delta/end` (raw text = the concatenated
 * deltas) and only completed by a final `tool-call` part when no deltas came (raw text = its serialised params),
 * so the log records the model's argument text verbatim.
 */
import type { Response } from "@effect/ai"
import type { Content, Json, SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"

type Block =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "tool-call"; id: string; name: string; arguments: string; deltas: number }

/** The assembled response of one step. */
export interface Assembled {
  readonly content: ReadonlyArray<Content.AssistantBlock>
  readonly finishReason: Response.FinishReason | undefined
  readonly usage: SessionEvent.Usage | undefined
  /** An `error` part, if the stream carried one. */
  readonly error: unknown
  readonly hasError: boolean
  /** The model the provider reported serving the request (`response-metadata`), if it did. */
  readonly reportedModel: string | undefined
}

/**
 * A builder fed one part at a time. It is local to one step of one turn fiber and never shared.
 */
export class ContentBuilder {
  private readonly blocks: Array<Block> = []
  private readonly open = new Map<string, Block>()
  private finish: Response.FinishPart | undefined
  private error: unknown
  private hasError = false
  private reportedModel: string | undefined

  add(part: Response.StreamPart<Record<string, never>> | Response.AnyPart): void {
    switch (part.type) {
      case "text-start":
      case "reasoning-start": {
        const block: Block = { type: part.type === "text-start" ? "text" : "reasoning", text: "" }
        this.blocks.push(block)
        this.open.set(`${block.type}:${part.id}`, block)
        break
      }
      case "text-delta":
      case "reasoning-delta": {
        const block = this.open.get(`${part.type === "text-delta" ? "text" : "reasoning"}:${part.id}`)
        if (block !== undefined && block.type !== "tool-call") block.text += part.delta
        else this.blocks.push({ type: part.type === "text-delta" ? "text" : "reasoning", text: part.delta })
        break
      }
      case "text":
      case "reasoning":
        this.blocks.push({ type: part.type, text: part.text })
        break
      case "tool-params-start": {
        const block: Block = { type: "tool-call", id: part.id, name: part.name, arguments: "", deltas: 0 }
        this.blocks.push(block)
        this.open.set(`tool:${part.id}`, block)
        break
      }
      case "tool-params-delta": {
        const block = this.open.get(`tool:${part.id}`)
        if (block !== undefined && block.type === "tool-call") {
          block.arguments += part.delta
          block.deltas++
        }
        break
      }
      case "tool-call": {
        if (part.providerExecuted) break
        const block = this.open.get(`tool:${part.id}`)
        const serialised = JSON.stringify(part.params)
        if (block === undefined) {
          const fresh: Block = { type: "tool-call", id: part.id, name: part.name, arguments: serialised, deltas: 0 }
          this.blocks.push(fresh)
          this.open.set(`tool:${part.id}`, fresh)
        } else if (block.type === "tool-call" && block.deltas === 0) {
          block.arguments = serialised
        }
        break
      }
      case "response-metadata":
        if (part.modelId._tag === "Some") this.reportedModel = part.modelId.value
        break
      case "finish":
        this.finish = part
        break
      case "error":
        this.hasError = true
        this.error = part.error
        break
    }
  }

  result(): Assembled {
    const content: Array<Content.AssistantBlock> = []
    for (const block of this.blocks) {
      if (block.type === "tool-call") {
        content.push({
          type: "tool-call",
          id: Ids.ToolCallId.make(block.id === "" ? `call-${content.length}` : block.id),
          name: block.name,
          arguments: block.arguments
        })
      } else if (block.text !== "") {
        content.push({ type: block.type, text: block.text })
      }
    }
    return {
      content,
      finishReason: this.finish?.reason,
      usage: this.finish === undefined ? undefined : usageOf(this.finish.usage),
      error: this.error,
      hasError: this.hasError,
      reportedModel: this.reportedModel
    }
  }
}

const usageOf = (usage: Response.Usage): SessionEvent.Usage => {
  const out: { -readonly [K in keyof SessionEvent.Usage]: SessionEvent.Usage[K] } = {}
  const count = (n: number | undefined) => n !== undefined && Number.isSafeInteger(n) && n >= 0
  if (count(usage.inputTokens)) out.inputTokens = usage.inputTokens!
  if (count(usage.outputTokens)) out.outputTokens = usage.outputTokens!
  if (count(usage.totalTokens)) out.totalTokens = usage.totalTokens!
  if (count(usage.reasoningTokens)) out.reasoningTokens = usage.reasoningTokens!
  if (count(usage.cachedInputTokens)) out.cachedInputTokens = usage.cachedInputTokens!
  return out
}

/**
 * A stream part as plain JSON for `assistant/chunk`: its own fields, without the part marker, empty metadata or
 * `undefined` values; class instances (usage) become plain objects.
 */
export const chunkJson = (part: object): Json.JsonValue => plain(part) ?? null

const plain = (value: unknown): Json.JsonValue | undefined => {
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined
  if (typeof value === "bigint") return value.toString()
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0) ? value : null
  if (value === null || typeof value !== "object") return value as string | boolean
  if (Array.isArray(value)) return value.map((item) => plain(item) ?? null)
  if (value instanceof URL) return value.href
  if (value instanceof Uint8Array) return `[${value.length} bytes]`
  const out: Record<string, Json.JsonValue> = {}
  for (const key of Object.keys(value)) {
    if (key.startsWith("~")) continue // the part's type marker, e.g. "~effect/ai/Content/Part"
    const item = plain((value as Record<string, unknown>)[key])
    if (item === undefined) continue
    if (key === "metadata" && typeof item === "object" && item !== null && Object.keys(item).length === 0) continue
    out[key] = item
  }
  return out
}
