/**
 * Assembles one model response from its stream parts, as a pure fold (like the provider's `decode.ts`): a
 * {@link State} value and {@link step}`(state, part) → state`, then {@link result}. Text, reasoning and tool calls
 * come out in order of appearance, with the finish reason, usage, an error part and the model the provider reported.
 * Tool calls are built from `tool-params-start/delta/end` (raw text = the concatenated deltas) and only completed by
 * a final `tool-call` part when no deltas came (raw text = its serialised params), so the log records the model's
 * argument text verbatim.
 */
import { Response, Toolkit } from "@effect/ai"
import type { Content, Json, SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"
import { Schema } from "effect"
import { slowPath } from "./slowPath.js"

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

/**
 * The state with its fields replaced: one object literal, not a spread. The fold runs for every stream part, and V8
 * builds a literal many times faster than it copies a spread (ADR 0040).
 */
const stateOf = (state: State, changes: Partial<State>): State => ({
  blocks: changes.blocks ?? state.blocks,
  finish: changes.finish ?? state.finish,
  // An `error` part sets both.
  error: changes.hasError === undefined ? state.error : changes.error,
  hasError: changes.hasError ?? state.hasError,
  reportedModel: changes.reportedModel ?? state.reportedModel
})

const append = (state: State, block: Block): State => stateOf(state, { blocks: [...state.blocks, block] })

const replace = (state: State, index: number, block: Block): State => {
  const blocks = state.blocks.slice()
  blocks[index] = block
  return stateOf(state, { blocks })
}

const toolCall = (block: Extract<Block, { type: "tool-call" }>, args: string, deltas: number): Block => ({
  type: "tool-call",
  key: block.key,
  id: block.id,
  name: block.name,
  arguments: args,
  deltas
})

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
        ? replace(state, index, { type: block.type, key: block.key, text: block.text + part.delta })
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
        ? replace(state, index, toolCall(block, block.arguments + part.delta, block.deltas + 1))
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
        ? replace(state, index, toolCall(block, serialised, block.deltas))
        : state
    }
    case "response-metadata":
      return part.modelId._tag === "Some"
        ? stateOf(state, { reportedModel: part.modelId.value })
        : state
    case "finish":
      return stateOf(state, { finish: part })
    case "error":
      return stateOf(state, { hasError: true, error: part.error })
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
        // Non-empty by construction: branded without the schema's check (ADR 0042).
        id: Ids.ToolCallId.make(block.id === "" ? `call-${content.length}` : block.id, true),
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
  if (isCount(usage.inputTokens)) out.inputTokens = usage.inputTokens!
  if (isCount(usage.outputTokens)) out.outputTokens = usage.outputTokens!
  if (isCount(usage.totalTokens)) out.totalTokens = usage.totalTokens!
  if (isCount(usage.reasoningTokens)) out.reasoningTokens = usage.reasoningTokens!
  if (isCount(usage.cachedInputTokens)) out.cachedInputTokens = usage.cachedInputTokens!
  return out
}

/** An `assistant/message`'s data, as the turn builds it from an {@link Assembled} response. */
type MessageData = SessionEvent.SessionEventInputOf<"assistant/message">["data"]

const isString = (value: unknown): value is string => typeof value === "string"
const isPositive = (n: unknown): boolean => typeof n === "number" && Number.isSafeInteger(n) && n >= 1
const isCount = (n: unknown): boolean => typeof n === "number" && Number.isSafeInteger(n) && n >= 0 && !Object.is(n, -0)

/**
 * Whether `data` is an `assistant/message` the schema accepts, checked field by field: each block a text or
 * reasoning block with a string, or a tool call with a non-empty id and string name and arguments; the provenance's
 * strings; the finish reason a string; each usage count a non-negative safe integer. As strict as the schema
 * (stricter: no `replayState`, which the turn never sets), so a message that passes is appended without the schema
 * pass (trusted, ADR 0023) and one that does not takes the validating append, which names what is wrong. The
 * strings and integers here survive JSON unchanged. The parts a message is assembled from were typed where they
 * entered (`ModelStream.typed`, or `@effect/ai`'s decoding); this check covers a `LanguageModel` that skipped both.
 */
export const isValidMessage = (data: MessageData): boolean => {
  if (!isPositive(data.turn) || !isPositive(data.step)) return false
  for (const block of data.content) {
    if (block.type === "tool-call") {
      if (!isString(block.id) || block.id === "" || !isString(block.name) || !isString(block.arguments)) return false
    } else if ((block.type !== "text" && block.type !== "reasoning") || !isString(block.text)) {
      return false
    }
  }
  // An optional field is absent or holds its type: a key holding `undefined` is refused, as the schema does.
  const provenance = data.provenance
  if (!isString(provenance.model) || "replayState" in provenance) return false
  if ("provider" in provenance && !isString(provenance.provider)) return false
  if ("reportedModel" in provenance && !isString(provenance.reportedModel)) return false
  if ("finishReason" in data && !isString(data.finishReason)) return false
  if ("usage" in data) {
    const usage = data.usage
    if (typeof usage !== "object" || usage === null) return false
    for (const key in usage) if (!isCount(usage[key as keyof typeof usage])) return false
  }
  return true
}

