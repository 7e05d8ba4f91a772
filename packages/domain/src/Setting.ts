/**
 * Schemas for the values of options and limits (positive counts, durations given as `Duration.DurationInput`) and
 * the one-line problem when a set of them is refused: where the packages check what a caller configured, so a bad
 * value is named the same way everywhere (`limits.maxOutputChars must be a positive integer, got 0`).
 *
 * @since 0.0.0
 */
import { Duration, Option, ParseResult, Schema } from "effect"
import * as Json from "./Json.js"

const show = (value: unknown): string => typeof value === "string" ? JSON.stringify(value) : String(value)

/**
 * `Json.PositiveInt` (a safe integer of one or more), refused with `must be a positive integer, got …` — whatever
 * the value was.
 *
 * @since 0.0.0
 * @category schemas
 */
export const PositiveInt: Schema.Schema<number> = Json.PositiveInt.annotations({
  message: (issue) => ({ message: `must be a positive integer, got ${show(issue.actual)}`, override: true })
})

/**
 * `Json.NonNegativeInt` (a safe integer of zero or more), refused with `must be a non-negative integer, got …`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const NonNegativeInt: Schema.Schema<number> = Json.NonNegativeInt.annotations({
  message: (issue) => ({ message: `must be a non-negative integer, got ${show(issue.actual)}`, override: true })
})

/**
 * A `Duration.DurationInput` (a `Duration`, milliseconds, `"30 seconds"`, …) decoded to a finite `Duration` above
 * zero, or of zero too with `allowZero`. A negative number is refused (`Duration` would clamp it to zero).
 *
 * @since 0.0.0
 * @category schemas
 */
export const DurationInput = (
  options: { readonly allowZero: boolean }
): Schema.Schema<Duration.Duration, unknown> => {
  const wanted = options.allowZero ? "a non-negative finite duration" : "a positive finite duration"
  return Schema.transformOrFail(
    Schema.Unknown,
    Schema.DurationFromSelf,
    {
      strict: true,
      decode: (input, _, ast) => {
        const decoded = Duration.decodeUnknown(input)
        const negative = (typeof input === "number" || typeof input === "bigint") && input < 0
        const millis = Option.isSome(decoded) ? Duration.toMillis(decoded.value) : Number.NaN
        return Option.isSome(decoded) && !negative && Number.isFinite(millis) &&
            (options.allowZero ? millis >= 0 : millis > 0)
          ? ParseResult.succeed(decoded.value)
          : ParseResult.fail(
            new ParseResult.Type(
              ast,
              input,
              `must be ${wanted} (e.g. "30 seconds" or a number of milliseconds), got ${show(input)}`
            )
          )
      },
      encode: ParseResult.succeed
    }
  )
}

/**
 * The first problem of a refused decode: the path of the offending value (dot-joined after `prefix`; `prefix`
 * alone at the root) and what was wrong with it (`is not a known setting` for an unexpected key).
 *
 * @since 0.0.0
 * @category utils
 */
export const problemOf = (
  error: ParseResult.ParseError,
  prefix?: string
): { readonly path: string; readonly message: string } => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  const segments = [...(prefix === undefined ? [] : [prefix]), ...(issue?.path ?? []).map(String)]
  return {
    path: segments.join("."),
    message: issue === undefined ? "is invalid" : issue._tag === "Unexpected" ? "is not a known setting" : issue.message
  }
}
