/**
 * The README's "How to add a provider", followed: a toy provider whose "model" is the conformance suite's rule table,
 * written on `LanguageModel.make` alone (the agent's standard path), then the same provider opting into the fast path
 * with a `ModelStream`. Both run the provider conformance suite.
 */
import { AiError, LanguageModel, type Prompt, type Response } from "@effect/ai"
import { ModelStream } from "@harness/domain"
import { Context, Effect, Layer, Stream } from "effect"
import { answer, conformance, type Said } from "./conformance.js"

/** Step 1: what the model reads, from `@effect/ai`'s prompt (each provider maps it to its own request). */
const conversationOf = (prompt: Prompt.Prompt): ReadonlyArray<Said> =>
  prompt.content.flatMap((message): ReadonlyArray<Said> => {
    switch (message.role) {
      case "system":
        return []
      case "user":
        return [{ role: "user", text: message.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("") }]
      case "assistant":
        return [{
          role: "assistant",
          text: message.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join(""),
          calls: message.content.flatMap((p) =>
            p.type === "tool-call" ? [{ id: p.id, name: p.name, arguments: JSON.stringify(p.params) }] : []
          )
        }]
      case "tool":
        return message.content.map((p) => ({
          role: "tool",
          id: p.id,
          output: typeof p.result === "string" ? p.result : JSON.stringify(p.result)
        }))
    }
  })

/**
 * Steps 2 and 3: the response as encoded stream parts (start, deltas and end per text; a `tool-call` per call; a
 * `finish` with the usage last), and a failure as an `AiError` carrying the `LlmFailure` as its cause.
 */
const streamText = (
  options: LanguageModel.ProviderOptions
): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
  Stream.suspend(() => {
    const next = answer(conversationOf(options.prompt))
    switch (next._tag) {
      case "text":
        return Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "text-start", id: "text" },
          ...next.deltas.map((delta): Response.StreamPartEncoded => ({ type: "text-delta", id: "text", delta })),
          { type: "text-end", id: "text" },
          { type: "finish", reason: "stop", usage: next.usage }
        ])
      case "call":
        return Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "tool-call", id: next.id, name: next.name, params: JSON.parse(next.arguments) },
          { type: "finish", reason: "tool-calls", usage: next.usage }
        ])
      case "fail":
        return Stream.fail(
          new AiError.UnknownError({
            module: "ToyProvider",
            method: "streamText",
            description: next.failure.message,
            cause: next.failure
          })
        )
    }
  })

/** Step 4: the `LanguageModel` (`generateText` is the same reply, aggregated). */
const make = LanguageModel.make({
  streamText,
  generateText: (options) => Effect.map(Stream.runCollect(streamText(options)), ModelStream.aggregate)
})

/** The provider as a layer of `LanguageModel` only: the agent takes the standard path. */
const layer = Layer.effect(LanguageModel.LanguageModel, make)

/**
 * Step 5 (optional): the fast path. The same parts, typed where they are built (`ModelStream.typed`), next to the
 * very `LanguageModel` they belong to.
 */
const layerFast = Layer.effectContext(Effect.map(make, (model) => {
  const typed: ModelStream.Service["streamText"] = (options) =>
    Stream.mapEffect(streamText(options), (part) =>
      Effect.mapError(
        ModelStream.typed(part),
        (error) =>
          new AiError.MalformedOutput({ module: "ToyProvider", method: "streamText", description: error.message })
      ))
  return Context.make(LanguageModel.LanguageModel, model).pipe(
    Context.add(ModelStream.ModelStream, { model, streamText: typed })
  )
}))

conformance("toy provider (LanguageModel only)", layer)
conformance("toy provider with its ModelStream (the fast path)", layerFast)
