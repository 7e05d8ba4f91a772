/**
 * A tool call's arguments as the model sent them — raw JSON text — parsed in one place, and the key under which
 * Harness carries its own facts (the raw text, provenance, cache tokens) on `@effect/ai` parts, messages and their
 * options. The session's history, the provider and the agent all read and write through these.
 *
 * @since 0.0.0
 */
import { Either } from "effect"
import { deepFreeze } from "./Json.js"

/**
 * The provider-options and metadata key under which Harness carries its facts on `@effect/ai` values.
 *
 * @since 0.0.0
 * @category constants
 */
export const harnessKey = "harness" as const

/**
 * The raw argument text parsed and frozen: blank text is `{}` (a call without parameters is often sent as `""`),
 * anything else goes through `JSON.parse`; `Left` holds the parser's message for text that is not JSON.
 *
 * @since 0.0.0
 * @category utils
 */
export const parse = (raw: string): Either.Either<unknown, string> => {
  if (raw.trim() === "") return Either.right(Object.freeze({}))
  try {
    return Either.right(deepFreeze(JSON.parse(raw) as unknown))
  } catch (error) {
    return Either.left(error instanceof Error ? error.message : String(error))
  }
}

/**
 * The parsed arguments when they form a JSON object (blank text counts as `{}`), else `undefined`.
 *
 * @since 0.0.0
 * @category utils
 */
export const parseObject = (raw: string): Readonly<Record<string, unknown>> | undefined => {
  const parsed = parse(raw)
  if (Either.isLeft(parsed)) return undefined
  const value = parsed.right
  // `JSON.parse` builds plain objects only; the check proves the shape.
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Readonly<Record<string, unknown>>
    : undefined
}
