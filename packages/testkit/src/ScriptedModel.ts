/**
 * A real `LanguageModel` (built with `LanguageModel.make`) that answers from a script, for deterministic agent
 * tests. Each request takes the next scripted reply; a reply streams its parts (optionally after a delay that runs
 * on `Clock`, so `TestClock` drives it), then finishes, fails with an `LlmFailure`, or hangs until interrupted.
 * Every request is recorded.
 *
 * Tool calls are emitted the way Harness's own provider emits them: `tool-params-start/delta/end` parts with the
 * raw argument text (which may be invalid JSON, or name a tool nobody advertised), and a final `tool-call` part
 * only when the name was advertised and the arguments parse to an object.
 *
 * @since 0.0.0
 */
import { AiError, LanguageModel, Prompt, type Response, Tool } from "@effect/ai"
import { type LlmFailure, ModelStream } from "@harness/domain"
import { Chunk, Context, type Duration, Effect, Either, Layer, Option, Ref, Stream } from "effect"

/**
 * One piece of a scripted reply's content.
 *
 * @since 0.0.0
 * @category models
 */
export type Piece =
  | { readonly _tag: "text"; readonly text: string }
  | { readonly _tag: "reasoning"; readonly text: string }
  | { readonly _tag: "tool-call"; readonly id: string | undefined; readonly name: string; readonly arguments: string }

/**
 * One scripted reply.
 *
 * @since 0.0.0
 * @category models
 */
export interface Reply {
  readonly pieces: ReadonlyArray<Piece>
  /** The finish reason; `tool-calls` when a tool call is present, else `stop`, unless set. */
  readonly finish?: Response.FinishReason | undefined
  readonly usage?: { readonly inputTokens?: number; readonly outputTokens?: number } | undefined
  /** Waits this long (on `Clock`) before the first part. */
  readonly delay?: Duration.DurationInput | undefined
  /** After the pieces, fail with this failure instead of finishing. */
  readonly failure?: LlmFailure.LlmFailure | undefined
  /** After the pieces, never finish (until interrupted). */
  readonly hang?: boolean | undefined
  /** The model the provider reports serving the request: a `response-metadata` part before the pieces. */
  readonly reportedModel?: string | undefined
}

/**
 * A text piece.
 *
 * @since 0.0.0
 * @category replies
 */
export const text = (text: string): Piece => ({ _tag: "text", text })

/**
 * A reasoning piece.
 *
 * @since 0.0.0
 * @category replies
 */
export const reasoning = (text: string): Piece => ({ _tag: "reasoning", text })

/**
 * A tool-call piece. `args` is the raw argument text, or a value serialised with `JSON.stringify`.
 *
 * @since 0.0.0
 * @category replies
 */
export const toolCall = (name: string, args: string | object = {}, options?: { readonly id?: string }): Piece => ({
  _tag: "tool-call",
  id: options?.id,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args)
})

/**
 * A reply from pieces.
 *
 * @since 0.0.0
 * @category replies
 */
export const reply = (...pieces: ReadonlyArray<Piece>): Reply => ({ pieces })

/**
 * A reply that only says `text`.
 *
 * @since 0.0.0
 * @category replies
 */
export const textResponse = (value: string): Reply => reply(text(value))

/**
 * A reply that makes tool calls (optionally with text before them).
 *
 * @since 0.0.0
 * @category replies
 */
export const toolCallResponse = (...calls: ReadonlyArray<Piece>): Reply => reply(...calls)

/**
 * A reply truncated by the output limit (finish `length`): its tool calls are incomplete.
 *
 * @since 0.0.0
 * @category replies
 */
export const maxTokensResponse = (...pieces: ReadonlyArray<Piece>): Reply => ({ pieces, finish: "length" })

/**
 * A provider failure with an `LlmFailure` code, carried as the `AiError`'s cause (so `failureOf` returns it).
 *
 * @since 0.0.0
 * @category replies
 */
export const failure = (
  code: LlmFailure.LlmFailureCode,
  message = `scripted ${code} failure`,
  extra?: { readonly status?: number; readonly retryAfterMs?: number }
): Reply => ({ pieces: [], failure: { code, message, ...extra } })

/**
 * Streams `pieces`, then fails with the given code: a failure after partial output.
 *
 * @since 0.0.0
 * @category replies
 */
export const failureAfter = (
  pieces: ReadonlyArray<Piece>,
  code: LlmFailure.LlmFailureCode,
  message = `scripted ${code} failure after partial output`
): Reply => ({ pieces, failure: { code, message } })

/**
 * Streams `pieces`, then hangs until the request is interrupted.
 *
 * @since 0.0.0
 * @category replies
 */
export const hanging = (...pieces: ReadonlyArray<Piece>): Reply => ({ pieces, hang: true })

