/**
 * The vocabulary of turns: why a turn started, how it ended, how it settled for live observers, and what prompt
 * admission decided.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { TextBlock } from "./Content.js"
import { JsonNumber, NonNegativeInt } from "./Json.js"
import { LlmFailure } from "./LlmFailure.js"
import { UserMessageData } from "./Message.js"
import { MessageSource } from "./MessageSource.js"

/**
 * Why a turn started: an admitted queued prompt (with its original source, even if admission rewrote the
 * content), a retry over the current log, or a compaction asked for while idle (`agent.compact`, ADR 0052).
 *
 * @since 0.0.0
 * @category schemas
 */
export const TurnTrigger = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("message"), source: MessageSource }),
  Schema.Struct({ kind: Schema.Literal("retry") }),
  Schema.Struct({ kind: Schema.Literal("compaction") })
).annotations({ identifier: "TurnTrigger" })
/**
 * @since 0.0.0
 * @category models
 */
export type TurnTrigger = typeof TurnTrigger.Type

/**
 * A turn that failed on a model request: the `LlmFailure` says why (R16). `step` is the step whose request failed.
 * Its own discriminant, `request-error`, tells it apart from {@link TurnErrorReason} (it settles as `error`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const RequestErrorReason = Schema.Struct({
  kind: Schema.Literal("request-error"),
  step: NonNegativeInt,
  failure: LlmFailure
}).annotations({ identifier: "RequestErrorReason" })

/**
 * A turn that failed for any other reason (a hook, a log append, a configuration problem). `step` is the step
 * counter when it failed: 0 before the first step began (e.g. a failing prompt append), `n` for a failure in or
 * just before step `n` (R59).
 *
 * @since 0.0.0
 * @category schemas
 */
export const TurnErrorReason = Schema.Struct({
  kind: Schema.Literal("error"),
  step: NonNegativeInt,
  message: Schema.String,
  code: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "TurnErrorReason" })

/**
 * Which budget stopped a turn (R154–R163): its step cap, a token budget, a cost budget or its deadline.
 *
 * @since 0.0.0
 * @category schemas
 */
export const BudgetKind = Schema.Literal("steps", "tokens", "cost", "deadline").annotations({
  identifier: "BudgetKind"
})
/**
 * @since 0.0.0
 * @category models
 */
export type BudgetKind = typeof BudgetKind.Type

/**
 * A turn the agent stopped because a budget was reached (R154). `budget` names it, `scope` says whether it bounds the
 * turn or the whole session, `limit` is the budget and `used` what had been used when the turn stopped (steps,
 * tokens, cost in the price table's unit, or milliseconds since the turn started for a deadline). `step` is the
 * last step that ran (0 when a session budget was already spent before the first step).
 *
 * @since 0.0.0
 * @category schemas
 */
export const BudgetReason = Schema.Struct({
  kind: Schema.Literal("budget"),
  budget: BudgetKind,
  scope: Schema.Literal("turn", "session"),
  step: NonNegativeInt,
  limit: JsonNumber,
  used: JsonNumber
}).annotations({ identifier: "BudgetReason" })
/**
 * @since 0.0.0
 * @category models
 */
export type BudgetReason = typeof BudgetReason.Type

/**
 * How a turn ended. `interrupted` is only written by crash repair, never by the loop. `budget` is newer than the
 * others: logs written before it simply never contain it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const TurnEndReason = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("completed") }),
  Schema.Struct({ kind: Schema.Literal("aborted") }),
  Schema.Struct({ kind: Schema.Literal("disposed") }),
  Schema.Struct({ kind: Schema.Literal("max-tokens") }),
  Schema.Struct({ kind: Schema.Literal("interrupted") }),
  RequestErrorReason,
  TurnErrorReason,
  BudgetReason
).annotations({ identifier: "TurnEndReason" })
/**
 * @since 0.0.0
 * @category models
 */
export type TurnEndReason = typeof TurnEndReason.Type

/**
 * How a turn settled, for live observers of `agent/settled`: `max-tokens` and `budget` settle as `completed`,
 * `disposed` as `aborted` (R58, R154).
 *
 * @since 0.0.0
 * @category schemas
 */
export const SettleReason = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("completed") }),
  Schema.Struct({ kind: Schema.Literal("aborted") }),
  Schema.Struct({
    kind: Schema.Literal("error"),
    message: Schema.String,
    code: Schema.optionalWith(Schema.String, { exact: true }),
    failure: Schema.optionalWith(LlmFailure, { exact: true })
  })
).annotations({ identifier: "SettleReason" })
/**
 * @since 0.0.0
 * @category models
 */
export type SettleReason = typeof SettleReason.Type

/**
 * What prompt admission decided: allow (optionally rewriting the content and adding contexts), or block.
 *
 * @since 0.0.0
 * @category schemas
 */
export const PromptDecision = Schema.Union(
  Schema.Struct({
    kind: Schema.Literal("allow"),
    content: Schema.optionalWith(Schema.NonEmptyArray(TextBlock), { exact: true }),
    additionalContexts: Schema.optionalWith(Schema.Array(UserMessageData), { exact: true })
  }),
  Schema.Struct({ kind: Schema.Literal("block"), reason: Schema.String })
).annotations({ identifier: "PromptDecision" })
/**
 * @since 0.0.0
 * @category models
 */
export type PromptDecision = typeof PromptDecision.Type

/**
 * The settle reason a turn end maps to (R58; a budget stop settles as `completed`, like `max-tokens`, R154).
 *
 * @since 0.0.0
 * @category utils
 */
export const settleReasonOf = (reason: TurnEndReason): SettleReason => {
  switch (reason.kind) {
    case "completed":
    case "max-tokens":
    case "budget":
      return { kind: "completed" }
    case "aborted":
    case "disposed":
    case "interrupted":
      return { kind: "aborted" }
    case "request-error":
      return { kind: "error", message: reason.failure.message, failure: reason.failure }
    case "error":
      return reason.code === undefined
        ? { kind: "error", message: reason.message }
        : { kind: "error", message: reason.message, code: reason.code }
  }
}
