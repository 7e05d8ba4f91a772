/**
 * JSON-lossless values. Everything Harness logs must survive `JSON.stringify` → `JSON.parse` unchanged, so the
 * schemas here reject what would not: `undefined`, `NaN`/`Infinity`, `-0`, functions, symbols, bigints, cycles,
 * sparse arrays and objects that are not plain records (dates, maps, class instances).
 *
 * @since 0.0.0
 */
import { ParseResult, Schema, type SchemaAST } from "effect"

/**
 * A JSON value, as a type.
 *
 * @since 0.0.0
 * @category models
 */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<JsonValue>
  | { readonly [key: string]: JsonValue }

/**
 * A JSON object, as a type.
 *
 * @since 0.0.0
 * @category models
 */
export type JsonObject = { readonly [key: string]: JsonValue }

const isPlainObject = (u: object): boolean => {
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

const describe = (u: unknown): string => {
  if (u === undefined) return "undefined"
  if (typeof u === "number") return Object.is(u, -0) ? "-0" : String(u)
  if (typeof u === "bigint") return `the bigint ${u}n`
  if (typeof u === "function") return "a function"
  if (typeof u === "symbol") return "a symbol"
  if (u === null) return "null"
  if (Array.isArray(u)) return "an array"
  if (typeof u === "object") {
    if (isPlainObject(u)) return "an object"
    const name = Object.getPrototypeOf(u)?.constructor?.name
    return name ? `an instance of ${name}` : "an object"
  }
  if (typeof u === "string") return JSON.stringify(u.length > 40 ? `${u.slice(0, 40)}…` : u)
  return String(u)
}

const renderPath = (path: ReadonlyArray<string | number>): string =>
  path.length === 0
    ? "the value"
    : path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "")

/**
 * Copies `u` as a frozen JSON value, or returns a sentence naming the first place where it is not JSON-lossless.
 *
 * Contract: the copy shares nothing mutable with `u`; later mutation of `u` cannot change it.
 *
 * @since 0.0.0
 * @category utils
 */
export const copyJson = (u: unknown): { readonly value: JsonValue } | { readonly issue: string } => {
  const seen = new Set<object>()
  const path: Array<string | number> = []
  let issue: string | undefined
  const fail = (what: string) => {
    issue = `${renderPath(path)} is ${what}, which JSON cannot represent losslessly`
    return undefined
  }
  const go = (v: unknown): JsonValue | undefined => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return v
      case "number":
        return Number.isFinite(v) && !Object.is(v, -0) ? v : fail(describe(v))
      case "object": {
        if (v === null) return null
        if (seen.has(v)) return fail("a cycle")
        if (Array.isArray(v)) {
          seen.add(v)
          const out: Array<JsonValue> = new Array(v.length)
          for (let i = 0; i < v.length; i++) {
            if (!(i in v)) {
              path.push(i)
              return fail("a hole in a sparse array")
            }
            path.push(i)
            const item = go(v[i])
            if (issue !== undefined) return undefined
            path.pop()
            out[i] = item!
          }
          seen.delete(v)
          return Object.freeze(out)
        }
        if (!isPlainObject(v)) return fail(describe(v))
        seen.add(v)
        const out: Record<string, JsonValue> = {}
        // What JSON sees: own enumerable string keys; an enumerable symbol key would be lost silently.
        if (Object.getOwnPropertySymbols(v).some((symbol) => Object.prototype.propertyIsEnumerable.call(v, symbol))) {
          return fail("an object with a symbol key")
        }
        for (const key of Object.keys(v)) {
          path.push(key)
          const item = go((v as Record<string, unknown>)[key])
          if (issue !== undefined) return undefined
          path.pop()
          // defineProperty, not assignment: `out["__proto__"] = …` would set the prototype and drop the key
          Object.defineProperty(out, key, { value: item!, enumerable: true, writable: true, configurable: true })
        }
        seen.delete(v)
        return Object.freeze(out)
      }
      default:
        return fail(describe(v))
    }
  }
  const value = go(u)
  return issue === undefined ? { value: value! } : { issue }
}

const declareJson = <A extends JsonValue>(
  refine: (v: JsonValue) => v is A,
  expected: string,
  identifier: string,
  /** What the OpenAPI document of an HTTP API carrying it says (JSON Schema). */
  jsonSchema: object
): Schema.Schema<A> => {
  const run = (u: unknown, ast: SchemaAST.AST) => {
    const result = copyJson(u)
    if ("issue" in result) return ParseResult.fail(new ParseResult.Type(ast, u, result.issue))
    return refine(result.value)
      ? ParseResult.succeed(result.value)
      : ParseResult.fail(new ParseResult.Type(ast, u, `expected ${expected}, got ${describe(u)}`))
  }
  return Schema.declare<A, A, readonly []>([], {
    decode: () => (u, _, ast) => run(u, ast),
    encode: () => (u, _, ast) => run(u, ast)
  }, { identifier, description: expected, jsonSchema })
}

/**
 * Any JSON-lossless value. Decoding copies and deep-freezes the input; the error names the offending path.
 *
 * @since 0.0.0
 * @category schemas
 */
export const JsonValue: Schema.Schema<JsonValue> = declareJson(
  (_): _ is JsonValue => true,
  "a JSON-lossless value",
  "JsonValue",
  { anyOf: ["string", "number", "boolean", "null", "array", "object"].map((type) => ({ type })) }
)

/**
 * A JSON-lossless plain object, copied and deep-frozen by decoding.
 *
 * @since 0.0.0
 * @category schemas
 */
export const JsonObject: Schema.Schema<JsonObject> = declareJson(
  (v): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v),
  "a JSON object",
  "JsonObject",
  { type: "object" }
)

/**
 * A finite number that is not `-0`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const JsonNumber = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && !Object.is(n, -0), {
    message: (issue) => `${describe(issue.actual)} cannot be represented losslessly in JSON`
  })
)

/**
 * A non-negative safe integer (never `-0`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const NonNegativeInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 0 && !Object.is(n, -0), {
    message: (issue) => `expected a non-negative integer, got ${describe(issue.actual)}`
  }),
  Schema.annotations({ identifier: "NonNegativeInt" })
)

/**
 * A positive safe integer.
 *
 * @since 0.0.0
 * @category schemas
 */
export const PositiveInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 1, {
    message: (issue) => `expected a positive integer, got ${describe(issue.actual)}`
  }),
  Schema.annotations({ identifier: "PositiveInt" })
)

/**
 * Freezes `value` and everything reachable from it, in place, and returns it: values Harness hands out after
 * decoding (messages, parsed tool arguments) cannot be changed behind the log's back.
 *
 * @since 0.0.0
 * @category utils
 */
export const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFreeze(item)
  }
  return value
}
