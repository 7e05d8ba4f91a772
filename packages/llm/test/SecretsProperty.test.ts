/**
 * The secrets property (ADR 0011): a server plants the API key — or a secret header value — in every place it can
 * write: any response header (value, or name when the key is a valid header name), error bodies (JSON fields,
 * plain text, HTML) at offsets that straddle every cut the provider makes, redirect targets, 200 bodies that are not
 * event streams, in-stream error events and error chunks, malformed chunks, refusals, chunk ids and models, content
 * and tool arguments of a successful stream, and connections cut mid-stream. The key itself varies (visible ASCII,
 * including characters that JSON and URLs escape) and so does the form it is planted in (as sent, upper or lower
 * case, JSON `\u` escapes), and so does how the two secrets relate (unrelated, or one a prefix of the other, so a
 * scrubber must replace the longer whole). For every run: no failure rendering (`JSON.stringify`, `Inspectable.format`,
 * `Cause.pretty`, `String`, the `LlmFailure` the agent logs), no part returned and no log line contains any form of
 * any secret, nor any 10 characters of one (what a cut through a secret would leave). Real HTTP over loopback, one fake server per run.
 */
import type { AiError } from "@effect/ai"
import { LanguageModel } from "@effect/ai"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { LlmFailure } from "@harness/domain"
import { Cause, Context, Effect, Exit, FastCheck as fc, Inspectable, Layer, Redacted } from "effect"
import { ChatCompletions } from "../src/index.js"
import * as FakeServer from "./support/FakeServer.js"
import * as Fixtures from "./support/fixtures.js"
import { captureLogs, stream, Tools, ToolsLayer } from "./support/provider.js"
import * as Replies from "./support/replies.js"

/** Where the planted secret goes: `@@` is replaced by the secret, in the form the context needs. */
const marker = "@@"

type Form = "as-is" | "upper" | "lower" | "unicode"

interface Plant {
  readonly key: string
  readonly headerSecret: string
  /** Which secret is planted. */
  readonly which: "key" | "header"
  readonly form: Form
  /** Characters before the secret: around every cut the provider or the domain makes. */
  readonly pad: number
  readonly shape: number
  readonly status: number
}

const secretOf = (plant: Plant): string => (plant.which === "key" ? plant.key : plant.headerSecret)

const variant = (plant: Plant): string => {
  const secret = secretOf(plant)
  switch (plant.form) {
    case "upper":
      return secret.toUpperCase()
    case "lower":
      return secret.toLowerCase()
    default:
      return secret
  }
}