/**
 * The same reply, after a delay on `Clock`.
 *
 * @since 0.0.0
 * @category replies
 */
export const delayed = (delay: Duration.DurationInput, value: Reply): Reply => ({ ...value, delay })

/**
 * What the model received in one request.
 *
 * @since 0.0.0
 * @category models
 */
export interface Request {
  /** The request's number, from 0. */
  readonly index: number
  /** The prompt (rebuilt on each read from the recording, which shares each request's prefix with the one before). */
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<
    { readonly name: string; readonly description: string | undefined; readonly parameters: unknown }
  >
  readonly toolChoice: unknown
}

/**
 * The script's controls.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  /**
   * Every request received so far, in order. Contract: recording costs memory in proportion to the new messages
   * of each request, not to its whole prompt: a request whose prompt starts with the previous request's messages
   * (the same message objects; a system message with the same text) stores only the rest.
   */
  readonly requests: Effect.Effect<ReadonlyArray<Request>>
  /** How many requests were received. */
  readonly requestCount: Effect.Effect<number>
  /** Appends replies to the script. */
  readonly push: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  /** How many scripted replies are left. */
  readonly remaining: Effect.Effect<number>
}

/**
 * One recorded request: its messages as a shared prefix of the previous request's messages plus its own.
 */
interface Recorded {
  readonly index: number
  readonly base: Recorded | undefined
  /** How many leading messages are the base's. */
  readonly shared: number
  readonly own: ReadonlyArray<Prompt.Message>
  readonly length: number
  readonly tools: Request["tools"]
  readonly toolChoice: unknown
}

const sameMessage = (a: Prompt.Message, b: Prompt.Message): boolean =>
  a === b || (a.role === "system" && b.role === "system" && a.content === b.content)

/**
 * Records a request against the previous one (`prior` = the previous request's messages, held only until the next
 * request): the longest common prefix is stored by reference, the rest as the request's own messages.
 */
const record = (
  previous: Recorded | undefined,
  prior: ReadonlyArray<Prompt.Message>,
  index: number,
  content: ReadonlyArray<Prompt.Message>,
  tools: Request["tools"],
  toolChoice: unknown
): Recorded => {
  let shared = 0
  const max = previous === undefined ? 0 : Math.min(prior.length, content.length)
  while (shared < max && sameMessage(prior[shared]!, content[shared]!)) shared++
  return {
    index,
    base: shared === 0 ? undefined : previous,
    shared,
    own: content.slice(shared),
    length: content.length,
    tools,
    toolChoice
  }
}

/** The messages of a recorded request: walks back through the bases only as far as its shared prefix reaches. */
const messagesOf = (recorded: Recorded): ReadonlyArray<Prompt.Message> => {
  const pieces: Array<ReadonlyArray<Prompt.Message>> = [recorded.own]
  let need = recorded.shared
  let at = recorded.base
  while (need > 0 && at !== undefined) {
    if (need > at.shared) pieces.push(at.own.slice(0, need - at.shared))
    need = Math.min(need, at.shared)
    at = at.base
  }
  return pieces.reverse().flat()
}

const requestOf = (recorded: Recorded): Request => ({
  index: recorded.index,
  get prompt() {
    return Prompt.fromMessages(messagesOf(recorded))
  },
  tools: recorded.tools,
  toolChoice: recorded.toolChoice
})

/**
 * The script's controls in context.
 *
 * @since 0.0.0
 * @category services
 */
export class ScriptedModel extends Context.Tag("@harness/testkit/ScriptedModel")<ScriptedModel, Service>() {}

const isObjectJson = (raw: string): Option.Option<Record<string, unknown>> => {
  try {
    const value: unknown = JSON.parse(raw === "" ? "{}" : raw)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? Option.some(value as Record<string, unknown>) // checked just above: a plain JSON object
      : Option.none()
  } catch {
    return Option.none()
  }
}

