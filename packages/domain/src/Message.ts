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
 * How to send. `wakeup: true` makes the model run; `id` (optional) makes acceptance idempotent: an id the agent
 * already accepted returns that id again and changes nothing.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SendOptions = Schema.Struct({
  target: SendTarget,
  wakeup: Schema.Boolean,
  id: Schema.optionalWith(AgentMessageId, { exact: true })
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
 * The input given to `send` (or a preset, or a hook's additional contexts) was not a valid `UserMessageData`.
 * `message` is the formatted parse issue, naming the path and the problem.
 *
 * @since 0.0.0
 * @category errors
 */
export class InvalidMessageError extends Schema.TaggedError<InvalidMessageError>("@harness/domain/InvalidMessageError")(
  "InvalidMessageError",
  { message: Schema.String }
) {}

const decode = Schema.decodeUnknownEither(UserMessageData, { onExcessProperty: "error", errors: "all" })

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}

/**
 * Decodes untrusted input into a frozen copy.
 *
 * Contract: the result shares nothing mutable with `input`; unknown keys, empty content, non-text blocks,
 * unknown source kinds and values JSON cannot carry losslessly are refused with an `InvalidMessageError`.
 *
 * @since 0.0.0
 * @category utils
 */
export const decodeUserMessageData = (input: unknown): Effect.Effect<UserMessageData, InvalidMessageError> => {
  const result = decode(input)
  return result._tag === "Right"
    ? Effect.succeed(deepFreeze(result.right))
    : Effect.fail(
      new InvalidMessageError({ message: `invalid message: ${ParseResult.TreeFormatter.formatErrorSync(result.left)}` })
    )
}

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
