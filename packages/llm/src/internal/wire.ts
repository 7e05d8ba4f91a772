/**
 * The chat-completions wire format: the request body we send (as types) and the response bodies we read (as
 * schemas, so every chunk is decoded and validated at the boundary). Fields are lenient where servers differ
 * (`null` vs absent, `reasoning_content` vs `reasoning`) and strict only where we depend on a shape.
 */
import { Either, type ParseResult, Schema } from "effect"

/** One `tool_calls` entry of an assistant message. */
export interface WireToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/** One message of the `messages` array. */
export type WireMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly reasoning_content?: string
    readonly tool_calls?: ReadonlyArray<WireToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/** One advertised function. */
export interface WireTool {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description?: string; readonly parameters: unknown }
}

/** `tool_choice`. */
export type WireToolChoice = "auto" | "none" | "required" | {
  readonly type: "function"
  readonly function: { readonly name: string }
}

const OptionalString = Schema.optional(Schema.NullOr(Schema.String))
const OptionalNumber = Schema.optional(Schema.NullOr(Schema.Number))

/** `usage`, with the DeepSeek and OpenAI extensions. */
export const Usage = Schema.Struct({
  prompt_tokens: OptionalNumber,
  completion_tokens: OptionalNumber,
  total_tokens: OptionalNumber,
  prompt_cache_hit_tokens: OptionalNumber,
  prompt_cache_miss_tokens: OptionalNumber,
  prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: OptionalNumber }))),
  completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: OptionalNumber })))
})
export type Usage = typeof Usage.Type

/** A fragment of a tool call in a streamed delta. */
export const ToolCallDelta = Schema.Struct({
  index: OptionalNumber,
  id: OptionalString,
  type: OptionalString,
  function: Schema.optional(Schema.NullOr(Schema.Struct({ name: OptionalString, arguments: OptionalString })))
})
export type ToolCallDelta = typeof ToolCallDelta.Type

/** The text fields a streamed delta and a whole message share. */
const messageText = {
  role: OptionalString,
  content: OptionalString,
  reasoning_content: OptionalString,
  /** vLLM and OpenRouter name the reasoning stream `reasoning`. */
  reasoning: OptionalString,
  /** OpenAI streams a refusal here instead of content. */
  refusal: OptionalString
}

/** `choices[].delta` of a streamed chunk. */
const Delta = Schema.Struct({
  ...messageText,
  tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ToolCallDelta)))
})
type Delta = typeof Delta.Type

/** An error object some servers put into the stream or body instead of a status code. */
const ErrorBody = Schema.Struct({
  message: OptionalString,
  code: Schema.optional(Schema.Unknown),
  type: OptionalString
})

/** One `chat.completion.chunk`. */
export const Chunk = Schema.Struct({
  id: OptionalString,
  model: OptionalString,
  created: OptionalNumber,
  choices: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    index: OptionalNumber,
    delta: Schema.optional(Schema.NullOr(Delta)),
    finish_reason: OptionalString
  })))),
  usage: Schema.optional(Schema.NullOr(Usage)),
  error: Schema.optional(Schema.NullOr(ErrorBody))
})
export type Chunk = typeof Chunk.Type

/** `choices[].message` of a non-streamed completion. */
const Message = Schema.Struct({
  ...messageText,
  tool_calls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    id: OptionalString,
    type: OptionalString,
    function: Schema.Struct({ name: Schema.String, arguments: OptionalString })
  }))))
})

/** A non-streamed `chat.completion`. */
export const Completion = Schema.Struct({
  id: OptionalString,
  model: OptionalString,
  created: OptionalNumber,
  choices: Schema.Array(Schema.Struct({
    index: OptionalNumber,
    message: Message,
    finish_reason: OptionalString
  })),
  usage: Schema.optional(Schema.NullOr(Usage))
})
export type Completion = typeof Completion.Type

const decodeChunkText = Schema.decodeUnknownEither(Schema.parseJson(Chunk))

/**
 * Decoders from the raw text (`[DONE]` is handled before decoding). Contract: `decodeChunk` takes what the schema
 * takes and refuses what it refuses, with the schema's error; a chunk in `Chunk`'s shape is its parsed JSON itself.
 */
