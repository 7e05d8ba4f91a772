/**
 * The API key (and any secret header) never leaves the Authorization header: not in logs (every level, captured
 * from the Effect logger), not in errors (rendered with `Cause.pretty`, `JSON.stringify`, `String`, and as the
 * `LlmFailure` the agent logs), not in anything the provider returns — even when a careless server echoes the
 * header back in its error bodies.
 */
import type { AiError } from "@effect/ai"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure } from "@harness/domain"
import { Cause, Clock, ConfigProvider, Effect, Exit, Inspectable, Layer, Redacted, Tracer } from "effect"
import { ChatCompletions } from "../src/index.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { apiKey, captureLogs, languageModel, stream, Tools, ToolsLayer } from "./support/provider.js"
import * as Replies from "./support/replies.js"

const headerSecret = "org-secret-5a1c9e"

const leaks = (text: string): boolean => text.includes(apiKey) || text.includes(headerSecret)

/** Every rendering of an error that could end up in a log, a terminal or the session log. */
const renderings = (error: AiError.AiError, now: number): ReadonlyArray<string> => [
  Cause.pretty(Cause.fail(error)),
  JSON.stringify(Cause.fail(error)),
  JSON.stringify(error),
  String(error),
  error.message,
  Inspectable.format(error),
  JSON.stringify(LlmFailure.failureOf(error, now))
]

describe("secrets", () => {
  it.scoped("the API key and secret headers appear only in the request headers", () =>
    Effect.gen(function*() {
      const lines = yield* captureLogs
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        headers: { "X-Org-Secret": Redacted.make(headerSecret) },
        retry: { maxRetries: 1 }
      })
      const echo429: FakeServer.Reply = (request, response) => {
        response.writeHead(429, { "content-type": "application/json", "retry-after": "0" })
        response.end(JSON.stringify({ error: { message: `slow down ${request.headers.authorization}` } }))
      }
      const echo500: FakeServer.Reply = (request, response) => {
        response.writeHead(500, { "content-type": "text/plain" })
        response.end(`boom ${request.headers.authorization} ${request.headers["x-org-secret"]}`)
      }
      const frames = Fixtures.deepSeekStream({ content: ["Hello"] })
      yield* server.reply(
        Replies.echoAuthorization, // 401 echoing the key
        echo429, // retried: the retry is logged
        Replies.sse(frames),
        echo500,
        echo500, // retried once, then fails
        Replies.sse(frames.slice(0, 3), { end: "cut" }),
        Replies.sse(["data: {oops\n\n"]),
        Replies.sse(frames),
        Replies.json(200, Fixtures.deepSeekCompletion({ content: "done" }))
      )

      const errors: Array<AiError.AiError> = []
      const outputs: Array<unknown> = []
      for (let i = 0; i < 6; i++) {
        const exit = yield* Effect.exit(stream(model, "hi"))
        if (Exit.isSuccess(exit)) outputs.push(exit.value)
        else {
          const failure = Cause.failureOption(exit.cause)
          assert.isTrue(failure._tag === "Some", Cause.pretty(exit.cause))
          if (failure._tag === "Some") errors.push(failure.value)
        }
      }
      outputs.push(
        yield* model.generateText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.provide(ToolsLayer)
        )
      )

      // The server did receive the secrets, so the scenarios above really had them to leak.
      const requests = yield* server.requests
      assert.isTrue(requests.every((request) => request.headers.authorization === `Bearer ${apiKey}`))
      assert.isTrue(requests.every((request) => request.headers["x-org-secret"] === headerSecret))
      assert.isTrue(requests.every((request) => !leaks(request.raw)))

      assert.deepStrictEqual(errors.map((error) => error._tag), [
        "HttpResponseError",
        "HttpResponseError",
        "HttpRequestError",
        "MalformedOutput"
      ])
      const now = yield* Clock.currentTimeMillis
      for (const error of errors) {
        for (const text of renderings(error, now)) assert.isFalse(leaks(text), text)
      }
      // The echoed bodies are kept, scrubbed: the provider's message survives.
      const first = errors[0]
      if (first === undefined) return assert.fail("no failure recorded")
      assert.include(LlmFailure.failureOf(first, now).message, "Authentication failed for header: Bearer <redacted>")
      assert.strictEqual(first._tag === "HttpResponseError" ? first.request.headers.authorization : "", "<redacted>")
      assert.strictEqual(first._tag === "HttpResponseError" ? first.request.headers["x-org-secret"] : "", "<redacted>")

      assert.isAbove(lines.length, 0, "the retries were logged")
      for (const line of lines) assert.isFalse(leaks(line), line)
      assert.lengthOf(outputs, 3)
      for (const output of outputs) assert.isFalse(leaks(JSON.stringify(output)))
    }))

  it.scoped("span attributes, events and exits do not show the key; the Authorization attribute is redacted", () =>
    Effect.gen(function*() {
      const recorded: Array<string> = []
      const tracer = Tracer.make({
        span: (name, parent, context, links, startTime, kind) => {
          const attributes = new Map<string, unknown>()
          return {
            _tag: "Span",
            name,
            spanId: `span-${recorded.length}`,
            traceId: "trace",
            parent,
            context,
            status: { _tag: "Started", startTime },
            attributes,
            links,
            sampled: true,
            kind,
            // Failures only: formatting a successful HTTP response would consume its body.
            end: (_endTime, exit) =>
              void recorded.push(`${name} end ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"}`),
            attribute: (key, value) => {
              attributes.set(key, value)
              recorded.push(`${name} ${key}=${String(value)}`)
            },
            event: (event, _time, attrs) => void recorded.push(`${name} event ${event} ${Inspectable.format(attrs)}`),
            addLinks: () => {}
          }
        },
        context: (f) => f()
      })
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        headers: { "X-Org-Secret": Redacted.make(headerSecret) },
        retry: { maxRetries: 0 }
      })
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({ content: ["ok"] })), Replies.echoAuthorization)
      yield* stream(model, "hi").pipe(Effect.withTracer(tracer))
      yield* Effect.exit(stream(model, "hi").pipe(Effect.withTracer(tracer)))
      assert.isTrue(recorded.some((line) => line.includes("http.request.header.authorization=<redacted>")))
      assert.isTrue(recorded.some((line) => line.includes("http.request.header.x-org-secret=<redacted>")))
      for (const line of recorded) assert.isFalse(leaks(line), line)
    }))

  it.scoped("configuration errors and the config itself do not show the key", () =>
    Effect.gen(function*() {
      const built = yield* Effect.exit(
        Layer.build(
          ChatCompletions.layerConfig().pipe(
            Layer.provide(NodeHttpClient.layer),
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
              new Map([["LLM_API_KEY", apiKey], ["LLM_TEMPERATURE", "7"]]),
              { pathDelim: "_" }
            )))
          )
        )
      )
      assert.isTrue(Exit.isFailure(built))
      if (Exit.isFailure(built)) {
        assert.include(Cause.pretty(built.cause), "temperature must be between 0 and 2")
        assert.isFalse(leaks(Cause.pretty(built.cause)))
        assert.isFalse(leaks(JSON.stringify(built.cause)))
      }
      const options = yield* ChatCompletions.config.pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["LLM_API_KEY", apiKey]]), { pathDelim: "_" }))
      )
      assert.isFalse(leaks(JSON.stringify(options)))
      assert.isFalse(leaks(Inspectable.format(options)))
      assert.isFalse(leaks(String(options.apiKey)))
      assert.strictEqual(options.apiKey === undefined ? "" : Redacted.value(options.apiKey), apiKey)
    }))
})
