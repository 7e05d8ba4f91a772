/**
 * A lower model interface: a provider's response stream as parts that are already typed, for a caller that would
 * otherwise go through `LanguageModel.streamText`. That standard path rebuilds and recompiles the stream-part
 * schema for the toolkit on every request and decodes every part again, although a provider that builds its parts
 * in its own code has nothing left to validate. Harness's chat-completions provider and the testkit's scripted
 * model offer this interface next to their `LanguageModel`; the agent uses it when it belongs to the very
 * `LanguageModel` it was given and goes through the standard interface otherwise (ADR 0019).
 *
 * @since 0.0.0
 */
import type { AiError, LanguageModel } from "@effect/ai"
import { Response, Toolkit } from "@effect/ai"
import type { Chunk, Effect, Scope } from "effect"
import { Context, DateTime, Either, Option, type ParseResult, Schema, type Stream } from "effect"
import { slowPath } from "./internal/slowPath.js"

/**
 * A typed stream part, as `LanguageModel.streamText` yields it with tool-call resolution disabled. A `tool-call`
 * part's `params` are the JSON the provider parsed, not decoded with the tool's parameter schema: the consumer
 * decodes them (the agent does, from the raw argument text).
 *
 * @since 0.0.0
 * @category models
 */
export type Part = Response.StreamPart<Record<string, never>> | Response.ToolCallPart<string, unknown>

/**
 * The lower interface of one `LanguageModel`.
 *
 * @since 0.0.0
 * @category models
 */
export interface Service {
  /** The `LanguageModel` this stream belongs to. Contract: a caller uses {@link Service.streamText} only for it. */
  readonly model: LanguageModel.Service
  /**
   * Contract: the same request, the same parts in the same order and the same failures as `model.streamText`
   * with the same options (`tools` and `toolChoice` as `LanguageModel` resolves them from the toolkit), with each
   * part typed by {@link typed} instead of decoded per request.
   */
  readonly streamText: (options: LanguageModel.ProviderOptions) => Stream.Stream<Part, AiError.AiError>
  /**
   * Optional: the same response as a {@link Pull}, for a model whose reply is at hand without a stream (a scripted,
   * replayed or cached one) or that reads its response itself (Harness's provider, ADR 0083). Running a `Stream`
   * costs a channel executor per request (a few hundred interpreter steps even for a reply of one chunk) and a stage
   * per chunk for each of its layers; a pull hands the chunks over directly.
   *
   * Contract: the same request, the same parts in the same chunks and the same failures as {@link Service.streamText}
   * with the same options. What the response holds (a wait, a connection) is released when the scope closes; the
   * caller closes it as soon as it stops pulling.
   */
  readonly pullText?: ((options: LanguageModel.ProviderOptions) => Effect.Effect<Pull, never, Scope.Scope>) | undefined
}

/**
 * A response pulled chunk by chunk, in the shape `Stream.toPull` gives: each pull succeeds with the next chunk of
 * parts, fails with `Option.none()` once the response has ended and with `Option.some(error)` when it failed.
 *
 * @since 0.0.0
 * @category models
 */
export type Pull = Effect.Effect<Chunk.Chunk<Part>, Option.Option<AiError.AiError>>

/**
 * The lower interface in context, provided next to the `LanguageModel` it belongs to.
 *
 * @since 0.0.0
 * @category models
 */
export class ModelStream extends Context.Tag("@harness/domain/ModelStream")<ModelStream, Service>() {}

const marker = Response.PartTypeId

// The parts no hand conversion covers (files, sources, unusual metadata) go through the schema, built once.
const decodeOther = Schema.decodeUnknownEither(Response.StreamPart(Toolkit.empty))

const empty = (): Record<string, never> => ({})

