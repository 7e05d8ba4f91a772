/**
 * Assembles one model response from its stream parts, as a pure fold (like the provider's `decode.ts`): a
 * {@link State} value and {@link step}`(state, part) → state`, then {@link result}. Text, reasoning and tool calls
 * come out in order of appearance, with the finish reason, usage, an error part and the model the provider reported.
 * Tool calls are built from `tool-params-start/delta/end` (raw text = the concatenated deltas) and only completed by
 * a final `tool-call` part when no deltas came (raw text = its serialised params), so the log records the model's
 * argument text verbatim.
 */
import type { Response } from "@effect/ai"
import type { Content, Json, SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"

/**
 * A block being assembled. `key` addresses a block that later parts may extend (`text:<id>`, `reasoning:<id>`,
 * `tool:<id>`); a delta that arrives without its start makes a block of its own, which nothing extends.
 */
type Block =
  | { readonly type: "text" | "reasoning"; readonly key: string | undefined; readonly text: string }
  | {
    readonly type: "tool-call"
    readonly key: string
    readonly id: string
    readonly name: string
    readonly arguments: string
    readonly deltas: number
  }

/** The fold's state: the blocks in order of appearance and what the response reported about itself. */
export interface State {
  readonly blocks: ReadonlyArray<Block>
  readonly finish: Response.FinishPart | undefined
  /** An `error` part, if the stream carried one. */
  readonly error: unknown
  readonly hasError: boolean
  /** The model the provider reported serving the request (`response-metadata`), if it did. */
  readonly reportedModel: string | undefined
}

/** The state before the first part. */
export const initial: State = {
  blocks: [],
  finish: undefined,
  error: undefined,
  hasError: false,
  reportedModel: undefined
}

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

/** The index of the latest block with `key`, or -1. Searched from the end: the block being extended is recent. */
const find = (blocks: ReadonlyArray<Block>, key: string): number => {
  for (let index = blocks.length - 1; index >= 0; index--) {
    if (blocks[index]!.key === key) return index
  }
  return -1
}

const append = (state: State, block: Block): State => ({ ...state, blocks: [...state.blocks, block] })

const replace = (state: State, index: number, block: Block): State => {
  const blocks = state.blocks.slice()
  blocks[index] = block
  return { ...state, blocks }
}

/** Folds one stream part into the state. Pure: the state passed in is never changed. */
export const step = (state: State, part: Response.StreamPart<Record<string, never>> | Response.AnyPart): State => {
  switch (part.type) {
    case "text-start":
    case "reasoning-start": {
      const type = part.type === "text-start" ? "text" : "reasoning"
      return append(state, { type, key: `${type}:${part.id}`, text: "" })
    }
    case "text-delta":
    case "reasoning-delta": {
      const type = part.type === "text-delta" ? "text" : "reasoning"
      const index = find(state.blocks, `${type}:${part.id}`)
      const block = index === -1 ? undefined : state.blocks[index]!
      return block !== undefined && block.type !== "tool-call"
        ? replace(state, index, { ...block, text: block.text + part.delta })
        : append(state, { type, key: undefined, text: part.delta })
    }
    case "text":
    case "reasoning":
      return append(state, { type: part.type, key: undefined, text: part.text })
    case "tool-params-start":
      return append(state, {
        type: "tool-call",
        key: `tool:${part.id}`,
        id: part.id,
        name: part.name,
        arguments: "",
        deltas: 0
      })
    case "tool-params-delta": {
      const index = find(state.blocks, `tool:${part.id}`)
      const block = index === -1 ? undefined : state.blocks[index]!
      return block !== undefined && block.type === "tool-call"
        ? replace(state, index, { ...block, arguments: block.arguments + part.delta, deltas: block.deltas + 1 })
        : state
    }
    case "tool-call": {
      if (part.providerExecuted) return state
      const index = find(state.blocks, `tool:${part.id}`)
      const serialised = JSON.stringify(part.params)
      if (index === -1) {
        return append(state, {
          type: "tool-call",
          key: `tool:${part.id}`,
          id: part.id,
          name: part.name,
          arguments: serialised,
          deltas: 0
        })
      }
      const block = state.blocks[index]!
      return block.type === "tool-call" && block.deltas === 0
        ? replace(state, index, { ...block, arguments: serialised })
        : state
    }
    case "response-metadata":
      return part.modelId._tag === "Some" ? { ...state, reportedModel: part.modelId.value } : state
    case "finish":
      return { ...state, finish: part }
    case "error":
      return { ...state, hasError: true, error: part.error }
    default:
      return state
  }
}

/** The assembled response: non-empty text and reasoning blocks and every tool call, in order. */
export const result = (state: State): Assembled => {
  const content: Array<Content.AssistantBlock> = []
  for (const block of state.blocks) {
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
    finishReason: state.finish?.reason,
    usage: state.finish === undefined ? undefined : usageOf(state.finish.usage),
    error: state.error,
    hasError: state.hasError,
    reportedModel: state.reportedModel
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
