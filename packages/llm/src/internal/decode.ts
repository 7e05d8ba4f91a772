/**
 * Chat-completions responses → `@effect/ai` response parts, as a pure fold over decoded chunks (streaming) or one
 * function over a completion (non-streaming). Problems are returned as values; the caller maps them into errors.
 *
 * Streaming contract: text and reasoning become `text-*` / `reasoning-*` blocks (a block closes when the other
 * kind or a tool call starts); tool-call fragments are assembled per `index` and emitted as
 * `tool-params-start/delta/end` carrying the raw argument text; at `[DONE]` a `tool-call` part follows only for a
 * call whose name was advertised and whose arguments parse to a JSON object (anything else would make
 * `LanguageModel` fail the whole stream); the `finish` part comes last, with the usage of the last usage chunk.
 */
import type { Response } from "@effect/ai"
import { ToolArguments } from "@harness/domain"
import { Either } from "effect"
import type { Chunk, Completion, ToolCallDelta, Usage } from "./wire.js"

/** A response that cannot be turned into parts. */
export type Problem =
  | { readonly _tag: "Empty" }
  | { readonly _tag: "InsufficientResource" }
  | {
    readonly _tag: "StreamError"
    readonly message: string
    readonly type: string | undefined
    readonly code: unknown
  }
  | { readonly _tag: "Refusal"; readonly text: string }
  | { readonly _tag: "TooLarge"; readonly limit: number }

/** The metadata key under which parts carry Harness facts (raw arguments, DeepSeek cache tokens). */
const metadataKey = ToolArguments.harnessKey

type Part = Response.StreamPartEncoded

interface Call {
  readonly index: number
  readonly id: string | undefined
  readonly name: string | undefined
  readonly arguments: string
  readonly started: boolean
}

interface Header {
  readonly id: string | undefined
  readonly model: string | undefined
  readonly created: number | undefined
}

/** The fold's state. */
export interface State {
  readonly open: "text" | "reasoning" | undefined
  readonly blocks: number
  readonly sawContent: boolean
  readonly sawReasoning: boolean
  /** The refusal text streamed so far (OpenAI's `delta.refusal`), `""` when none. */
  readonly refusal: string
  readonly calls: ReadonlyArray<Call>
  readonly finishReason: string | undefined
  readonly usage: Usage | undefined
  readonly header: Header | undefined
  readonly headerSent: boolean
  /** The UTF-8 bytes of text, reasoning, refusal and tool-call arguments received so far. */
  readonly replyBytes: number
}

/** The state before the first chunk. */
export const initial: State = {
  open: undefined,
  blocks: 0,
  sawContent: false,
  sawReasoning: false,
  refusal: "",
  calls: [],
  finishReason: undefined,
  usage: undefined,
  header: undefined,
  headerSent: false,
  replyBytes: 0
}

const nonEmpty = (s: string | null | undefined): s is string => typeof s === "string" && s.length > 0

/** The UTF-8 length of `text` (a lone surrogate counts 2 bytes instead of the 3 of its replacement). */
const utf8Length = (text: string | null | undefined): number => {
  if (text == null) return 0
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0x80) bytes += unit >= 0x800 && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1
  }
  return bytes
}

const blockId = (kind: "text" | "reasoning", n: number): string => `${kind}-${n}`

/** Maps `finish_reason` (DeepSeek's `insufficient_system_resource` is handled before). */
const finishReason = (reason: string | undefined): Response.FinishReason => {
  switch (reason) {
    case undefined:
      return "unknown"
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    default:
      return "other"
  }
}

/** Maps `usage` into `Response.Usage` (encoded). */
const usage = (wire: Usage | undefined): typeof Response.Usage.Encoded => {
  const input = wire?.prompt_tokens ?? undefined
  const output = wire?.completion_tokens ?? undefined
  const total = wire?.total_tokens ?? (input !== undefined && output !== undefined ? input + output : undefined)
  const reasoning = wire?.completion_tokens_details?.reasoning_tokens ?? undefined
  const cached = wire?.prompt_cache_hit_tokens ?? wire?.prompt_tokens_details?.cached_tokens ?? undefined
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: total,
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning }),
    ...(cached === undefined ? {} : { cachedInputTokens: cached })
  }
}

