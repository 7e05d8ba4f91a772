import { type AiError, LanguageModel, Prompt } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { ModelStream } from "@harness/domain"
import { Chunk, Effect, Either, Fiber, Option, Stream, TestClock, type Tracer } from "effect"
import * as S from "../src/ScriptedModel.js"

const ask = (model: LanguageModel.Service, text: string) =>
  Stream.runCollect(model.streamText({ prompt: text })).pipe(Effect.map(Chunk.toReadonlyArray))

const userText = (request: S.Request): string =>
  request.prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])) : []
  ).join("")

/**
 * Runs `effect` against a 200 ms deadline on the `TestClock`: forked, the clock moved to the deadline, joined. A reply
 * that ends needs no time and is back before the clock moves; one that hangs is "hang". (Never the live clock: there a
 * loaded machine turns a slow reply into a "hang".)
 */
const orHang = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(
      Effect.timeoutTo(effect, { duration: "200 millis", onSuccess: (a): A | "hang" => a, onTimeout: () => "hang" })
    )
    yield* TestClock.adjust("200 millis")
    return yield* Fiber.join(fiber)
  })

describe("ScriptedModel", () => {
  it.effect("records every request in full, numbered, and counts them", () =>
    Effect.gen(function*() {
      const [model, controls] = yield* S.make([S.textResponse("a"), S.textResponse("b")])
      yield* ask(model, "one")
      yield* ask(model, "two")
      assert.deepStrictEqual((yield* controls.requests).map((r) => [r.index, userText(r)]), [[0, "one"], [1, "two"]])
      assert.strictEqual(yield* controls.requestCount, 2)
    }))

  it.effect("a growing conversation is recorded by its new messages: every prompt reads back exactly", () =>
    Effect.gen(function*() {
      const turns = 100
      const [model, controls] = yield* S.make(Array.from({ length: turns }, (_, i) => S.textResponse(`a${i}`)))
      const system = Prompt.makeMessage("system", { content: "be brief" })
      const sent: Array<ReadonlyArray<Prompt.Message>> = []
      let history: ReadonlyArray<Prompt.Message> = []
      for (let i = 0; i < turns; i++) {
        history = [
          ...history,
          Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: `q${i}` })] })
        ]
        // A fresh system message each request (as the agent builds it), the same history objects.
        const content = [Prompt.makeMessage("system", { content: system.content }), ...history]
        sent.push(content)
        yield* Stream.runDrain(model.streamText({ prompt: Prompt.fromMessages(content) }))
        history = [
          ...history,
          Prompt.makeMessage("assistant", { content: [Prompt.makePart("text", { text: `a${i}` })] })
        ]
      }
      const requests = yield* controls.requests
      assert.strictEqual(requests.length, turns)
      for (const [i, request] of requests.entries()) {
        assert.strictEqual(JSON.stringify(request.prompt.content), JSON.stringify(sent[i]), `request ${i}`)
      }
      // Recorded by reference to the previous prompt: the messages stored for the last request are its new ones.
      const last = requests[turns - 1]!.prompt.content
      assert.strictEqual(last.length, 2 * turns)
      assert.strictEqual(last[2 * turns - 1], sent[turns - 1]![2 * turns - 1], "the request's own message objects")
    }))

  it.effect("a prompt that does not continue the previous one is recorded whole", () =>
    Effect.gen(function*() {
      const [model, controls] = yield* S.make([S.textResponse("a"), S.textResponse("b"), S.textResponse("c")])
      yield* ask(model, "first")
      yield* ask(model, "second")
      const third = [
        Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "x" })] }),
        Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "y" })] })
      ]
      yield* Stream.runDrain(model.streamText({ prompt: Prompt.fromMessages(third) }))
      assert.deepStrictEqual((yield* controls.requests).map(userText), ["first", "second", "xy"])
    }))

  it.effect("layer offers a ModelStream for its LanguageModel whose typed parts equal the decoded ones", () =>
    Effect.gen(function*() {
      const model = yield* LanguageModel.LanguageModel
      const lower = yield* ModelStream.ModelStream
      assert.strictEqual(lower.model, model)
      const decoded = yield* ask(model, "x")
      const typed = yield* Effect.scoped(
        Effect.flatMap(Effect.makeSpanScoped("test"), (span) =>
          Stream.runCollect(lower.streamText({
            prompt: Prompt.make("x"),
            tools: [],
            toolChoice: "none",
            responseFormat: { type: "text" },
            span
          })))
      )
      // Part ids carry the request's number; everything else must be identical, keys and their order included.
      const masked = (parts: ReadonlyArray<object>) =>
        JSON.stringify(parts, (key, value: unknown) => (key === "id" ? "<id>" : value))
      assert.strictEqual(masked(Chunk.toReadonlyArray(typed)), masked(decoded))
      assert.strictEqual(yield* (yield* S.ScriptedModel).requestCount, 2)
    }).pipe(Effect.provide(S.layer([S.reply(S.reasoning("r"), S.text("t")), S.reply(S.reasoning("r"), S.text("t"))]))))

  it.effect("pullText delivers the chunks streamText delivers, then the same end, failure or hang", () =>
    Effect.gen(function*() {
      const lower = yield* ModelStream.ModelStream
      const pullText = lower.pullText
      assert.isDefined(pullText)
      const options = (span: Tracer.Span): LanguageModel.ProviderOptions => ({
        prompt: Prompt.make("x"),
        tools: [],
        toolChoice: "none",
        responseFormat: { type: "text" },
        span
      })
      const masked = (value: unknown) => JSON.stringify(value, (key, v: unknown) => (key === "id" ? "<id>" : v))
      // Each reply twice: streamed, then pulled (until the pull ends, fails, or hangs past 200 ms of test time).
      for (let i = 0; i < 4; i++) {
        const streamed = yield* Effect.scoped(
          Effect.flatMap(Effect.makeSpanScoped("s"), (span) =>
            lower.streamText(options(span)).pipe(
              Stream.chunks,
              Stream.map(Chunk.toReadonlyArray),
              Stream.runCollect,
              Effect.map(Chunk.toReadonlyArray),
              Effect.either
            ))
        ).pipe(orHang)
        const pulled = yield* orHang(Effect.scoped(
          Effect.flatMap(Effect.makeSpanScoped("p"), (span) =>
            Effect.flatMap(pullText!(options(span)), (pull) => {
              const chunks: Array<ReadonlyArray<ModelStream.Part>> = []
              const loop: Effect.Effect<Either.Either<typeof chunks, AiError.AiError>> = Effect.matchEffect(pull, {
                onFailure: (end) =>
                  Effect.succeed(Option.match(end, {
                    onNone: (): Either.Either<typeof chunks, AiError.AiError> => Either.right(chunks),
                    onSome: Either.left
                  })),
                onSuccess: (chunk) => Effect.suspend(() => (chunks.push(Chunk.toReadonlyArray(chunk)), loop))
              })
              return loop
            }))
        ))
        assert.strictEqual(masked(pulled), masked(streamed), `reply ${i}`)
      }
    }).pipe(
      Effect.provide(S.layer([
        S.textResponse("a"),
        S.textResponse("a"),
        S.failureAfter([S.text("partial")], "OVERLOADED"),
        S.failureAfter([S.text("partial")], "OVERLOADED"),
        S.hanging(S.text("waiting")),
        S.hanging(S.text("waiting")),
        S.reply(S.reasoning("r"), S.toolCall("t", { a: 1 })),
        S.reply(S.reasoning("r"), S.toolCall("t", { a: 1 }))
      ]))
    ))

  it.effect("layerStream offers a ModelStream without pullText", () =>
    Effect.gen(function*() {
      const lower = yield* ModelStream.ModelStream
      assert.strictEqual(lower.model, yield* LanguageModel.LanguageModel)
      assert.isUndefined(lower.pullText)
    }).pipe(Effect.provide(S.layerStream())))

  it.effect("layerStandard offers no ModelStream", () =>
    Effect.gen(function*() {
      assert.isTrue((yield* Effect.serviceOption(ModelStream.ModelStream))._tag === "None")
    }).pipe(Effect.provide(S.layerStandard())))
})