const unicodeEscaped = (text: string): string =>
  Array.from(text).map((char) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`).join("")

/** The secret inside a JSON string literal (escaped as JSON needs, or entirely as `\u` escapes). */
const inJson = (plant: Plant): string =>
  plant.form === "unicode" ? unicodeEscaped(variant(plant)) : JSON.stringify(variant(plant)).slice(1, -1)

// Not a character of any generated secret, so padding never looks like part of one.
const padding = (plant: Plant): string => "#".repeat(plant.pad)

/** A JSON text with the secret planted at every marker. */
const json = (plant: Plant, value: unknown): string => JSON.stringify(value).split(marker).join(inJson(plant))

/** A text with the secret planted at every marker, as is. */
const text = (plant: Plant, value: string): string => value.split(marker).join(variant(plant))

const isToken = (value: string): boolean => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value)

/** Response headers carrying the secret in every value (and a name, when it can be one). */
const plantedHeaders = (plant: Plant, extra: Readonly<Record<string, string>>): Record<string, string> => {
  const value = variant(plant)
  return {
    ...extra,
    "x-request-id": value,
    "request-id": value,
    "retry-after": value,
    "www-authenticate": `Bearer realm="${value}"`,
    "x-echo": `${padding(plant)}${value}`,
    "set-cookie": `session=${value}`,
    ...(isToken(value) ? { [`x-${value}`]: "1" } : {})
  }
}

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1741570283,
  model: "gpt-4o-mini",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra
})

const sseFrame = (plant: Plant, value: unknown): string => `data: ${json(plant, value)}\n\n`

/** Every shape of reply a server can send, numbered; each plants the secret somewhere. */
const shapes: ReadonlyArray<(plant: Plant) => FakeServer.Reply> = [
  // A JSON error body: message, type, code, param, a nested field, a key name.
  (plant) =>
    Replies.raw(
      plant.status,
      plantedHeaders(plant, { "content-type": "application/json" }),
      json(plant, {
        error: {
          message: `${padding(plant)}${marker} is not valid`,
          type: marker,
          code: marker,
          param: { [marker]: [marker] }
        }
      })
    ),
  // A plain-text error body.
  (plant) =>
    Replies.raw(
      plant.status,
      plantedHeaders(plant, { "content-type": "text/plain" }),
      text(plant, `${padding(plant)}bad key ${marker} end`)
    ),
  // An HTML error page.
  (plant) =>
    Replies.raw(
      plant.status,
      plantedHeaders(plant, { "content-type": "text/html" }),
      text(plant, `<html>${padding(plant)}${marker}</html>`)
    ),
  // A redirect whose target carries the secret (as is and URL-encoded).
  (plant) =>
    Replies.raw(
      301 + (plant.pad % 8 === 0 ? 1 : 0),
      plantedHeaders(plant, {
        "content-type": "text/html",
        location: `https://evil.example/${encodeURIComponent(variant(plant))}?k=${variant(plant)}`
      }),
      text(plant, `<a href="${marker}">${padding(plant)}${marker}</a>`)
    ),
  // A 200 that is not an event stream (HTML, then JSON error).
  (plant) =>
    Replies.raw(200, plantedHeaders(plant, { "content-type": "text/html" }), text(plant, `${padding(plant)}${marker}`)),
  (plant) =>
    Replies.raw(
      200,
      plantedHeaders(plant, { "content-type": "application/json" }),
      json(plant, { error: { message: `${padding(plant)}${marker}` } })
    ),
  // An SSE error event, and an error chunk inside the stream.
  (plant) =>
    Replies.sse([`event: error\ndata: ${json(plant, { error: { message: `${padding(plant)}${marker}` } })}\n\n`], {
      headers: plantedHeaders(plant, {})
    }),
  (plant) =>
    Replies.sse([sseFrame(plant, { error: { message: `${padding(plant)}${marker}`, type: marker } })], {
      headers: plantedHeaders(plant, {})
    }),
  // A malformed chunk (invalid JSON, then a valid JSON of the wrong shape).
  (plant) => Replies.sse([text(plant, `data: {oops ${padding(plant)}${marker}\n\n`)]),
  (plant) => Replies.sse([sseFrame(plant, { choices: `${padding(plant)}${marker}` })]),
  // A refusal.
  (plant) =>
    Replies.sse([
      sseFrame(plant, chunk({ role: "assistant", content: null, refusal: `${padding(plant)}${marker}` })),
      sseFrame(plant, chunk({}, {}, "stop")),
      Fixtures.done
    ]),
  // A cut mid-stream after output that carries the secret.
  (plant) =>
    Replies.sse([sseFrame(plant, chunk({ content: `${padding(plant)}${marker}` }, { id: marker }))], { end: "cut" }),
  // A successful stream with the secret in ids, model, content, reasoning and tool arguments.
  (plant) =>
    Replies.sse([
      sseFrame(
        plant,
        chunk({ role: "assistant", content: `${marker} ${padding(plant)}` }, { id: marker, model: marker })
      ),
      sseFrame(plant, chunk({ reasoning_content: marker })),
      sseFrame(
        plant,
        chunk({
          tool_calls: [{ index: 0, id: marker, type: "function", function: { name: "read_file", arguments: "" } }]
        })
      ),
      sseFrame(plant, chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ path: marker }) } }] })),
      sseFrame(plant, chunk({}, { usage: { prompt_tokens: 1, completion_tokens: 1 } }, "tool_calls")),
      Fixtures.done
    ], { headers: plantedHeaders(plant, {}) })
]

