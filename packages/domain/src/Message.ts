/**
 * Messages that enter an agent: the single input shape `UserMessageData`, the accepted `AgentMessage`, and the
 * options of `send`. The agent decodes (and so copies and freezes) input at acceptance; invalid input is refused
 * with an `InvalidMessageError` before anything is queued, published or logged.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { TextBlock } from "./Content.js"
import { AgentMessageId } from "./Ids.js"
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
 * Why caller input was refused: `schema` (it is plain data that does not match the operation's schema), or why the
 * agent could not even copy it as plain, bounded data (own enumerable data properties, 64 levels, 16 MiB of JSON,
 * 100 000 values): `not-plain` (a class instance, an object not made by `{}`, a function, a symbol, a bigint, a
 * sparse array), `accessor` (a getter or setter), `cycle`, `too-deep`, `too-large`, `unreadable` (reading it threw).
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
