/**
 * Messages that enter an agent: the single input shape `UserMessageData`, the accepted `AgentMessage`, and the
 * options of `send`. Input is decoded (and so copied and frozen) at acceptance; invalid input is refused with an
 * `InvalidMessageError` before anything is queued, published or logged.
 *
 * @since 0.0.0
 */
import { Effect, ParseResult, Schema } from "effect"
import { TextBlock } from "./Content.js"
import { AgentMessageId } from "./Ids.js"
import * as Input from "./Input.js"
import { slowPath } from "./internal/slowPath.js"
import { deepFreeze } from "./Json.js"
import { MessageSource } from "./MessageSource.js"

/**
 * A user-role message: prompts, steering, injected context, hook contexts and goal messages all have this shape.
 * Content is a non-empty list of text blocks, which every provider can carry in a user message.
 *
 * @since 0.0.0
 * @category schemas
 */
export const UserMessageData = Schema.Struct({
  content: Schema.NonEmptyArray(TextBlock).annotations({
    // Overrides only an empty list (whose raw issue would be "[0] is missing"); a bad block keeps its own,
    // more precise issue (its index and what is wrong with it).
    message: (issue) => ({
      message: "content must be a non-empty list of text blocks",
      override: Array.isArray(issue.actual) && issue.actual.length === 0
    })
  }),
  source: MessageSource
}).annotations({ identifier: "UserMessageData" })
/**
 * @since 0.0.0
 * @category models
 */
export type UserMessageData = typeof UserMessageData.Type

/**
 * An accepted message: the input plus the id it was accepted under. Its keys are exactly `content`, `id`, `source`.
 * An agent keeps one frozen object of this shape per accepted message, from acceptance to the log: the queue, the
 * inbox records, the `promptSubmit` hook and the inbox's live events all carry it (ADR 0073).
 *
 * @since 0.0.0
 * @category schemas
 */
export const AgentMessage = Schema.Struct({
  content: UserMessageData.fields.content,
  id: AgentMessageId,
  source: MessageSource
}).annotations({ identifier: "AgentMessage" })
/**
 * @since 0.0.0
 * @category models
 */
export type AgentMessage = typeof AgentMessage.Type

/**
 * Where a message goes: its own turn, or the turn that is open now.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SendTarget = Schema.Literal("next-turn", "next-step")
/**
 * @since 0.0.0
 * @category models
 */
export type SendTarget = typeof SendTarget.Type

/**
 * What a send does when a turn (or an admission) is running at the instant it is accepted: `enqueue` (what a send
 * does without it: route by target × wakeup), `steer` (join the running turn as steering), `reject` (fail with
 * `TurnRunningError`, accepting nothing), `interrupt` (cancel the running turn keeping the inbox, and run this message
 * next, ahead of everything queued), `rollback` (`interrupt`, and the running turn is dropped from every later
 * request's history by a durable `turn/rollback` record; the log keeps it).
 *
 * @since 0.0.0
 * @category schemas
 */
export const WhenBusy = Schema.Literal("enqueue", "steer", "reject", "interrupt", "rollback")
/**
 * @since 0.0.0
 * @category models
 */
export type WhenBusy = typeof WhenBusy.Type

/**
 * How to send. `wakeup: true` makes the model run; `id` (optional) makes acceptance idempotent: an id the agent
 * already accepted returns that id again and changes nothing; `whenBusy` (optional) decides what happens when a turn
 * is running (see {@link WhenBusy}).
 *
 * Stale input (ADR 0059), for a message that waits in the inbox (not an injection): `ttl` (milliseconds) or
 * `expiresAt` (epoch milliseconds, on the agent's `Clock`) — the earlier of the two wins — discards the message with
 * cause `expired` if no turn took it by then; `supersedes` names a key: the send discards every pending message sent
 * with the same key (cause `superseded`, naming this message's id), so the latest one wins.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SendOptions = Schema.Struct({
  target: SendTarget,
  wakeup: Schema.Boolean,
  id: Schema.optionalWith(AgentMessageId, { exact: true }),
  whenBusy: Schema.optionalWith(WhenBusy, { exact: true }),
  ttl: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  expiresAt: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  supersedes: Schema.optionalWith(Schema.NonEmptyString, { exact: true })
}).annotations({ identifier: "SendOptions" })
/**
 * @since 0.0.0
 * @category models
 */
export type SendOptions = typeof SendOptions.Type

/**
 * Which FIFO an accepted message entered: `queued` (whole turns) or `steering` (joins the open turn).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxPlacement = Schema.Literal("queued", "steering")
/**
 * @since 0.0.0
 * @category models
 */
export type InboxPlacement = typeof InboxPlacement.Type

/**
 * Why caller input was refused: `schema` (it is plain data that does not match the operation's schema), or why it
 * could not even be copied as plain, bounded data (see `Input.IssueReason`: `not-plain`, `accessor`, `cycle`,
 * `too-deep`, `too-large`, `unreadable`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InvalidInputReason = Schema.Literal(
  "schema",
  "not-plain",
  "accessor",
  "cycle",
  "too-deep",
  "too-large",
  "unreadable"
)
/**
 * @since 0.0.0
 * @category models
 */
export type InvalidInputReason = typeof InvalidInputReason.Type

/**
 * Input given to an agent operation (`send`, a preset, `batch`, `cancel`, `withdraw`, or a hook's additional
 * contexts) was refused. `reason` says why; `message` names what was given, the path and the problem.
 *
 * @since 0.0.0
 * @category errors
 */
export class InvalidMessageError extends Schema.TaggedError<InvalidMessageError>("@harness/domain/InvalidMessageError")(
  "InvalidMessageError",
  { reason: InvalidInputReason, message: Schema.String }
) {}

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
 *
 * @since 0.0.0
 * @category utils
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
        ? Effect.succeed(deepFreeze(decoded.right))
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
 * Decodes untrusted input into a frozen copy.
 *
 * Contract: never throws; the result shares nothing mutable with `input`; unknown keys, empty content, non-text
 * blocks, unknown source kinds, values JSON cannot carry losslessly, and anything `Input.copy` refuses (accessors,
 * non-plain objects, Proxies that throw, more than `Input.messageLimits` deep or large) are refused with an
 * `InvalidMessageError`.
 *
 * @since 0.0.0
 * @category utils
 */
export const decodeUserMessageData: (input: unknown) => Effect.Effect<UserMessageData, InvalidMessageError> =
  decodeCopy(UserMessageData, "message", Input.messageLimits, exactUserMessageData)

/**
 * Builds a message from plain text.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (text: string, source: MessageSource = { kind: "user" }): UserMessageData => ({
  content: [{ type: "text", text }],
  source
})
