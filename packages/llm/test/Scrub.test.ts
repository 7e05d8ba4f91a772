/**
 * The scrubber's contract (ADR 0011), where it alone stands between a secret and the caller: a secret that contains
 * another (a header value that extends the API key) is replaced whole, whichever order the secrets come in; and a
 * deep scrub replaces secrets in object keys too — a tool whose parameters are a map gets the model's arguments with
 * the key names scrubbed, since no later check looks at them.
 */
import { Tool, Toolkit } from "@effect/ai"
import type { AiError } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure } from "@harness/domain"
import { Cause, Effect, Exit, Inspectable, Redacted, Schema, Stream } from "effect"
import * as Scrub from "../src/internal/scrub.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { apiKey, languageModel } from "./support/provider.js"
import * as Replies from "./support/replies.js"

/** A header secret that extends the API key: replacing the key inside it would leave its tail behind. */
const tail = "-org-5a1c9e77f0"
const extendsKey = `${apiKey}${tail}`

const SetEnv = Tool.make("set_env", {
  description: "Set environment variables",
  parameters: { vars: Schema.Record({ key: Schema.String, value: Schema.String }) },
  success: Schema.String
})
const EnvTools = Toolkit.make(SetEnv)
const EnvLayer = EnvTools.toLayer({ set_env: () => Effect.succeed("set") })

describe("scrubber", () => {
  it("a secret that starts with another is replaced whole, in either order", () => {
    const inner = "sk-inner-secret-0123"
    const outer = `${inner}-and-more-9876`
    for (const secrets of [[inner, outer], [outer, inner]]) {
      const scrub = Scrub.make(secrets)
      assert.strictEqual(scrub.text(`a ${outer} b ${inner} c`), "a <redacted> b <redacted> c", secrets.join(", "))
      assert.strictEqual(scrub.text(JSON.stringify({ v: outer.toUpperCase() })), `{"v":"<redacted>"}`)
      assert.strictEqual(scrub.clip(`${outer}${outer}`, 12), "<redacted><r…")
    }
  })

  it("a deep scrub replaces secrets in object keys, at any depth, and keeps the shape", () => {
    const secret = "sk-deep-7Qx2LmZ9pV"
    const scrub = Scrub.make([secret])
    const value: unknown = {
      [secret]: secret,
      list: [{ [`x-${secret}`]: 1 }, secret],
      nested: { inner: { [secret.toUpperCase()]: [true, null, 2] } }
    }
    assert.deepStrictEqual(scrub.deep(value), {
      "<redacted>": "<redacted>",
      list: [{ "x-<redacted>": 1 }, "<redacted>"],
      nested: { inner: { "<redacted>": [true, null, 2] } }
    })
  })
})

describe("scrubber in the provider", () => {
  it.scoped("a secret header value that extends the API key, echoed in an error body, leaves none of itself behind", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server, {
        headers: { "X-Org-Secret": Redacted.make(extendsKey) },
        retry: { maxRetries: 0 }
      })
      const echo: FakeServer.Reply = (request, response) => {
        response.writeHead(400, { "content-type": "text/plain" })
        response.end(`bad header ${String(request.headers["x-org-secret"])} here`)
      }
      yield* server.reply(echo)
      const exit = yield* Effect.exit(model.generateText({ prompt: "hi" }))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      const failure = Cause.failureOption(exit.cause)
      assert.strictEqual(failure._tag, "Some", Cause.pretty(exit.cause))
      if (failure._tag === "None") return
      const error: AiError.AiError = failure.value
      assert.strictEqual((yield* server.requests)[0]?.headers["x-org-secret"], extendsKey)
      const renderings = [
        JSON.stringify(error),
        Inspectable.format(error),
        Cause.pretty(Cause.fail(error)),
        JSON.stringify(LlmFailure.failureOf(error, 0))
      ]
      for (const rendered of renderings) {
        assert.notInclude(rendered, tail)
        assert.notInclude(rendered, apiKey)
      }
      assert.include(JSON.stringify(error), "bad header <redacted> here")
    }))

  it.scoped("tool arguments that name a secret as a map key come back with the key scrubbed", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make
      const model = yield* languageModel(server)
      const args = JSON.stringify({ vars: { [apiKey]: "1", PATH: `/bin:${apiKey}` } })
      yield* server.reply(Replies.sse(Fixtures.deepSeekStream({
        toolCalls: [{ id: "call_1", name: "set_env", fragments: [args.slice(0, 17), args.slice(17)] }]
      })))
      const parts = yield* model.streamText({ prompt: "hi", toolkit: EnvTools, disableToolCallResolution: true }).pipe(
        Stream.runCollect,
        Effect.provide(EnvLayer)
      )
      const calls = Array.from(parts).flatMap((part) => (part.type === "tool-call" ? [part.params] : []))
      assert.deepStrictEqual(calls, [{ vars: { "<redacted>": "1", PATH: "/bin:<redacted>" } }])
      assert.notInclude(JSON.stringify(Array.from(parts)), apiKey)
    }))
})