const partsOf = (value: Reply, index: number, advertised: ReadonlySet<string>): Array<Response.StreamPartEncoded> => {
  const parts: Array<Response.StreamPartEncoded> = []
  if (value.reportedModel !== undefined) parts.push({ type: "response-metadata", modelId: value.reportedModel })
  let hasToolCalls = false
  value.pieces.forEach((piece, i) => {
    const id = `${index}-${i}`
    switch (piece._tag) {
      case "text":
        parts.push({ type: "text-start", id }, { type: "text-delta", id, delta: piece.text }, { type: "text-end", id })
        break
      case "reasoning":
        parts.push(
          { type: "reasoning-start", id },
          { type: "reasoning-delta", id, delta: piece.text },
          { type: "reasoning-end", id }
        )
        break
      case "tool-call": {
        hasToolCalls = true
        const callId = piece.id ?? `call-${id}`
        const half = Math.ceil(piece.arguments.length / 2)
        parts.push({ type: "tool-params-start", id: callId, name: piece.name })
        if (piece.arguments.length > 0) {
          parts.push({ type: "tool-params-delta", id: callId, delta: piece.arguments.slice(0, half) })
          if (half < piece.arguments.length) {
            parts.push({ type: "tool-params-delta", id: callId, delta: piece.arguments.slice(half) })
          }
        }
        parts.push({ type: "tool-params-end", id: callId })
        const params = isObjectJson(piece.arguments)
        if (advertised.has(piece.name) && Option.isSome(params)) {
          parts.push({ type: "tool-call", id: callId, name: piece.name, params: params.value })
        }
        break
      }
    }
  })
  if (value.failure === undefined && value.hang !== true) {
    parts.push({
      type: "finish",
      reason: value.finish ?? (hasToolCalls ? "tool-calls" : "stop"),
      usage: {
        inputTokens: value.usage?.inputTokens ?? 0,
        outputTokens: value.usage?.outputTokens ?? 0,
        totalTokens: (value.usage?.inputTokens ?? 0) + (value.usage?.outputTokens ?? 0)
      }
    })
  }
  return parts
}

const failWith = (failure: LlmFailure.LlmFailure) =>
  new AiError.UnknownError({
    module: "ScriptedModel",
    method: "streamText",
    description: failure.message,
    cause: failure
  })

interface Built {
  readonly model: LanguageModel.Service
  readonly stream: ModelStream.Service
  readonly controls: Service
}

const typedOf = (part: Response.StreamPartEncoded): ModelStream.Part =>
  // The parts are built above in typed code; `typed` only fails on a malformed timestamp, which they never carry.
  Either.getOrThrowWith(
    ModelStream.typed(part),
    (error) => new Error(`ScriptedModel built a bad part: ${error.message}`)
  )

const build = (replies: ReadonlyArray<Reply>): Effect.Effect<Built> =>
  Effect.gen(function*() {
    const script = yield* Ref.make(Chunk.fromIterable(replies))
    const received = yield* Ref.make<
      {
        readonly count: number
        readonly last: Recorded | undefined
        readonly prior: ReadonlyArray<Prompt.Message>
        readonly all: Chunk.Chunk<Recorded>
      }
    >(
      { count: 0, last: undefined, prior: [], all: Chunk.empty() }
    )
    // A tool's JSON Schema is computed once per tool object, and an unchanged tool list is recorded once.
    const schemas = new WeakMap<Tool.Any, unknown>()
    const schemaOf = (tool: Tool.Any): unknown => {
      if (!schemas.has(tool)) schemas.set(tool, Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast))
      return schemas.get(tool)
    }
    const toolsOf = (tools: ReadonlyArray<Tool.Any>, last: Recorded | undefined): Request["tools"] => {
      const described = tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        parameters: schemaOf(tool)
      }))
      const before = last?.tools
      return before !== undefined && before.length === described.length &&
          before.every((t, i) =>
            t.name === described[i]!.name && t.description === described[i]!.description &&
            t.parameters === described[i]!.parameters
          )
        ? before
        : described
    }
    const take = (options: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const index = yield* Ref.modify(received, ({ all, count, last, prior }) => {
          const content = options.prompt.content
          const recorded = record(last, prior, count, content, toolsOf(options.tools, last), options.toolChoice)
          return [count, {
            count: count + 1,
            last: recorded,
            prior: content,
            all: Chunk.append(all, recorded)
          }] as const
        })
        const next = yield* Ref.modify(
          script,
          (all) => [Option.getOrUndefined(Chunk.head(all)), Chunk.drop(all, 1)] as const
        )
        return {
          index,
          next,
          advertised: new Set(options.tools.map((tool) => tool.name))
        }
      })
    const replyStream = <A>(
      options: LanguageModel.ProviderOptions,
      convert: (part: Response.StreamPartEncoded) => A
    ): Stream.Stream<A, AiError.AiError> =>
      Stream.unwrap(Effect.gen(function*() {
        const { advertised, index, next } = yield* take(options)
        if (next === undefined) {
          return Stream.fail(
            failWith({ code: "UNKNOWN", message: `ScriptedModel: no scripted reply left for request #${index + 1}` })
          )
        }
        if (next.delay !== undefined) yield* Effect.sleep(next.delay)
        // One chunk for the whole reply, as a provider delivers a buffered network read.
        const parts = Stream.fromChunk(Chunk.unsafeFromArray(partsOf(next, index, advertised).map(convert)))
        return next.failure !== undefined
          ? Stream.concat(parts, Stream.fail(failWith(next.failure)))
          : next.hang === true
          ? Stream.concat(parts, Stream.never)
          : parts
      }))
    // The same replies as `ModelStream.Pull`s (ADR 0033): the request is taken (and a delay waited) when the pull is
    // opened, then the whole reply is one chunk, followed by its end, its failure or, for a hanging reply, no end.
    const replyPull = (options: LanguageModel.ProviderOptions): Effect.Effect<ModelStream.Pull> =>
      Effect.gen(function*() {
        const { advertised, index, next } = yield* take(options)
        if (next === undefined) {
          return Effect.fail(Option.some(
            failWith({ code: "UNKNOWN", message: `ScriptedModel: no scripted reply left for request #${index + 1}` })
          ))
        }
        if (next.delay !== undefined) yield* Effect.sleep(next.delay)
        const parts = partsOf(next, index, advertised).map(typedOf)
        const end: ModelStream.Pull = next.failure !== undefined
          ? Effect.fail(Option.some(failWith(next.failure)))
          : next.hang === true
          ? Effect.never
          : Effect.fail(Option.none())
        let delivered = parts.length === 0
        return Effect.suspend(() => {
          if (delivered) return end
          delivered = true
          return Effect.succeed(Chunk.unsafeFromArray(parts))
        })
      })
    const streamText = (options: LanguageModel.ProviderOptions) =>
      replyStream(options, (part): Response.StreamPartEncoded => part)
    const model = yield* LanguageModel.make({
      streamText,
      generateText: (options) =>
        Stream.runCollect(streamText(options)).pipe(
          Effect.map((chunk) => ModelStream.aggregate(chunk))
        )
    })
    const controls: Service = {
      requests: Effect.map(Ref.get(received), ({ all }) => Chunk.toReadonlyArray(Chunk.map(all, requestOf))),
      requestCount: Effect.map(Ref.get(received), ({ count }) => count),
      push: (...more) => Ref.update(script, (all) => Chunk.appendAll(all, Chunk.fromIterable(more))),
      remaining: Effect.map(Ref.get(script), (all) => all.length)
    }
    return {
      model,
      stream: { model, streamText: (options) => replyStream(options, typedOf), pullText: replyPull },
      controls
    }
  })

