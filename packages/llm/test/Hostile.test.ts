/**
 * A hostile or broken server (ADR 0011). Each case failed before its fix: a `retry:` field that put the stream to
 * sleep for days, keep-alive comments and a trickled line that kept re-arming the idle timeout, endless progress
 * with no overall deadline, an oversized SSE event that escaped as a defect, a refusal treated as an empty response
 * and retried, `n > 1` choices interleaved into one text, a 200 that is not an event stream reported as "closed
 * before [DONE]", a redirect reported as "HTTP 301: StatusCode", a defect below the provider that carried a stack
 * trace. Hangs are tested live with short configured timeouts (the assertion is on the failure, never on time).
 */
import { LanguageModel } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure } from "@harness/domain"
import { Cause, ConfigProvider, Context, Effect, Exit, Fiber, Layer, Redacted, TestClock } from "effect"
import { ChatCompletions } from "../src/index.js"
import * as Fixtures from "./support/fixtures.js"
import {
  apiKey,
  failedStream,
  failing,
  serverAndModel,
  shape,
  stream,
  streamUntilFailure,
  Tools,
  ToolsLayer
} from "./support/provider.js"
import * as Replies from "./support/replies.js"

const deepSeekChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  Fixtures.frame({
    id: "x",
    object: "chat.completion.chunk",
    created: 1767411028,
    model: "deepseek-v4-flash",
    choices: [{ index: 0, delta, finish_reason: finish }]
  })

describe("a hostile server: hangs", () => {
  it.scoped("a retry: field of 10⁹ ms is ignored: the stream completes without waiting (virtual clock never moves)", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel()
      const frames = Fixtures.deepSeekStream({ content: ["Hel", "lo"] })
      yield* server.reply(
        Replies.sse(["retry: 1000000000\n\n", ...frames.slice(0, 3), "retry: 999999999\n", ...frames.slice(3)])
      )
      const parts = yield* stream(model, "hi")
      assert.deepStrictEqual(
        shape(parts).filter((part) => part.type === "text-delta").map((part) => part["delta"]),
        ["Hel", "lo"]
      )
    }))

  it.scopedLive("endless keep-alive comments are not progress: TIMEOUT after the idle timeout", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ idleTimeout: "300 millis" })
      yield* server.reply(Replies.forever([Fixtures.keepAlive], () => Fixtures.keepAlive))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "idle timeout")
    }))

  it.scopedLive("a data line trickled one byte at a time is not progress: TIMEOUT after the idle timeout", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ idleTimeout: "300 millis" })
      yield* server.reply(Replies.forever(["data: {\"choices\":[{\"delta\":{\"content\":\""], () => "a"))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "no event")
    }))

  it.scopedLive("endless real progress meets the deadline: TIMEOUT to the caller, after the output, no retry", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({
        idleTimeout: "1 second",
        deadline: "600 millis",
        retry: { maxRetries: 2 }
      })
      yield* server.reply(Replies.forever([], () => deepSeekChunk({ content: "tick " })))
      const { error, parts } = yield* streamUntilFailure(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      if (error === undefined) return assert.fail("the stream did not fail")
      const { failure } = yield* failing(Effect.fail(error))
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "deadline")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("the default deadline (10 minutes) ends an endless keep-alive stream, under the virtual clock", () =>
    Effect.gen(function*() {
      // A request timeout beyond the deadline, so only the deadline can end the attempt, wherever the headers are.
      const { model, server } = yield* serverAndModel({ requestTimeout: "1 hour", idleTimeout: "1 hour" })
      yield* server.reply(Replies.forever([Fixtures.keepAlive], () => Fixtures.keepAlive))
      const fiber = yield* Effect.fork(failing(stream(model, "hi")))
      yield* server.takeRequest
      yield* TestClock.adjust("10 minutes")
      const { failure } = yield* Fiber.join(fiber)
      assert.strictEqual(failure.code, "TIMEOUT")
      assert.include(failure.message, "10m (deadline)")
    }))

  it.scopedLive("the deadline also bounds a server that trickles comments before any output; then it is retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({
        idleTimeout: "1 minute",
        deadline: "300 millis",
        retry: { maxRetries: 1 }
      })
      yield* server.reply(Replies.forever([], () => Fixtures.keepAlive))
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] })))
      const parts = yield* stream(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "text-delta"))
      assert.lengthOf(yield* server.requests, 2)
    }))
})

