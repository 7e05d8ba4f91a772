/**
 * ADR 0019, ADR 0033: the agent takes a provider's `ModelStream` (typed parts, no per-request decoding) when it
 * belongs to the `LanguageModel` it was given — pulling each reply when it offers `pullText`, streaming it otherwise —
 * and the standard `LanguageModel.streamText` otherwise. All three paths must leave the same log and send the same
 * requests, failures and truncated replies included.
 */
import { AiError, LanguageModel, type Response, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message, ModelStream } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Chunk, Context, Effect, Either, Layer, Option, Schema, Stream } from "effect"

const lookup = AgentTool.make(
  Tool.make("lookup", { parameters: { key: Schema.String }, success: Schema.String }),
  { handler: ({ key }) => Effect.succeed(`value of ${key}`) }
)

const script: ReadonlyArray<S.Reply> = [
  {
    ...S.reply(S.reasoning("thinking"), S.text("Let me look."), S.toolCall("lookup", { key: "a" })),
    reportedModel: "m-1"
  },
  S.reply(S.toolCall("lookup", "{\"key\": 7}"), S.toolCall("missing", {}), S.toolCall("lookup", "not json")),
  { ...S.textResponse("Done."), usage: { inputTokens: 12, outputTokens: 3 } },
  S.maxTokensResponse(S.text("cut"), S.toolCall("lookup", { key: "b" })),
  S.failureAfter([S.text("partial")], "OVERLOADED"),
  S.textResponse("Again.")
]

/** Three turns through whichever model layer is provided: the log (as JSON) and the requests' prompts. */
const session = Effect.gen(function*() {
  const agent = yield* Agent.make({ tools: [lookup] })
  for (const text of ["first", "second", "third"]) {
    yield* agent.followup(Message.make(text))
    yield* agent.whenIdle
  }
  const log = yield* agent.log
  assert.deepStrictEqual(LogCheck.checkLog(log), [])
  const requests = yield* (yield* S.ScriptedModel).requests
  return {
    // Event timestamps come from the test clock; ids are generated per run, so the log is compared without them.
    log: JSON.stringify(
      log,
      (key, value: unknown) => ((key === "id" || key === "messageId") && typeof value === "string" ? "<id>" : value)
    ),
    requests: JSON.stringify(requests.map((request) => ({ ...request, prompt: request.prompt.content }))),
    types: log.map((event) => event.type)
  }
})

describe("ModelStream (ADR 0019)", () => {
  it.effect("the pulled, the streamed and the standard path leave the same log and send the same requests", () =>
    Effect.gen(function*() {
      const pulled = yield* session.pipe(Effect.scoped, Effect.provide(S.layer(script)))
      const streamed = yield* session.pipe(Effect.scoped, Effect.provide(S.layerStream(script)))
      const standard = yield* session.pipe(Effect.scoped, Effect.provide(S.layerStandard(script)))
      assert.include(pulled.types, "tool/result")
      assert.include(pulled.types, "assistant/chunk")
      assert.include(pulled.log, "\"request-error\"")
      assert.include(pulled.log, "\"max-tokens\"")
      assert.strictEqual(pulled.log, streamed.log)
      assert.strictEqual(pulled.log, standard.log)
      assert.strictEqual(pulled.requests, streamed.requests)
      assert.strictEqual(pulled.requests, standard.requests)
    }))

  it.effect("a ModelStream that belongs to another LanguageModel is not used", () =>
    Effect.gen(function*() {
      const [other, otherControls] = yield* S.make([S.textResponse("from the other model")])
      const agent = yield* Agent.make({}).pipe(
        // The scripted layer's ModelStream stays in context, but the LanguageModel is replaced.
        Effect.provide(Layer.succeed(LanguageModel.LanguageModel, other))
      )
      yield* agent.followup(Message.make("hi"))
      yield* agent.whenIdle
      assert.strictEqual((yield* otherControls.requests).length, 1)
      assert.strictEqual(yield* (yield* S.ScriptedModel).requestCount, 0)
      const texts = (yield* agent.log).flatMap((event) =>
        event.type === "assistant/message" ? event.data.content.flatMap((b) => (b.type === "text" ? [b.text] : [])) : []
      )
      assert.deepStrictEqual(texts, ["from the other model"])
    }).pipe(Effect.scoped, Effect.provide(S.layer([S.textResponse("from the scripted layer")]))))
})

/** Parts that end with `finish`, then a failure: the three model interfaces over the same reply. */
const finishedThenFailing = (path: "pulled" | "streamed" | "standard") =>
  Effect.gen(function*() {
    const parts: ReadonlyArray<Response.StreamPartEncoded> = [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "all said" },
      { type: "text-end", id: "t" },
      { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }
    ]
    const error = new AiError.UnknownError({ module: "test", method: "streamText", description: "lost after finish" })
    const typed = parts.map((part) => Either.getOrThrow(ModelStream.typed(part)))
    const model = yield* LanguageModel.make({
      generateText: () => Effect.dieMessage("not used"),
      streamText: () => Stream.concat(Stream.fromIterable(parts), Stream.fail(error))
    })
    let pulls = 0
    const lower: ModelStream.Service = {
      model,
      streamText: () => Stream.concat(Stream.fromIterable(typed), Stream.fail(error)),
      pullText: path === "pulled"
        ? () =>
          Effect.succeed(
            Effect.suspend(
              () => (pulls++ === 0 ? Effect.succeed(Chunk.unsafeFromArray(typed)) : Effect.fail(Option.some(error)))
            )
          )
        : undefined
    }
    const context = path === "standard"
      ? Context.make(LanguageModel.LanguageModel, model)
      : Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(ModelStream.ModelStream, lower))
    const agent = yield* Agent.make({}).pipe(Effect.provide(context))
    yield* agent.followup(Message.make("go"))
    yield* agent.whenIdle
    const log = yield* agent.log
    assert.deepStrictEqual(LogCheck.checkLog(log), [])
    return log.map((event) => event.type === "turn/end" ? `turn/end:${event.data.reason.kind}` : event.type)
  })

describe("a response that fails after its finish part (ADR 0033)", () => {
  it.scoped("its parts are logged before the failure closes the step, on every path", () =>
    Effect.gen(function*() {
      const expected = [
        "turn/start",
        "user/message",
        "step/start",
        "request/header",
        "assistant/chunk",
        "assistant/chunk",
        "assistant/chunk",
        "assistant/chunk",
        "step/end",
        "turn/end:request-error"
      ]
      for (const path of ["pulled", "streamed", "standard"] as const) {
        assert.deepStrictEqual(yield* finishedThenFailing(path), expected, path)
      }
    }))
})