const keyChars = fc.constantFrom(
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=~!*'()\"\\"
)

/**
 * How the header secret relates to the key: a value of its own, the key with a tail (the key is a prefix of it, so a
 * scrubber that tried the key first would leave the tail behind), or a prefix of the key.
 */
type Relation = "own" | "extends-key" | "prefix-of-key"

const headerOf = (key: string, own: string, relation: Relation, tail: string, cut: number): string => {
  switch (relation) {
    case "own":
      return own
    case "extends-key":
      return `${key}${tail}`
    case "prefix-of-key":
      // At least 12 characters, shorter than the key.
      return key.slice(0, 12 + (cut % (key.length - 12)))
  }
}

const plants: fc.Arbitrary<Plant> = fc.record({
  key: fc.string({ unit: keyChars, minLength: 12, maxLength: 48 }).map((tail) => `sk-${tail}`),
  own: fc.string({ unit: keyChars, minLength: 12, maxLength: 24 }).map((tail) => `org-${tail}`),
  relation: fc.constantFrom<Relation>("own", "own", "extends-key", "prefix-of-key"),
  // At least 10 characters: what a scrubber that replaced only the key would leave is then a leak `windows` sees.
  tail: fc.string({ unit: keyChars, minLength: 10, maxLength: 16 }),
  cut: fc.nat(),
  which: fc.constantFrom("key" as const, "header" as const),
  form: fc.constantFrom<Form>("as-is", "upper", "lower", "unicode"),
  pad: fc.oneof(
    fc.nat(40),
    fc.constantFrom(180, 190, 480, 490, 1_960, 1_990, 7_990).chain((base) => fc.integer({ min: base, max: base + 20 }))
  ),
  shape: fc.nat(shapes.length - 1),
  status: fc.constantFrom(400, 401, 403, 404, 413, 422, 429, 500, 502, 503)
}).map(({ cut, key, own, relation, tail, ...rest }): Plant => ({
  ...rest,
  key,
  headerSecret: headerOf(key, own, relation, tail, cut)
}))

/** Every form of every secret that would count as a leak, lower-cased. */
const leakForms = (plant: Plant): ReadonlyArray<string> =>
  [plant.key, plant.headerSecret].flatMap((secret) => {
    const escaped = JSON.stringify(secret).slice(1, -1)
    return [secret, escaped, JSON.stringify(escaped).slice(1, -1), encodeURIComponent(secret)].map((form) =>
      form.toLowerCase()
    )
  })

/** Windows of 10 characters of each secret (lower-cased): a cut secret leaves one of them behind. */
const windows = (plant: Plant): ReadonlyArray<string> =>
  [plant.key, plant.headerSecret].flatMap((secret) => {
    const lower = secret.toLowerCase()
    return Array.from({ length: Math.max(1, lower.length - 9) }, (_, at) => lower.slice(at, at + 10))
  })

const leaked = (plant: Plant, rendered: string): string | undefined => {
  const lower = rendered.toLowerCase()
  return [...leakForms(plant), ...windows(plant)].find((form) => lower.includes(form))
}

const renderings = (error: AiError.AiError, now: number): ReadonlyArray<string> => [
  JSON.stringify(error),
  Inspectable.format(error),
  Cause.pretty(Cause.fail(error)),
  String(error),
  error.message,
  JSON.stringify(LlmFailure.failureOf(error, now))
]