describe("a hostile server: framing and decoding", () => {
  it.scoped("an SSE event over the 1 MiB limit is a MALFORMED failure, not a defect", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel()
      yield* server.reply(Replies.sse([`data: ${"x".repeat(1024 * 1024 + 16)}`], { end: "stall" }))
      const exit = yield* Effect.exit(stream(model, "hi"))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      assert.isFalse(Cause.isDie(exit.cause), Cause.pretty(exit.cause))
      const { failure } = yield* failing(Effect.failCause(exit.cause))
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "larger than 1048576 characters")
    }))

  it.scoped("a non-streamed body over 16 MiB is a MALFORMED failure, not buffered whole", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel()
      yield* server.reply(
        Replies.raw(200, { "content-type": "application/json" }, `{"x":"${"a".repeat(16 * 1024 * 1024 + 16)}"}`)
      )
      const { failure } = yield* failing(
        model.generateText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.provide(ToolsLayer)
        )
      )
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "larger than 16777216 bytes")
    }))

  it.scoped("a 200 HTML page is described: content type and first bytes, not 'closed before [DONE]'", () =>
    Effect.gen(function*() {
      const { failure } = yield* failedStream(
        yield* serverAndModel(),
        Replies.raw(200, { "content-type": "text/html" }, "<html><body>Please log in</body></html>")
      )
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "content type text/html instead of an event stream")
      assert.include(failure.message, "body starts: <html><body>Please log in")
    }))

  it.scoped("an event stream is read as one whatever its label: text/plain, octet-stream, none, split anywhere", () =>
    Effect.gen(function*() {
      const frames = Fixtures.deepSeekStream({ content: ["Hel", "lo"] })
      const whole = frames.join("")
      const replies = [
        Replies.raw(200, { "content-type": "text/plain; charset=utf-8" }, whole),
        Replies.raw(200, { "content-type": "application/octet-stream" }, whole),
        Replies.raw(200, {}, whole),
        // The first writes too short to tell, and no keep-alive first.
        Replies.sse(["d", "at", ...frames.slice(1).join("").slice(3).match(/[^]{1,7}/g) ?? []], {
          headers: { "content-type": "text/plain" }
        })
      ]
      for (const [index, reply] of replies.entries()) {
        const { model, server } = yield* serverAndModel()
        yield* server.reply(reply)
        const parts = yield* stream(model, "hi")
        assert.deepStrictEqual(
          shape(parts).filter((part) => part.type === "text-delta").map((part) => part["delta"]),
          ["Hel", "lo"],
          `reply ${index}`
        )
      }
    }))

  it.scoped("a text/plain 200 that is not an event stream is still described as such", () =>
    Effect.gen(function*() {
      const { failure } = yield* failedStream(
        yield* serverAndModel(),
        Replies.raw(200, { "content-type": "text/plain" }, "Service temporarily unavailable, try later")
      )
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "content type text/plain instead of an event stream")
      assert.include(failure.message, "body starts: Service temporarily unavailable")
    }))

  it.scoped("a 200 JSON completion from a server that ignored stream: true says so", () =>
    Effect.gen(function*() {
      const { failure } = yield* failedStream(
        yield* serverAndModel(),
        Replies.json(200, Fixtures.deepSeekCompletion({ content: "whole" }))
      )
      assert.strictEqual(failure.code, "MALFORMED")
      assert.include(failure.message, "the server ignored stream: true")
    }))

  it.scoped("a redirect is described with its target (never followed), not 'HTTP 301: StatusCode'", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel()
      yield* server.reply(
        Replies.raw(
          301,
          { location: "https://elsewhere.example/v1/chat/completions", "content-type": "text/html" },
          "<a>moved</a>"
        )
      )
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.status, 301)
      assert.include(failure.message, "redirected")
      assert.include(failure.message, "to https://elsewhere.example/v1/chat/completions")
      assert.include(failure.message, "set baseUrl to the final URL")
      assert.notInclude(failure.message, "StatusCode")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("a 502 HTML error page is described by its content type and first bytes", () =>
    Effect.gen(function*() {
      const { failure } = yield* failedStream(
        yield* serverAndModel(),
        Replies.raw(502, { "content-type": "text/html" }, "<html><h1>502 Bad Gateway</h1></html>")
      )
      assert.strictEqual(failure.code, "SERVER")
      assert.include(failure.message, "content type text/html")
      assert.include(failure.message, "<h1>502 Bad Gateway")
    }))

  it.scoped("a defect below the provider is a classified UNKNOWN failure, one line, no stack trace or path", () =>
    Effect.gen(function*() {
      const thrown = new Error("socket exploded\n    at boom (/home/someone/project/node_modules/x/index.js:1:2)")
      const dying = Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.die(thrown)))
      const model = yield* Layer.build(
        ChatCompletions.layer({
          baseUrl: "http://127.0.0.1:1",
          apiKey: Redacted.make(apiKey),
          retry: { maxRetries: 0 }
        })
          .pipe(Layer.provide(dying))
      ).pipe(Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)), Effect.orDie)
      const exit = yield* Effect.exit(stream(model, "hi"))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      assert.isFalse(Cause.isDie(exit.cause), Cause.pretty(exit.cause))
      const { failure } = yield* failing(Effect.failCause(exit.cause))
      assert.strictEqual(failure.code, "UNKNOWN")
      assert.include(failure.message, "socket exploded")
      assert.notInclude(failure.message, "/home/")
      assert.notInclude(failure.message, "    at ")
    }))
})

