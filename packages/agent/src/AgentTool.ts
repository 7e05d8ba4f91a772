/**
 * Tools the agent runs inside its turns. A tool is an `@effect/ai` `Tool` — Schema parameters, success and failure
 * schemas, advertised to the model as JSON Schema — plus a handler Effect and three policies: whether a call may
 * run in parallel, what a cancel does to a running call, and whether a call needs approval.
 *
 * A handler gets its decoded parameters and a {@link Context} (`callId`, and the agent's `Service`, to steer or
 * inject from inside a tool). It returns its success value — or wraps it with {@link outcome} to conclude the turn
 * or attach model-visible contexts — and may fail with the tool's failure type. Whatever happens (invalid JSON,
 * arguments that fail the schema, an unknown tool, a failure, a defect, a denial) the model gets a result it can
 * read and correct from; a tool never fails the turn (R69).
 *
 * @since 0.0.0
 */
import type { Tool } from "@effect/ai"
import type { Ids, Message } from "@harness/domain"
import type { Effect } from "effect"
import { Predicate } from "effect"
import type { Service } from "./Agent.js"

/**
 * What a handler gets beside its parameters.
 *
 * @since 0.0.0
 * @category models
 */
export interface Context {
  readonly callId: Ids.ToolCallId
  /** The agent running this call: steer or inject from inside a tool (both wait for the batch to finish). */
  readonly agent: Service
}

const OutcomeTypeId: unique symbol = Symbol.for("@harness/agent/AgentTool/Outcome")

/**
 * A success value with effects on the turn.
 *
 * @since 0.0.0
 * @category models
 */
export interface Outcome<A> {
  readonly [OutcomeTypeId]: typeof OutcomeTypeId
  readonly value: A
  /** When true, the turn ends after this step (R70): no further request, no `turnStopping`. */
  readonly concludesTurn: boolean
  /** Model-visible contexts, logged as `user/message`s after the whole result batch of the step (R68). */
  readonly contexts: ReadonlyArray<Message.UserMessageData>
}

/**
 * Wraps a success value to conclude the turn and/or attach contexts.
 *
 * @since 0.0.0
 * @category constructors
 */
export const outcome = <A>(
  value: A,
  options?: {
    readonly concludeTurn?: boolean | undefined
    readonly contexts?: ReadonlyArray<Message.UserMessageData> | undefined
  }
): Outcome<A> => ({
  [OutcomeTypeId]: OutcomeTypeId,
  value,
  concludesTurn: options?.concludeTurn === true,
  contexts: options?.contexts ?? []
})

/**
 * Whether a handler's return value is an {@link Outcome}.
 *
 * @since 0.0.0
 * @category guards
 */
export const isOutcome = (u: unknown): u is Outcome<unknown> => Predicate.hasProperty(u, OutcomeTypeId)

/**
 * Bounds a tool's text result: text longer than `max` characters is cut, ending with `marker(cut)` (which says how
 * many characters were cut), so that the result with its marker is at most `max` characters — or the marker alone,
 * if `max` is smaller than it. A tool that cannot cut earlier with a better hint uses it as its last guard.
 *
 * @since 0.0.0
 * @category utils
 */
export const capText = (text: string, max: number, marker: (cut: number) => string): string => {
  if (text.length <= max) return text
  // The marker's length depends on the count it shows; two rounds settle it (the count only shrinks in digits).
  let keep = Math.max(0, max - marker(text.length).length)
  keep = Math.max(0, max - marker(text.length - keep).length)
  return `${text.slice(0, keep)}${marker(text.length - keep)}`
}

/**
 * What a cancel does to a running call: `interrupt` (the handler fiber is interrupted at once and the call gets an
 * `ABORTED` result) or `finish` (the call completes and keeps its real result, then the turn ends).
 *
 * @since 0.0.0
 * @category models
 */
export type CancelPolicy = "interrupt" | "finish"

/**
 * Whether a call needs the agent's `toolApproval` hook to allow it.
 *
 * @since 0.0.0
 * @category models
 */
export type Approval = "required" | "none"

/**
 * What a resumed session does with a call of this tool that a crash cut while it ran (R172):
 * - `"never"`: nothing; crash repair answers it `TOOL_OUTCOME_UNKNOWN` (it may or may not have taken effect);
 * - `"safe"`: the tool is safe to repeat (idempotent, e.g. a read): crash repair answers it `TOOL_REPLAY_PENDING`,
 *   and the agent made over the resumed session runs it again and sends its result as a waking followup.
 *
 * @since 0.0.0
 * @category models
 */
export type Replay = "never" | "safe"

/**
 * A tool ready for an agent. Build it with {@link make}.
 *
 * @since 0.0.0
 * @category models
 */
export interface AgentTool<R = never> {
  readonly name: string
  /** The `@effect/ai` definition: its parameter schema decodes the model's arguments. */
  readonly tool: Tool.Any
  /** Runs a call with decoded parameters; fails with the tool's failure type. */
  readonly handler: (params: unknown, context: Context) => Effect.Effect<unknown, unknown, R>
  /** `true`: calls may run in parallel; a predicate decides per decoded arguments; `false`: each call is a barrier. */
  readonly parallel: boolean | ((params: unknown) => boolean)
  readonly onCancel: CancelPolicy
  readonly approval: Approval
  readonly replay: Replay
}

/**
 * Makes a tool from an `@effect/ai` `Tool` and its handler.
 *
 * Defaults: `parallel: false` (exclusive), `onCancel: "interrupt"`, `approval: "none"`, `replay: "never"`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = <T extends Tool.Any, R = never>(
  tool: T,
  options: {
    readonly handler: (
      params: Tool.Parameters<T>,
      context: Context
    ) => Effect.Effect<Tool.Success<T> | Outcome<Tool.Success<T>>, Tool.Failure<T>, R>
    readonly parallel?: boolean | ((params: Tool.Parameters<T>) => boolean) | undefined
    readonly onCancel?: CancelPolicy | undefined
    readonly approval?: Approval | undefined
    readonly replay?: Replay | undefined
  }
): AgentTool<R> => ({
  name: tool.name,
  tool,
  // The loop only calls these with values decoded by `tool.parametersSchema`, i.e. `Tool.Parameters<T>`.
  handler: options.handler as AgentTool<R>["handler"],
  parallel: (options.parallel ?? false) as AgentTool<R>["parallel"],
  onCancel: options.onCancel ?? "interrupt",
  approval: options.approval ?? "none",
  replay: options.replay ?? "never"
})
