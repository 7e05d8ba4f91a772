import { LanguageModel, Prompt } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { ModelStream } from "@harness/domain"
import { Chunk, Effect, Stream } from "effect"
import * as S from "../src/ScriptedModel.js"

const ask = (model: LanguageModel.Service, text: string) =>
  Stream.runCollect(model.streamText({ prompt: text })).pipe(Effect.map(Chunk.toReadonlyArray))

const userText = (request: S.Request): string =>
  request.prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])) : []
  ).join("")

describe("ScriptedModel", () => {
  it.effect("keeps the latest keepRequests requests in full, numbered, and counts all of them", () =>
    Effect.gen(function*() {
      const [model, controls] = yield* S.make(
        Array.from({ length: 5 }, (_, i) => S.textResponse(`r${i}`)),
        { keepRequests: 2 }
      )
      for (let i = 0; i < 5; i++) yield* ask(model, `q${i}`)
      const kept = yield* controls.requests
      assert.deepStrictEqual(kept.map((r) => [r.index, userText(r)]), [[3, "q3"], [4, "q4"]])
      assert.strictEqual(yield* controls.requestCount, 5)
      assert.strictEqual(yield* controls.remaining, 0)
    }))

  it.effect("keeps every request by default (up to 1000)", () =>
    Effect.gen(function*() {
      const [model, controls] = yield* S.make([S.textResponse("a"), S.textResponse("b")])
      yield* ask(model, "one")
      yield* ask(model, "two")
      assert.deepStrictEqual((yield* controls.requests).map((r) => [r.index, userText(r)]), [[0, "one"], [1, "two"]])
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

  it.effect("layerStandard offers no ModelStream", () =>
    Effect.gen(function*() {
      assert.isTrue((yield* Effect.serviceOption(ModelStream.ModelStream))._tag === "None")
    }).pipe(Effect.provide(S.layerStandard())))
})