describe("a reply's total size is bounded by maxReplyBytes", () => {
  const role = deepSeekChunk({ role: "assistant", content: "" })
  const content = (text: string) => deepSeekChunk({ content: text })
  const noHostDetail = (message: string) => {
    assert.notMatch(message, /(^|[\s(])\/[\w.-]+\//, "an absolute path")
    assert.notInclude(message, "    at ")
    assert.notInclude(message, "RangeError")
  }

  it.scoped("content past the bound: REPLY_TOO_LARGE naming it, after the output, not retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ maxReplyBytes: 4096, retry: { maxRetries: 2 } })
      yield* server.otherwise(
        Replies.sse([role, ...Array.from({ length: 20 }, () => content("a".repeat(1000))), Fixtures.done])
      )
      const { error, parts } = yield* streamUntilFailure(model, "hi")
      const text = shape(parts).flatMap((part) => part.type === "text-delta" ? [String(part["delta"])] : []).join("")
      assert.strictEqual(text.length, 4000)
      if (error === undefined) return assert.fail("the stream did not fail")
      const { failure } = yield* failing(Effect.fail(error))
      assert.strictEqual(failure.code, "REPLY_TOO_LARGE")
      assert.include(failure.message, "4096 bytes")
      assert.include(failure.message, "maxReplyBytes")
      noHostDetail(failure.message)
      assert.isFalse(LlmFailure.transientCodes.has(failure.code))
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("reasoning and tool-call arguments count too, in UTF-8 bytes: at the bound it passes, one byte over fails", () =>
    Effect.gen(function*() {
      // 1000 bytes of reasoning, then a call whose arguments bring the reply to `total` bytes ("é" is 2 bytes).
      const reply = (total: number) => {
        const argument = `{"path":"${"é".repeat((total - 1000 - 11) / 2)}"}`
        return Replies.sse([
          role,
          deepSeekChunk({ reasoning_content: "r".repeat(1000) }),
          deepSeekChunk({
            tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "read_file", arguments: "" } }]
          }),
          ...(argument.match(/[^]{1,100}/g) ?? []).map((piece) =>
            deepSeekChunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })
          ),
          deepSeekChunk({}, "tool_calls"),
          Fixtures.done
        ])
      }
      const { model, server } = yield* serverAndModel({ maxReplyBytes: 2001 })
      yield* server.reply(reply(2001))
      const parts = yield* stream(model, "hi")
      assert.isTrue(parts.some((part) => part.type === "tool-call"))
      yield* server.reply(reply(2003))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "REPLY_TOO_LARGE")
      assert.include(failure.message, "2001 bytes")
    }))

  it.scoped("a non-streamed reply over the bound is REPLY_TOO_LARGE too", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ maxReplyBytes: 4096 })
      yield* server.reply(Replies.json(200, Fixtures.deepSeekCompletion({ content: "a".repeat(4097) })))
      const { failure } = yield* failing(
        model.generateText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.provide(ToolsLayer)
        )
      )
      assert.strictEqual(failure.code, "REPLY_TOO_LARGE")
      assert.include(failure.message, "4096 bytes")
      noHostDetail(failure.message)
    }))
})