/**
 * Builds a scripted model and its controls.
 *
 * Contract: requests take replies in order; a request with no reply left fails with an `UnknownError` that says
 * so (code `UNKNOWN`).
 *
 * @example
 * ```ts
 * import { ScriptedModel } from "@harness/testkit"
 * import { Effect } from "effect"
 *
 * // A model that answers the first request with a tool call and the second with text; the controls record requests.
 * const program = Effect.gen(function*() {
 *   const [model, controls] = yield* ScriptedModel.make([
 *     ScriptedModel.toolCallResponse(ScriptedModel.toolCall("read_file", { path: "README.md" })),
 *     ScriptedModel.textResponse("Done.")
 *   ])
 *   yield* model.generateText({ prompt: "Read the README" })
 *   return yield* controls.requests
 * })
 * ```
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  replies: ReadonlyArray<Reply> = []
): Effect.Effect<readonly [LanguageModel.Service, Service]> =>
  Effect.map(build(replies), ({ controls, model }) => [model, controls] as const)

/**
 * A layer providing the scripted `LanguageModel`, its controls and its `ModelStream` (the lower interface: the agent
 * takes it, skipping `LanguageModel`'s per-request decoding, and pulls each reply with `pullText`, ADR 0033).
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (
  replies: ReadonlyArray<Reply> = []
): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel | ModelStream.ModelStream> =>
  layerWith(replies, (stream) => stream)

const layerWith = (replies: ReadonlyArray<Reply>, lower: (stream: ModelStream.Service) => ModelStream.Service) =>
  Layer.effectContext(
    Effect.map(build(replies), ({ controls, model, stream }) =>
      Context.make(LanguageModel.LanguageModel, model).pipe(
        Context.add(ScriptedModel, controls),
        Context.add(ModelStream.ModelStream, lower(stream))
      ))
  )

/**
 * A layer like {@link layer} whose `ModelStream` offers no `pullText`: the agent streams each reply, as it does
 * with Harness's network provider (ADR 0033).
 *
 * @since 0.0.0
 * @category layers
 */
export const layerStream = (
  replies: ReadonlyArray<Reply> = []
): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel | ModelStream.ModelStream> =>
  layerWith(replies, ({ model, streamText }) => ({ model, streamText }))

/**
 * A layer providing the scripted `LanguageModel` and its controls only: the agent goes through the standard
 * `LanguageModel` interface, as it does with any provider that offers no `ModelStream`.
 *
 * @since 0.0.0
 * @category layers
 */
export const layerStandard = (
  replies: ReadonlyArray<Reply> = []
): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel> =>
  Layer.effectContext(
    Effect.map(build(replies), ({ controls, model }) =>
      Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(ScriptedModel, controls)))
  )