/** A stream part as the agent receives it: typed by `ModelStream`, or decoded by `LanguageModel.streamText`. */
export type AnyStreamPart = Response.StreamPart<Record<string, never>> | Response.AnyPart

// `@effect/ai`'s own schema of the stream parts, built once; used for the parts without a fast path below.
const encodeWithSchema = Schema.encodeUnknownEither(Response.StreamPart(Toolkit.empty))

/**
 * A directly built encoding with `metadata` as the schema encodes it, left out when empty (its decoding default).
 * `encoded` is JSON as it is; metadata is copied as JSON.
 */
const withMetadata = (encoded: Json.JsonObject, metadata: Response.ProviderMetadata): Json.JsonValue =>
  isEmpty(metadata) ? encoded : { ...encoded, metadata: jsonOf(metadata) }

/** Whether an object has no enumerable key (without building the list of its keys, once per streamed part). */
const isEmpty = (object: object): boolean => {
  for (const _ in object) return false
  return true
}

/**
 * A finish part's usage as `jsonOf` writes it (its counts in their order, each by `jsonOf`'s own rule for a number,
 * `undefined` ones left out), built directly: `jsonOf`'s generic walk cost a step a few µs while the process warms
 * up. One named store per count, not a loop over the names: a keyed read of a class instance is slow until optimized.
 */
const usageJson = (usage: Response.Usage): Json.JsonObject => {
  const out: Record<string, Json.JsonValue> = {}
  const input = plain(usage.inputTokens)
  if (input !== undefined) out["inputTokens"] = input
  const output = plain(usage.outputTokens)
  if (output !== undefined) out["outputTokens"] = output
  const total = plain(usage.totalTokens)
  if (total !== undefined) out["totalTokens"] = total
  const reasoning = plain(usage.reasoningTokens)
  if (reasoning !== undefined) out["reasoningTokens"] = reasoning
  const cached = plain(usage.cachedInputTokens)
  if (cached !== undefined) out["cachedInputTokens"] = cached
  return out
}

/**
 * `@effect/ai`'s own encoding of a stream part (`Response.StreamPartEncoded`, what `Response.StreamPart`'s schema
 * encodes it to), as JSON, for `assistant/chunk`. The parts a model streams most (text, reasoning, tool params and
 * calls, finish) are built directly — the same keys and values the schema writes, minus an empty `metadata` and
 * `undefined` usage counts (their decoding defaults) — so a streamed part costs no schema run; every other part
 * goes through the schema. A test decodes every kind back with the schema (the round trip).
 *
 * Contract: the result is JSON-lossless (values the schema leaves untyped — an error payload, provider metadata,
 * tool parameters — are copied as JSON); `Response.StreamPart` decodes it to the part it came from.
 */
export const chunkJson = (part: AnyStreamPart): Json.JsonValue => {
  if (slowPath) return chunkJsonBySchema(part)
  switch (part.type) {
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
    case "tool-params-end":
      return withMetadata({ type: part.type, id: part.id }, part.metadata)
    case "text-delta":
    case "reasoning-delta":
    case "tool-params-delta":
      return withMetadata({ type: part.type, id: part.id, delta: part.delta }, part.metadata)
    case "tool-params-start":
      return withMetadata(
        {
          type: part.type,
          id: part.id,
          name: part.name,
          ...(part.providerName === undefined ? {} : { providerName: part.providerName }),
          providerExecuted: part.providerExecuted
        },
        part.metadata
      )
    case "tool-call":
      return withMetadata(
        {
          type: part.type,
          id: part.id,
          name: part.name,
          params: jsonOf(part.params),
          ...(part.providerName === undefined ? {} : { providerName: part.providerName }),
          providerExecuted: part.providerExecuted
        },
        part.metadata
      )
    case "finish":
      return withMetadata({ type: part.type, reason: part.reason, usage: usageJson(part.usage) }, part.metadata)
    default:
      return chunkJsonBySchema(part)
  }
}

/** `chunkJson` by `@effect/ai`'s schema: the encoding, an empty `metadata` left out, as JSON. */
const chunkJsonBySchema = (part: AnyStreamPart): Json.JsonValue => {
  const encoded = encodeWithSchema(part)
  // A part the schema cannot encode (a tool result: the agent's parts never carry one) is kept as its fields.
  const value: object = encoded._tag === "Right" ? encoded.right : part
  return jsonOf(
    "metadata" in value && typeof value.metadata === "object" && value.metadata !== null && isEmpty(value.metadata)
      ? { ...value, metadata: undefined }
      : value
  )
}

/**
 * Any value as JSON, for records and messages: `undefined` members are left out, non-finite numbers become `null`,
 * class instances their own fields (without the `~`-prefixed part markers), bytes a count.
 */
export const jsonOf = (value: unknown): Json.JsonValue => plain(value) ?? null

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
    out[key] = item
  }
  return out
}