/**
 * Types an encoded stream part the provider built itself: the value `Response.StreamPart`'s schema decodes it
 * to (the same keys in the same order, defaults applied, unknown keys dropped), built directly for the parts
 * providers stream (text, reasoning, tool params and calls, finish, error, response metadata) and decoded with
 * the schema for the others.
 *
 * Contract: trusts the shape of the hot parts (it is meant for parts a provider built in typed code, not for
 * foreign input); fails only where the schema would, for the other parts and for a response-metadata timestamp
 * that is not a date. One departure: a tool call's `params` are handed on as the provider parsed them, so a
 * `"__proto__"` key the JSON had stays an own key — the schema's record decoding assigns each key to a new object,
 * and that one assignment sets the object's prototype instead.
 *
 * @since 0.0.0
 * @category utils
 */
export const typed = (part: Response.StreamPartEncoded): Either.Either<Part, ParseResult.ParseError> => {
  // A tool call has no schema here: its parameters' schema is the toolkit's, named by the run, not by the stream.
  if (slowPath && part.type !== "tool-call") return decodeOther(part)
  switch (part.type) {
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
    case "tool-params-end":
      return Either.right({ type: part.type, id: part.id, metadata: part.metadata ?? empty(), [marker]: marker })
    case "text-delta":
    case "reasoning-delta":
    case "tool-params-delta":
      return Either.right({
        type: part.type,
        id: part.id,
        delta: part.delta,
        metadata: part.metadata ?? empty(),
        [marker]: marker
      })
    case "tool-params-start":
      return Either.right({
        type: part.type,
        id: part.id,
        name: part.name,
        ...(part.providerName === undefined ? {} : { providerName: part.providerName }),
        providerExecuted: part.providerExecuted ?? false,
        metadata: part.metadata ?? empty(),
        [marker]: marker
      })
    case "tool-call":
      return Either.right({
        type: part.type,
        id: part.id,
        name: part.name,
        params: part.params,
        ...(part.providerName === undefined ? {} : { providerName: part.providerName }),
        providerExecuted: part.providerExecuted ?? false,
        metadata: part.metadata ?? empty(),
        [marker]: marker
      })
    case "finish": {
      const usage = part.usage
      return Either.right({
        type: part.type,
        reason: part.reason,
        usage: new Response.Usage(
          {
            inputTokens: usage.inputTokens,
            outputTokens: usage.outputTokens,
            totalTokens: usage.totalTokens,
            ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
            ...(usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: usage.cachedInputTokens })
          },
          true
        ), // typed numbers from the provider: no constructor validation
        metadata: part.metadata ?? empty(),
        [marker]: marker
      })
    }
    case "error":
      return Either.right({ type: part.type, error: part.error, metadata: part.metadata ?? empty(), [marker]: marker })
    case "response-metadata": {
      const timestamp = part.timestamp === undefined ? Option.none() : DateTime.make(part.timestamp)
      if (part.timestamp !== undefined && Option.isNone(timestamp)) return decodeOther(part)
      return Either.right({
        type: part.type,
        id: Option.fromNullable(part.id),
        modelId: Option.fromNullable(part.modelId),
        timestamp: Option.map(timestamp, DateTime.toUtc),
        metadata: part.metadata ?? empty(),
        [marker]: marker
      })
    }
    default:
      return decodeOther(part)
  }
}

/**
 * The non-streaming form of a reply's streamed parts, as `generateText` returns it: each text or reasoning delta
 * as a whole part, tool calls and the finish part as they are; start/end markers and tool-parameter fragments
 * dropped.
 *
 * Contract: pure; keeps the order of the parts it keeps.
 *
 * @since 0.0.0
 * @category utils
 */
export const aggregate = (parts: Iterable<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  for (const part of parts) {
    switch (part.type) {
      case "text-delta":
        out.push({ type: "text", text: part.delta })
        break
      case "reasoning-delta":
        out.push({ type: "reasoning", text: part.delta })
        break
      case "tool-call":
      case "finish":
        out.push(part)
        break
    }
  }
  return out
}