interface InvalidCall {
  readonly id: string
  readonly name: string
  readonly rawArguments: string
}

const finishPart = (
  reason: string | undefined,
  wire: Usage | undefined,
  invalid: ReadonlyArray<InvalidCall>
): Response.FinishPartEncoded => {
  const facts: Record<string, unknown> = {}
  if (reason !== undefined) facts.finishReason = reason
  if (wire?.prompt_cache_hit_tokens != null) facts.promptCacheHitTokens = wire.prompt_cache_hit_tokens
  if (wire?.prompt_cache_miss_tokens != null) facts.promptCacheMissTokens = wire.prompt_cache_miss_tokens
  if (invalid.length > 0) facts.invalidToolCalls = invalid
  return {
    type: "finish",
    reason: finishReason(reason),
    usage: usage(wire),
    metadata: { [metadataKey]: facts }
  }
}

const headerPart = (header: Header): Response.ResponseMetadataPartEncoded => ({
  type: "response-metadata",
  ...(header.id == null ? {} : { id: header.id }),
  ...(header.model == null ? {} : { modelId: header.model }),
  ...(header.created == null || !Number.isFinite(header.created)
    ? {}
    : { timestamp: new Date(header.created * 1000).toISOString() })
})

const toolCallPart = (id: string, name: string, params: Readonly<Record<string, unknown>>, raw: string): Part => ({
  type: "tool-call",
  id,
  name,
  params,
  metadata: { [metadataKey]: { rawArguments: raw } }
})

const closeOpen = (state: State, parts: Array<Part>): State => {
  if (state.open === undefined) return state
  const id = blockId(state.open, state.blocks)
  parts.push(state.open === "text" ? { type: "text-end", id } : { type: "reasoning-end", id })
  return { ...state, open: undefined }
}

const appendBlock = (state: State, kind: "text" | "reasoning", delta: string, parts: Array<Part>): State => {
  let next = state
  if (next.open !== kind) {
    next = closeOpen(next, parts)
    next = { ...next, open: kind, blocks: next.blocks + 1 }
    const id = blockId(kind, next.blocks)
    parts.push(kind === "text" ? { type: "text-start", id } : { type: "reasoning-start", id })
  }
  const id = blockId(kind, next.blocks)
  parts.push(kind === "text" ? { type: "text-delta", id, delta } : { type: "reasoning-delta", id, delta })
  return kind === "text" ? { ...next, sawContent: true } : { ...next, sawReasoning: true }
}

const callId = (call: Call): string => call.id ?? `call_${call.index}`

const startCall = (call: Call, parts: Array<Part>): Call => {
  const id = callId(call)
  parts.push({ type: "tool-params-start", id, name: call.name ?? "" })
  if (call.arguments.length > 0) parts.push({ type: "tool-params-delta", id, delta: call.arguments })
  return { ...call, id, started: true }
}

type Fragment = ToolCallDelta

// Servers that omit `index` (a few local ones) are matched by id, else continue the last call.
const indexOf = (fragment: Fragment, position: number, calls: ReadonlyArray<Call>): number => {
  if (fragment.index != null) return fragment.index
  const last = calls.at(-1)
  if (nonEmpty(fragment.id)) {
    const known = calls.find((call) => call.id === fragment.id)
    if (known !== undefined) return known.index
    return last === undefined ? position : Math.max(...calls.map((call) => call.index)) + 1
  }
  return last === undefined ? position : last.index
}

