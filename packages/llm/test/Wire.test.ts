/**
 * A streamed chunk's decoding: the hand-written check that lets a chunk's parsed JSON stand as its own decoding
 * (`Wire.decodeChunk`'s fast path) against `Chunk`'s schema. Generated chunks of every shape the schema allows, the
 * same with a field of the wrong type, and arbitrary JSON: wherever the check takes a value, the schema decodes it
 * too, to the same declared fields; the common chunks (text, reasoning, tool-call fragments, finish, usage, error)
 * take the fast path.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import * as Wire from "../src/internal/wire.js"

const bySchema = Schema.decodeUnknownEither(Schema.parseJson(Wire.Chunk))

/** Whether `decodeChunk` took its fast path: its value is then the parsed JSON itself, extra keys kept. */
const fastPath = (text: string): boolean => {
  const decoded = Wire.decodeChunk(text)
  return Either.isRight(decoded) && "~extra" in decoded.right
}

/** Whether `actual` has every key of `expected` (recursively), each with an equal value; arrays item by item. */
const contains = (actual: unknown, expected: unknown): boolean => {
  if (typeof expected !== "object" || expected === null) return Object.is(actual, expected)
  if (typeof actual !== "object" || actual === null || Array.isArray(actual) !== Array.isArray(expected)) return false
  const have = actual as Record<string, unknown>
  if (Array.isArray(expected)) {
    return (actual as Array<unknown>).length === expected.length && expected.every((item, i) => contains(have[i], item))
  }
  return Object.entries(expected).every(([key, value]) => key in have && contains(have[key], value))
}

/** A chunk's JSON with one key the schema does not declare, which only the fast path keeps. */
const marked = (value: object): string => JSON.stringify({ ...value, "~extra": 1 })

const chunks = Arbitrary.make(Wire.Chunk)

/** A chunk with every field the schema declares. */
const full = {
  id: "c",
  model: "m",
  created: 1,
  choices: [{
    index: 0,
    delta: {
      role: "assistant",
      content: "a",
      reasoning_content: "b",
      reasoning: "c",
      refusal: "d",
      tool_calls: [{ index: 0, id: "call", type: "function", function: { name: "f", arguments: "{}" } }]
    },
    finish_reason: "stop"
  }],
  usage: {
    prompt_tokens: 1,
    completion_tokens: 2,
    total_tokens: 3,
    prompt_cache_hit_tokens: 4,
    prompt_cache_miss_tokens: 5,
    prompt_tokens_details: { cached_tokens: 6 },
    completion_tokens_details: { reasoning_tokens: 7 }
  },
  error: { message: "e", code: 1, type: "t" }
}

/** Every path to a value in `value` (objects and arrays included). */
const pathsOf = (value: unknown, path: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  if (typeof value !== "object" || value === null) return [path]
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value)
  return [path, ...entries.flatMap(([key, item]) => pathsOf(item, [...path, key]))]
}

/** `full` with the value at `path` replaced by `wrong`. */
const spoil = (path: ReadonlyArray<string | number>, wrong: unknown): unknown => {
  const copy = JSON.parse(JSON.stringify(full)) as Record<string | number, unknown>
  let at = copy
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>
  at[path.at(-1)!] = wrong
  return copy
}

/** Both decodings of `value`'s JSON agree: the fast path takes only what the schema takes, with the same fields. */
const agrees = (value: unknown) => {
  const text = JSON.stringify(value)
  const decoded = Wire.decodeChunk(text)
  const expected = bySchema(text)
  assert.strictEqual(Either.isRight(decoded), Either.isRight(expected), text)
  // The schema's output has the declared fields only; the fast path's value has each of them, with its value.
  if (Either.isRight(decoded) && Either.isRight(expected)) assert.isTrue(contains(decoded.right, expected.right), text)
}

describe("Wire.decodeChunk", () => {
  it.prop("a chunk the fast path takes decodes by the schema to the same declared fields", [
    fc.oneof(chunks, fc.jsonValue())
  ], ([value]) => agrees(value))

  it("any declared field, or container of fields, of another JSON type: both refuse, or both take it", () => {
    for (const path of pathsOf(full).slice(1)) {
      for (const wrong of [5, -0.5, "s", "", true, null, [], [1], {}, { content: "x" }]) agrees(spoil(path, wrong))
    }
  })

  it.prop("every chunk the schema generates takes the fast path", [chunks], ([chunk]) => {
    assert.isTrue(fastPath(marked(chunk)))
  })

  it("the chunks servers stream take the fast path; text that is not a chunk goes to the schema", () => {
    const common = [
      {
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }]
      },
      { choices: [{ index: 0, delta: { reasoning_content: "…", role: "assistant" }, logprobs: null }] },
      {
        choices: [{
          index: 0,
          delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } }] }
        }]
      },
      { choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null },
      {
        choices: [],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: { cached_tokens: 0 } }
      },
      { error: { message: "overloaded", type: "server_error", code: 529 } }
    ]
    for (const chunk of common) assert.isTrue(fastPath(marked(chunk)), JSON.stringify(chunk))
    assert.isTrue(Either.isLeft(Wire.decodeChunk("{not json")))
    assert.isTrue(Either.isLeft(Wire.decodeChunk(`{"choices":[{"delta":{"content":5}}]}`)))
    assert.isTrue(Either.isLeft(Wire.decodeChunk(`{"choices":[[]]}`)))
  })
})