/** One run of the property: a fake server plants the secret; nothing that leaves the provider may show it. */
const check = (plant: Plant) =>
  Effect.gen(function*() {
    const lines = yield* captureLogs
    const server = yield* FakeServer.make
    const model = yield* Layer.build(
      ChatCompletions.layer({
        baseUrl: server.baseUrl,
        apiKey: Redacted.make(plant.key),
        headers: { "X-Org-Secret": Redacted.make(plant.headerSecret) },
        retry: { maxRetries: 1, baseDelay: 0 }
      }).pipe(Layer.provide(NodeHttpClient.layer))
    ).pipe(Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)), Effect.orDie)
    const reply = shapes[plant.shape]!(plant)
    yield* server.otherwise(reply)

    const streamed = yield* Effect.exit(stream(model, "hi"))
    const generated = yield* Effect.exit(
      model.generateText({ prompt: "hi", toolkit: Tools, disableToolCallResolution: true }).pipe(
        Effect.provide(ToolsLayer)
      )
    )
    const requests = yield* server.requests
    assert.isTrue(requests.every((request) => request.headers.authorization === `Bearer ${plant.key}`))

    const texts: Array<string> = [...lines]
    const collect = <A>(exit: Exit.Exit<A, AiError.AiError>): void => {
      if (Exit.isSuccess(exit)) {
        texts.push(JSON.stringify(exit.value), Inspectable.format(exit.value))
        return
      }
      // Every failure is a typed AiError: no defect, no interruption.
      const failure = Cause.failureOption(exit.cause)
      assert.isTrue(failure._tag === "Some", `not a failure: ${Cause.pretty(exit.cause)}`)
      if (failure._tag === "Some") texts.push(...renderings(failure.value, 0))
    }
    collect(streamed)
    collect(generated)
    for (const rendered of texts) {
      const form = leaked(plant, rendered)
      assert.isUndefined(form, `shape ${plant.shape} leaked ${JSON.stringify(form)} in ${rendered.slice(0, 400)}`)
    }
  })

describe("secrets: property", () => {
  it.scoped.prop(
    "no form of the key or a secret header value appears in any failure, part or log line",
    { plant: plants },
    ({ plant }) => check(plant),
    // 150 exchanges over real HTTP: 96 s and 242 s in two runs beside a CPU hog. Slow, but no race decides it.
    { timeout: 600_000, fastCheck: { numRuns: 150 } }
  )

  // Found by the property: a body that is not JSON and starts with a secret header value. V8's parse error quotes
  // the first 10 characters of the text, a cut of the secret the scrubber cannot see (that message is no longer used).
  it.scoped("a body that is not JSON and starts with a secret: the parser's message does not carry its first characters", () =>
    check({
      key: "sk-aaaaaaaaaaaa",
      headerSecret: "org-aaaaaaaaaaaaaaaaa",
      which: "header",
      form: "as-is",
      pad: 0,
      shape: 4,
      status: 400
    }))

  // Found by the property: a secret with a backslash, written unescaped into a tool call's JSON arguments, comes out
  // of their decoding with the escape taken (`\\P` → `\P`), a form the scrubber did not know.
  it.scoped("a secret with a backslash written unescaped into tool arguments is scrubbed from the decoded params", () =>
    check({
      key: "sk-wMSa6b8Th4P2FobUUHcmn(+.=sM4Lm8s",
      headerSecret: "org-\\\\Pj6R7OYw_AHUW",
      which: "header",
      form: "lower",
      pad: 1990,
      shape: 12,
      status: 404
    }))

  // Found by the property (in CI): `\N` is no JSON escape, but its lower-case form `\n` is — a server that writes the
  // secret lower-cased and unescaped into tool arguments hands back a newline where the secret had `\N`.
  it.scoped("a secret whose backslash escape is valid JSON only in another letter case is scrubbed from decoded params", () =>
    check({
      key: "sk-aaaaaaaaaaaa",
      headerSecret: "org-\\Naaaaaaaaaaaa",
      which: "header",
      form: "lower",
      pad: 0,
      shape: 12,
      status: 400
    }))
})
