/**
 * The durable session log's vocabulary. Each event sits in an envelope `{ seq, time, type, data,
 * sourceEventSeqs? }`: `seq` is gap-free from 0, `time` is epoch milliseconds from `Clock`, `type` is the
 * contract's wire name and `sourceEventSeqs` cites earlier events (an assistant message its chunks, a tool result
 * its call). Only `user/message` may stand outside a turn.
 *
 * Compaction appends too: a `compaction` record (ADR 0052) says which prefix of the history its summary stands
 * for, and a `turn/rollback` record (ADR 0061) which turn's messages later requests leave out; nothing is rewritten, so
 * logs written before them decode unchanged.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { AssistantBlock, TextBlock } from "./Content.js"
import { AgentMessageId, ToolCallId } from "./Ids.js"
import { JsonObject, JsonValue, NonNegativeInt, PositiveInt } from "./Json.js"
import { MessageSource } from "./MessageSource.js"
import { TurnEndReason, TurnTrigger } from "./Turn.js"

const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**

 * @since 0.0.0

 * @category schemas

 */
export const TurnStart = Schema.Struct({ turn: PositiveInt, trigger: TurnTrigger })
/**
 * @since 0.0.0
 * @category schemas
 */
export const TurnEnd = Schema.Struct({ turn: PositiveInt, reason: TurnEndReason })
/**
 * @since 0.0.0
 * @category schemas
 */
export const StepStart = Schema.Struct({ turn: PositiveInt, step: PositiveInt })
/**
 * @since 0.0.0
 * @category schemas
 */
export const StepEnd = Schema.Struct({ turn: PositiveInt, step: PositiveInt })

/**
 * A user-role message: a prompt, injected context, a hook's additional context, a goal message. `messageId` is
 * the accepting id when the message came through the agent's `send`, so the log says which accepted message it
 * holds (resume and idempotent delivery depend on it).
 *
 * @since 0.0.0
 * @category schemas
 */
export const UserMessage = Schema.Struct({
  messageId: optional(AgentMessageId),
  content: Schema.NonEmptyArray(TextBlock),
  source: MessageSource
})

/**
 * Steering drained into the open turn; it always came through the inbox, so it carries its id.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SteeringMessage = Schema.Struct({
  turn: PositiveInt,
  messageId: AgentMessageId,
  content: Schema.NonEmptyArray(TextBlock),
  source: MessageSource
})

/**
 * One raw stream part as the model produced it (the encoded `@effect/ai` stream part).
 *
 * @since 0.0.0
 * @category schemas
 */
export const AssistantChunk = Schema.Struct({ turn: PositiveInt, step: PositiveInt, chunk: JsonValue })

/**
 * Token usage as the provider reported it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  inputTokens: optional(NonNegativeInt),
  outputTokens: optional(NonNegativeInt),
  totalTokens: optional(NonNegativeInt),
  reasoningTokens: optional(NonNegativeInt),
  cachedInputTokens: optional(NonNegativeInt)
})
/**
 * @since 0.0.0
 * @category models
 */
export type Usage = typeof Usage.Type

/**
 * The model's message of one step: text, reasoning and tool calls (truncated calls of a `max-tokens` finish are
 * removed). `provenance` names the route; `replayState` is provider-private data needed to replay it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AssistantMessage = Schema.Struct({
  turn: PositiveInt,
  step: PositiveInt,
  content: Schema.Array(AssistantBlock),
  provenance: Schema.Struct({
    /** The route label the request went to. */
    model: Schema.String,
    provider: optional(Schema.String),
    /** The model the provider reported serving the request (`response-metadata`), beside the route label. */
    reportedModel: optional(Schema.String),
    replayState: optional(JsonValue)
  }),
  finishReason: optional(Schema.String),
  usage: optional(Usage)
})

/**
 * A tool call the loop is about to answer. `arguments` is the model's raw text, verbatim. `replay: "safe"` says
 * the tool is safe to repeat: crash repair answers the call `TOOL_REPLAY_PENDING` and the resumed agent runs it
 * again (R172, ADR 0054); absent (older logs, `replay: "never"` tools), a cut call stays `TOOL_OUTCOME_UNKNOWN`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolCall = Schema.Struct({
  turn: PositiveInt,
  step: PositiveInt,
  callId: ToolCallId,
  name: Schema.String,
  arguments: Schema.String,
  replay: Schema.optional(Schema.Literal("safe"))
})

/**
 * The codes Harness writes in `tool/result.error.code`, in one place so producers and readers agree:
 * - `UNKNOWN_TOOL`, `INVALID_ARGUMENTS` (invalid JSON or arguments that fail the schema), `INVALID_OUTPUT`,
 *   `TOOL_FAILED` (the tool's typed failure), `TOOL_DEFECT`, `RESULT_TOO_LARGE` (a result above the agent's
 *   `maxToolResultChars`), `DENIED` (approval): the call was answered, with an error;
 * - `ABORTED`: a cancel interrupted the running call; `ABORTED_BEFORE_DISPATCH`: the call never started;
 * - `TOOL_OUTCOME_UNKNOWN` / `TOOL_NOT_STARTED`: written by crash repair for calls a crash left unanswered;
 *   `APPROVAL_PENDING`: crash repair's answer to a call that waited for approval (it has not run, ADR 0054);
 *   `TOOL_REPLAY_PENDING`: crash repair's answer to a cut call of a tool that is safe to repeat (R172): the resumed
 *   agent runs it again and sends its result as a message.
 * The field stays an open string: tools and plugins may use codes of their own.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolErrorCode = Schema.Literal(
  "UNKNOWN_TOOL",
  "INVALID_ARGUMENTS",
  "INVALID_OUTPUT",
  "TOOL_FAILED",
  "TOOL_DEFECT",
  "RESULT_TOO_LARGE",
  "DENIED",
  "ABORTED",
  "ABORTED_BEFORE_DISPATCH",
  "TOOL_OUTCOME_UNKNOWN",
  "TOOL_NOT_STARTED",
  "APPROVAL_PENDING",
  "TOOL_REPLAY_PENDING"
)
/**
 * @since 0.0.0
 * @category errors
 */
