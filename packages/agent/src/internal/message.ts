/**
 * The domain's `Message` module as the agent's acceptance reads it: the schemas and vocabulary, re-exported, and
 * the decoders every caller value goes through — which only the agent runs, so they live here, not in the domain
 * (ADR 0074). A decoder copies the value first (`input.ts`), then decodes the copy, so nothing a caller passes can
 * throw through an operation, and the result shares nothing with what was passed.
 */
import { Json } from "@harness/domain"
import type { InvalidInputReason } from "@harness/domain/Message"
import { InvalidMessageError, UserMessageData } from "@harness/domain/Message"
import { Effect, ParseResult, Schema } from "effect"
import * as Input from "./input.js"
import { slowPath } from "./slowPath.js"

export * from "@harness/domain/Message"

/** Parse issues can quote the input; a refusal's message stays short whatever was given. */
const maxMessage = 2000

const refusal = (what: string, reason: InvalidInputReason, detail: string): InvalidMessageError =>
  new InvalidMessageError({
    reason,
    message: (() => {
      const text = `invalid ${what}: ${detail}`
      return text.length > maxMessage ? `${text.slice(0, maxMessage)}…` : text
    })()
  })

/**
 * A decoder for caller input: copies it with `Input.copy` (own enumerable data, bounded depth and size, never
 * throwing), then decodes the copy with `schema`, refusing excess properties. `what` names the input in the
 * error's message (`invalid ${what}: …`).
 *
 * Contract: never throws and never dies, whatever `input` is; the result shares nothing with `input`; a refusal is
 * an `InvalidMessageError` whose `reason` and `message` say what was wrong and where.
 */
export const decodeInput = <A, I>(
  schema: Schema.Schema<A, I>,
  what: string,
  limits: Input.Limits = Input.messageLimits
): (input: unknown) => Effect.Effect<A, InvalidMessageError> => decodeCopy(schema, what, limits, () => undefined)

/**
 * `decodeInput` with a shortcut: `exact` returns a copy as the decoded value itself when it can tell, without the
 * schema, that the schema would decode it to an equal value (the same keys in the same order, the same frozen
 * plain data); anything else — a refusal included — is the schema's to decide.
 */
const decodeCopy = <A, I>(
  schema: Schema.Schema<A, I>,
  what: string,
  limits: Input.Limits,
  exact: (copy: Input.Plain) => A | undefined
): (input: unknown) => Effect.Effect<A, InvalidMessageError> => {
  const decode = Schema.decodeUnknownEither(schema, { onExcessProperty: "error", errors: "all" })
  return (input) =>
    Effect.suspend(() => {
      const copied = Input.copy(input, limits)
      if ("issue" in copied) return Effect.fail(refusal(what, copied.issue.reason, copied.issue.message))
      const known = slowPath ? undefined : exact(copied.value)
      if (known !== undefined) return Effect.succeed(known)
      const decoded = decode(copied.value)
      return decoded._tag === "Right"
        ? Effect.succeed(Json.deepFreeze(decoded.right))
        : Effect.fail(refusal(what, "schema", ParseResult.TreeFormatter.formatErrorSync(decoded.left)))
    })
}

/** Whether `value` is an object whose keys are exactly `first` then `second` (if given), in that order. */
const keyedAs = (
  value: Input.Plain,
  first: string,
  second?: string
): value is { readonly [key: string]: Input.Plain } => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  let count = 0
  for (const key in value) {
    if (key !== (count === 0 ? first : second)) return false
    count++
  }
  return count === (second === undefined ? 1 : 2)
}

/**
 * A copied message in its common form — text blocks, a `user` or `plugin` source, every key in the schema's order —
 * is its own decoding: `Input.copy` made it of fresh frozen plain objects, and the schema would build the same
 * keys, in the same order, with the same values (a test compares both on generated input). Everything else (a goal
 * source, other key orders, any refusal) goes to the schema. The schema's generic decoder cost a W1 accept ≈ 10 µs
 * (ADR 0043).
 */
const exactUserMessageData = (copy: Input.Plain): UserMessageData | undefined => {
  if (!keyedAs(copy, "content", "source")) return undefined
  const { content, source } = copy
  if (!Array.isArray(content) || content.length === 0) return undefined
  for (const block of content as ReadonlyArray<Input.Plain>) {
    if (!keyedAs(block, "type", "text") || block["type"] !== "text" || typeof block["text"] !== "string") {
      return undefined
    }
  }
  const known = keyedAs(source, "kind")
    ? source["kind"] === "user"
    : keyedAs(source, "kind", "plugin") && source["kind"] === "plugin" && typeof source["plugin"] === "string"
  return known ? copy as unknown as UserMessageData : undefined
}

/**
 * Decodes a caller's message into a frozen copy: the acceptance boundary of `send`, its presets, `batch`, `edit` and
 * a tool's attached contexts.
 *
 * Contract: never throws; the result shares nothing mutable with `input`; unknown keys, empty content, non-text
 * blocks, unknown source kinds, values JSON cannot carry losslessly, and anything `Input.copy` refuses (accessors,
 * non-plain objects, Proxies that throw, more than `Input.messageLimits` deep or large) are refused with an
 * `InvalidMessageError`.
 */
export const decodeUserMessageData: (input: unknown) => Effect.Effect<UserMessageData, InvalidMessageError> =
  decodeCopy(UserMessageData, "message", Input.messageLimits, exactUserMessageData)