describe("what the model said", () => {
  const refusalFrames = [
    Fixtures.frame({
      id: "chatcmpl-r",
      object: "chat.completion.chunk",
      created: 1741570283,
      model: "gpt-4o-2024-08-06",
      choices: [{ index: 0, delta: { role: "assistant", content: null, refusal: "" }, finish_reason: null }]
    }),
    ...["I'm sorry, ", "I can't help with that."].map((piece) =>
      Fixtures.frame({
        id: "chatcmpl-r",
        object: "chat.completion.chunk",
        created: 1741570283,
        model: "gpt-4o-2024-08-06",
        choices: [{ index: 0, delta: { refusal: piece }, finish_reason: null }]
      })
    ),
    Fixtures.frame({
      id: "chatcmpl-r",
      object: "chat.completion.chunk",
      created: 1741570283,
      model: "gpt-4o-2024-08-06",
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }]
    }),
    Fixtures.done
  ]

  it.scoped("a streamed refusal is CONTENT_FILTER with the refusal text, not retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ retry: { maxRetries: 3 } })
      yield* server.otherwise(Replies.sse(refusalFrames))
      const { failure } = yield* failing(stream(model, "hi"))
      assert.strictEqual(failure.code, "CONTENT_FILTER")
      assert.include(failure.message, "I'm sorry, I can't help with that.")
      assert.isFalse(LlmFailure.transientCodes.has(failure.code))
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("a non-streamed refusal is CONTENT_FILTER with the refusal text", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel({ retry: { maxRetries: 3 } })
      yield* server.otherwise(Replies.json(200, Fixtures.deepSeekCompletion({ content: null, refusal: "No." })))
      const { failure } = yield* failing(
        model.generateText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.provide(ToolsLayer)
        )
      )
      assert.strictEqual(failure.code, "CONTENT_FILTER")
      assert.include(failure.message, "No.")
      assert.lengthOf(yield* server.requests, 1)
    }))

  it.scoped("n = 3: only choice 0 is read, the others never interleave into its text", () =>
    Effect.gen(function*() {
      const { model, server } = yield* serverAndModel()
      const chunk = (index: number, delta: Record<string, unknown>, finish: string | null = null) =>
        Fixtures.frame({
          id: "chatcmpl-n",
          object: "chat.completion.chunk",
          created: 1741570283,
          model: "gpt-4o-mini",
          choices: [{ index, delta, finish_reason: finish }]
        })
      yield* server.reply(Replies.sse([
        chunk(0, { role: "assistant", content: "" }),
        chunk(1, { role: "assistant", content: "" }),
        chunk(2, { role: "assistant", content: "" }),
        chunk(1, { content: "Bonjour" }),
        chunk(0, { content: "Hello" }),
        chunk(2, { content: "Hola" }),
        chunk(0, { content: " there" }),
        chunk(2, {}, "length"),
        chunk(1, {}, "stop"),
        chunk(0, {}, "stop"),
        Fixtures.done
      ]))
      const parts = shape(yield* stream(model, "hi"))
      assert.deepStrictEqual(
        parts.filter((part) => part.type === "text-delta").map((part) => part["delta"]),
        ["Hello", " there"]
      )
      assert.strictEqual(parts.at(-1)?.["reason"], "stop")
    }))
})

describe("configuration of the key", () => {
  const local = { baseUrl: "http://127.0.0.1:1" }
  const build = (options: ChatCompletions.Options) =>
    Effect.flip(Layer.build(
      ChatCompletions.layer(options).pipe(Layer.provide(Layer.succeed(
        HttpClient.HttpClient,
        HttpClient.make(() => Effect.die("never called"))
      )))
    ))

  it.scoped("a key with a trailing LF, CRLF, CR or spaces is an InvalidApiKey error that never shows the key", () =>
    Effect.gen(function*() {
      for (const key of [`${apiKey}\n`, `${apiKey}\r\n`, `${apiKey}\r`, ` ${apiKey} `, `sk-a\u0000b`, "sk-ä€"]) {
        const error = yield* build({ ...local, apiKey: Redacted.make(key) })
        assert.strictEqual(error.reason, "InvalidApiKey", JSON.stringify(key))
        assert.strictEqual(error.option, "apiKey")
        assert.notInclude(error.message, apiKey)
        assert.notInclude(JSON.stringify(error), apiKey)
      }
      const newline = yield* build({ ...local, apiKey: Redacted.make(`${apiKey}\n`) })
      assert.include(newline.message, "line break")
    }))

  it.scoped("layerConfig: LLM_API_KEY with a trailing newline is a ConfigError naming the problem", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(
        ChatCompletions.layerConfig().pipe(
          Layer.provide(Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.die("never called")))),
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(new Map([["LLM_API_KEY", `${apiKey}\n`]]), { pathDelim: "_" })
            )
          )
        )
      ))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      const text = Cause.pretty(exit.cause)
      assert.include(text, "line break")
      assert.notInclude(text, apiKey)
    }))

  it.scoped("body.n other than 1 is refused at configuration (only the first choice is read)", () =>
    Effect.gen(function*() {
      const error = yield* build({ ...local, body: { n: 3 } })
      assert.strictEqual(error.option, "body")
      assert.include(error.message, "first choice")
    }))
})