export type ToolErrorCode = typeof ToolErrorCode.Type

/**
 * The answer to a tool call. `error` carries routing facts for failed calls (`code`: a {@link ToolErrorCode} or a
 * tool's own).
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolResult = Schema.Struct({
  turn: PositiveInt,
  step: PositiveInt,
  callId: ToolCallId,
  name: Schema.String,
  content: Schema.Array(TextBlock),
  isError: Schema.Boolean,
  error: optional(Schema.Struct({ name: Schema.String, code: Schema.String })),
  meta: optional(JsonObject)
})

/**
 * A tool as advertised to the model.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolDescriptor = Schema.Struct({
  name: Schema.String,
  description: optional(Schema.String),
  parameters: JsonObject
})
/**
 * @since 0.0.0
 * @category models
 */
export type ToolDescriptor = typeof ToolDescriptor.Type

/**
 * What a request was made with: the route (`model`, optional `provider` and options), the system prompt and the
 * advertised tools. Logged when it first appears and whenever it changes.
 *
 * @since 0.0.0
 * @category schemas
 */
export const RequestHeader = Schema.Struct({
  header: Schema.Struct({
    config: Schema.Struct({
      model: Schema.String,
      provider: optional(Schema.String),
      options: optional(JsonObject)
    }),
    system: optional(Schema.String),
    tools: optional(Schema.Array(ToolDescriptor))
  }),
  reason: Schema.Literal("initial", "resume", "change")
})
/**
 * @since 0.0.0
 * @category models
 */
export type RequestHeader = typeof RequestHeader.Type

/**
 * A compaction (ADR 0052): the model's summary of the history derived from seqs `0..through`, which stood for the
 * first `messages` messages folded from the log. From this record on, a request's history is the summary (one
 * user-role message) followed by the messages folded after those (R144). It lies in the compaction step that
 * asked for it (after that step's `assistant/chunk` records, before its `step/end`) and is written in one append
 * with that `step/end`, so a cancelled or crashed compaction leaves no record (R148). `reason` says whether a
 * caller asked for it (`manual`) or the context estimate passed the threshold (`automatic`); `estimate` is the
 * token estimate that was measured when it started; `model` and `usage` are the summary request's.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Compaction = Schema.Struct({
  turn: PositiveInt,
  step: PositiveInt,
  summary: Schema.String,
  through: NonNegativeInt,
  messages: NonNegativeInt,
  reason: Schema.Literal("manual", "automatic"),
  estimate: NonNegativeInt,
  model: Schema.String,
  usage: optional(Usage)
})

/**
 * A rollback (ADR 0061): a send with `whenBusy: "rollback"` cancelled the open turn `turn` and dropped it from the
 * model's view. From this record on, a request's history leaves out the folded messages `from..through - 1` (the
 * turn's own, or those after a compaction inside it) and every message the turn folds after the record, until its
 * `turn/end`. Written inside that turn, in the send's critical section, so the decision and the record are one;
 * `by` is the message that asked for it. The turn's events stay in the log.
 *
 * @since 0.0.0
 * @category schemas
 */
export const TurnRollback = Schema.Struct({
  turn: PositiveInt,
  by: AgentMessageId,
  from: NonNegativeInt,
  through: NonNegativeInt
})

const envelope = <T extends string, D extends Schema.Schema.AnyNoContext>(type: T, data: D) =>
  Schema.Struct({
    seq: NonNegativeInt,
    time: NonNegativeInt,
    type: Schema.Literal(type),
    data,
    sourceEventSeqs: optional(Schema.Array(NonNegativeInt))
  }).annotations({ identifier: type })

/**
 * Every durable event, in its envelope, keyed by `type`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionEvent = Schema.Union(
  envelope("turn/start", TurnStart),
  envelope("turn/end", TurnEnd),
  envelope("step/start", StepStart),
  envelope("step/end", StepEnd),
  envelope("user/message", UserMessage),
  envelope("steering/message", SteeringMessage),
  envelope("assistant/chunk", AssistantChunk),
  envelope("assistant/message", AssistantMessage),
  envelope("tool/call", ToolCall),
  envelope("tool/result", ToolResult),
  envelope("request/header", RequestHeader),
  envelope("compaction", Compaction),
  envelope("turn/rollback", TurnRollback)
).annotations({ identifier: "SessionEvent" })
/**
 * @since 0.0.0
 * @category models
 */
export type SessionEvent = typeof SessionEvent.Type

/**

 * @since 0.0.0

 * @category models

 */
export type SessionEventType = SessionEvent["type"]

/**
 * The durable event of a given type.
 *
 * @since 0.0.0
 * @category models
 */
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { readonly type: T }>

/**
 * An event before the log numbers and stamps it.
 *
 * @since 0.0.0
 * @category models
 */
export type SessionEventInput = SessionEvent extends infer E ? E extends SessionEvent ? Omit<E, "seq" | "time"> : never
  : never

/**
 * The input of a given type.
 *
 * @since 0.0.0
 * @category models
 */
export type SessionEventInputOf<T extends SessionEventType> = Omit<SessionEventOf<T>, "seq" | "time">