export const decodeChunk = (text: string): Either.Either<Chunk, ParseResult.ParseError> => {
  const exact = exactChunk(text)
  return exact === undefined ? decodeChunkText(text) : Either.right(exact)
}
export const decodeCompletion = Schema.decodeUnknownEither(Schema.parseJson(Completion))

const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(Schema.Union(
  Schema.Struct({ error: Schema.Union(Schema.String, ErrorBody) }),
  ErrorBody
)))

/** An error object's fields (`{ error: { message, type, code } }`, `{ error: "…" }`, `{ message }`), if `text` is one. */
export const errorDetails = (
  text: string
): { readonly message: string | undefined; readonly type: string | undefined; readonly code: unknown } | undefined => {
  const decoded = decodeErrorBody(text)
  if (decoded._tag === "None") return undefined
  const body = decoded.value
  const error = "error" in body ? body.error : body
  return typeof error === "string"
    ? { message: error, type: undefined, code: undefined }
    : { message: error.message ?? undefined, type: error.type ?? undefined, code: error.code }
}

/** The message of an error object (`{ error: { message } }`, `{ error: "…" }`, `{ message }`), if `text` is one. */
export const errorMessage = (text: string): string | undefined => errorDetails(text)?.message

// The hand twin of `Chunk`'s schema for a streamed chunk's JSON (docs/performance.md, "A streamed chunk is its own
// decoding"): each field the schema declares has its type or is null or absent; other keys are let through (the
// schema drops them; nothing reads them). A test holds it to the schema on generated chunks and JSON.
const textOrNone = (value: unknown): boolean => value === undefined || value === null || typeof value === "string"
const numberOrNone = (value: unknown): boolean => value === undefined || value === null || typeof value === "number"
const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
const absentOr = (value: unknown, exact: (object: Readonly<Record<string, unknown>>) => boolean): boolean =>
  value === undefined || value === null || (isObject(value) && exact(value))
const everyOf = (value: unknown, exact: (object: Readonly<Record<string, unknown>>) => boolean): boolean =>
  value === undefined || value === null ||
  (Array.isArray(value) && value.every((item) => isObject(item) && exact(item)))

const exactToolCall = (call: Readonly<Record<string, unknown>>): boolean =>
  numberOrNone(call["index"]) && textOrNone(call["id"]) && textOrNone(call["type"]) &&
  absentOr(call["function"], (f) => textOrNone(f["name"]) && textOrNone(f["arguments"]))

const exactDelta = (delta: Readonly<Record<string, unknown>>): boolean =>
  textOrNone(delta["role"]) && textOrNone(delta["content"]) && textOrNone(delta["reasoning_content"]) &&
  textOrNone(delta["reasoning"]) &&
  textOrNone(delta["refusal"]) && everyOf(delta["tool_calls"], exactToolCall)

const exactUsage = (usage: Readonly<Record<string, unknown>>): boolean =>
  numberOrNone(usage["prompt_tokens"]) && numberOrNone(usage["completion_tokens"]) &&
  numberOrNone(usage["total_tokens"]) &&
  numberOrNone(usage["prompt_cache_hit_tokens"]) && numberOrNone(usage["prompt_cache_miss_tokens"]) &&
  absentOr(usage["prompt_tokens_details"], (details) => numberOrNone(details["cached_tokens"])) &&
  absentOr(usage["completion_tokens_details"], (details) => numberOrNone(details["reasoning_tokens"]))

/**
 * The chunk `text` holds, when it is JSON in `Chunk`'s shape: the parsed value itself (fresh plain objects, JSON's
 * types), which is what the schema would decode it to but for the keys the schema does not declare. Anything else
 * (not JSON, another shape) is undefined, and goes to the schema, which says what is wrong.
 */
const exactChunk = (json: string): Chunk | undefined => {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return undefined
  }
  if (!isObject(value)) return undefined
  const exact = textOrNone(value["id"]) && textOrNone(value["model"]) && numberOrNone(value["created"]) &&
    everyOf(
      value["choices"],
      (choice) =>
        numberOrNone(choice["index"]) && absentOr(choice["delta"], exactDelta) && textOrNone(choice["finish_reason"])
    ) &&
    absentOr(value["usage"], exactUsage) &&
    absentOr(value["error"], (error) => textOrNone(error["message"]) && textOrNone(error["type"]))
  // Checked field by field above: a `Chunk` with extra keys, which the type allows.
  return exact ? value as Chunk : undefined
}
