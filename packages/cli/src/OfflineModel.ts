/**
 * The offline model: a deterministic local `LanguageModel` that needs no network and no API key, so that
 * `harness demo`, `harness run` and a first `harness chat` exercise the whole runtime on a fresh machine. It is a
 * simulator, not a language model: it answers from the conversation it is given, acknowledges steering and injected
 * context in its next step, and calls the real workspace tools when asked about files (list, read, grep, write,
 * run). Its words stream at a human pace on `Clock`, so `TestClock` drives it in tests.
 *
 * @since 0.0.0
 */
import { LanguageModel, type Response } from "@effect/ai"
import { ModelStream } from "@harness/domain"
import { type Duration, Effect, Layer, Stream } from "effect"
import * as internal from "./internal/offlineModel.js"

/**
 * The label recorded as the model in `request/header` and shown in the banner.
 *
 * @since 0.0.0
 * @category constants
 */
export const modelName = "offline"

/**
 * Options of the offline model.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The pause before each streamed word (on `Clock`). Default 40 milliseconds; 0 streams at once. */
  readonly pace?: Duration.DurationInput | undefined
}

/**
 * What the offline model decided to do with one request: the pieces of its reply, in order.
 *
 * @since 0.0.0
 * @category models
 */
export type Piece = internal.Piece

/**
 * Decides the reply to a request (pure): the exported core of the model, for tests and documentation.
 *
 * Contract: the same prompt and tools give the same reply. The request it answers is the newest user message after
 * the last assistant message; earlier ones in that tail (steering, injected context) are acknowledged with
 * `Noted: …`. After tool results it summarises them and calls no further tool. A tool is called only when it is
 * advertised.
 *
 * @since 0.0.0
 * @category utils
 */
export const reply: (
  options: Pick<LanguageModel.ProviderOptions, "prompt" | "tools">
) => ReadonlyArray<Piece> = internal.reply

/**
 * Builds the offline model.
 *
 * Contract: each request streams its reply word by word, waiting `pace` on `Clock` before each word, then finishes
 * with `tool-calls` (when it called a tool) or `stop`, and reports usage (words in and out, as tokens).
 * Interrupting the stream stops it at once.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<LanguageModel.Service> => {
  const pace = options.pace ?? "40 millis"
  const streamText = (request: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded> =>
    Stream.fromIterable(internal.parts(request)).pipe(
      Stream.mapEffect((part): Effect.Effect<Response.StreamPartEncoded> =>
        part.type === "text-delta" || part.type === "reasoning-delta"
          ? Effect.as(Effect.sleep(pace), part)
          : Effect.succeed(part)
      )
    )
  return LanguageModel.make({
    streamText,
    generateText: (request) => Effect.map(Stream.runCollect(streamText(request)), ModelStream.aggregate)
  })
}

/**
 * The offline model as a `LanguageModel` layer.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