const appendToolFragments = (
  state: State,
  fragments: ReadonlyArray<Fragment> | null | undefined,
  parts: Array<Part>
): State => {
  if (fragments == null || fragments.length === 0) return state
  let next = closeOpen(state, parts)
  const calls = [...next.calls]
  fragments.forEach((fragment, position) => {
    const index = indexOf(fragment, position, calls)
    const at = calls.findIndex((call) => call.index === index)
    const previous: Call = at >= 0
      ? calls[at]!
      : { index, id: undefined, name: undefined, arguments: "", started: false }
    const delta = fragment.function?.arguments ?? ""
    let call: Call = {
      ...previous,
      id: previous.id ?? (nonEmpty(fragment.id) ? fragment.id : undefined),
      name: previous.name ?? (nonEmpty(fragment.function?.name) ? fragment.function.name : undefined),
      arguments: previous.arguments + delta
    }
    if (!call.started) {
      if (call.name !== undefined) call = startCall(call, parts)
    } else if (delta.length > 0) {
      parts.push({ type: "tool-params-delta", id: callId(call), delta })
    }
    if (at >= 0) calls[at] = call
    else calls.push(call)
  })
  next = { ...next, calls }
  return next
}

const withHeader = (state: State, parts: Array<Part>): readonly [State, ReadonlyArray<Part>] => {
  if (state.headerSent || parts.length === 0 || state.header === undefined) return [state, parts]
  return [{ ...state, headerSent: true }, [headerPart(state.header), ...parts]]
}

/**
 * The choice with `index` 0 (a missing index counts as 0). Contract: with `n > 1` every other choice is ignored, so
 * several choices never interleave into one text.
 */
const firstChoice = <C extends { readonly index?: number | null | undefined }>(
  choices: ReadonlyArray<C> | null | undefined
): C | undefined => choices?.find((choice) => (choice.index ?? 0) === 0)

/**
 * Folds one decoded chunk in. Contract: returns the parts to emit now, in order; only the first choice is read; a
 * chunk that brings the reply's text, reasoning, refusal and tool-call arguments past `maxReplyBytes` (UTF-8) is
 * `TooLarge`, and none of its parts is returned.
 */
export const step = (
  state: State,
  chunk: Chunk,
  maxReplyBytes: number
): Either.Either<readonly [State, ReadonlyArray<Part>], Problem> => {
  if (chunk.error != null) {
    return Either.left({
      _tag: "StreamError",
      message: chunk.error.message ?? "the server reported an error",
      type: chunk.error.type ?? undefined,
      code: chunk.error.code
    })
  }
  const choice = firstChoice(chunk.choices)
  const delta = choice?.delta
  let added = 0
  if (delta != null) {
    added = utf8Length(delta.reasoning_content ?? delta.reasoning) + utf8Length(delta.content) +
      utf8Length(delta.refusal)
    for (const fragment of delta.tool_calls ?? []) added += utf8Length(fragment.function?.arguments)
    if (state.replyBytes + added > maxReplyBytes) return Either.left({ _tag: "TooLarge", limit: maxReplyBytes })
  }
  const parts: Array<Part> = []
  let next: State = added === 0 ? state : { ...state, replyBytes: state.replyBytes + added }
  if (next.header === undefined) {
    next = {
      ...next,
      header: { id: chunk.id ?? undefined, model: chunk.model ?? undefined, created: chunk.created ?? undefined }
    }
  }
  if (chunk.usage != null) next = { ...next, usage: chunk.usage }
  if (choice !== undefined) {
    if (delta != null) {
      if (nonEmpty(delta.refusal)) next = { ...next, refusal: next.refusal + delta.refusal }
      const reasoning = delta.reasoning_content ?? delta.reasoning
      if (nonEmpty(reasoning)) next = appendBlock(next, "reasoning", reasoning, parts)
      if (nonEmpty(delta.content)) next = appendBlock(next, "text", delta.content, parts)
      next = appendToolFragments(next, delta.tool_calls, parts)
    }
    if (nonEmpty(choice.finish_reason)) {
      if (choice.finish_reason === "insufficient_system_resource") {
        return Either.left({ _tag: "InsufficientResource" })
      }
      next = { ...next, finishReason: choice.finish_reason }
    }
  }
  return Either.right(withHeader(next, parts))
}

/**
 * Closes the response at `[DONE]`. Contract: a refusal is `Refusal` with its text (whatever else came); open
 * blocks close, every call gets `tool-params-end` (and a `tool-call` when valid), then `finish`; a response with no
 * content, reasoning or tool calls is `Empty` (unless the server filtered it: then it finishes with
 * `content-filter`).
 */
export const done = (
  state: State,
  advertised: ReadonlySet<string>
): Either.Either<ReadonlyArray<Part>, Problem> => {
  if (state.refusal !== "") return Either.left({ _tag: "Refusal", text: state.refusal })
  if (
    !state.sawContent && !state.sawReasoning && state.calls.length === 0 &&
    state.finishReason !== "content_filter"
  ) {
    return Either.left({ _tag: "Empty" })
  }
  const parts: Array<Part> = []
  let next = closeOpen(state, parts)
  const calls = next.calls.map((call) => (call.started ? call : startCall(call, parts)))
  const invalid: Array<InvalidCall> = []
  for (const call of calls) {
    const id = callId(call)
    parts.push({ type: "tool-params-end", id })
  }
  for (const call of calls) {
    const id = callId(call)
    const name = call.name ?? ""
    const params = advertised.has(name) ? ToolArguments.parseObject(call.arguments) : undefined
    if (params === undefined) invalid.push({ id, name, rawArguments: call.arguments })
    else parts.push(toolCallPart(id, name, params, call.arguments))
  }
  parts.push(finishPart(next.finishReason, next.usage, invalid))
  next = { ...next, calls }
  return Either.right(withHeader(next, parts)[1])
}

/**
 * A non-streamed completion → parts. Contract: same mappings as the stream (`TooLarge` past `maxReplyBytes`); calls that would not decode against
 * the advertised tools are left out of the parts and listed in the finish metadata (`harness.invalidToolCalls`).
 */
export const completion = (
  body: Completion,
  advertised: ReadonlySet<string>,
  maxReplyBytes: number
): Either.Either<ReadonlyArray<Response.PartEncoded>, Problem> => {
  const choice = firstChoice(body.choices)
  const size = choice === undefined ? 0 : utf8Length(choice.message.reasoning_content ?? choice.message.reasoning) +
    utf8Length(choice.message.content) + utf8Length(choice.message.refusal) +
    (choice.message.tool_calls ?? []).reduce((sum, call) => sum + utf8Length(call.function.arguments), 0)
  if (size > maxReplyBytes) return Either.left({ _tag: "TooLarge", limit: maxReplyBytes })
  if (choice?.finish_reason === "insufficient_system_resource") return Either.left({ _tag: "InsufficientResource" })
  const message = choice?.message
  if (nonEmpty(message?.refusal)) return Either.left({ _tag: "Refusal", text: message.refusal })
  const reasoning = message?.reasoning_content ?? message?.reasoning
  const content = message?.content
  const wireCalls = message?.tool_calls ?? []
  if (
    !nonEmpty(reasoning) && !nonEmpty(content) && wireCalls.length === 0 && choice?.finish_reason !== "content_filter"
  ) {
    return Either.left({ _tag: "Empty" })
  }
  const parts: Array<Response.PartEncoded> = [
    headerPart({ id: body.id ?? undefined, model: body.model ?? undefined, created: body.created ?? undefined })
  ]
  if (nonEmpty(reasoning)) parts.push({ type: "reasoning", text: reasoning })
  if (nonEmpty(content)) parts.push({ type: "text", text: content })
  const invalid: Array<InvalidCall> = []
  wireCalls.forEach((call, index) => {
    const id = nonEmpty(call.id) ? call.id : `call_${index}`
    const raw = call.function.arguments ?? ""
    const params = advertised.has(call.function.name) ? ToolArguments.parseObject(raw) : undefined
    if (params === undefined) invalid.push({ id, name: call.function.name, rawArguments: raw })
    else {
      parts.push({
        type: "tool-call",
        id,
        name: call.function.name,
        params,
        metadata: { [metadataKey]: { rawArguments: raw } }
      })
    }
  })
  parts.push(finishPart(choice?.finish_reason ?? undefined, body.usage ?? undefined, invalid))
  return Either.right(parts)
}
