/**
 * The agent's spans (ADR 0024): one per turn (`Agent.turn`, a root: its activity from claim to settlement), per step
 * (`Agent.step`), per model request (`Agent.request`) and per tool call (`Agent.toolCall`), named and attributed
 * here so the call sites stay one line. Spans go to whatever `Tracer` the program provides (`@effect/opentelemetry`
 * for export); none captures a stack trace. An agent created under Effect's default tracer records none (ADR 0028):
 * nothing reads them there, and a span costs a turn more than its log appends.
 */
import type { Content, Turn as TurnT } from "@harness/domain"
import { Clock, Context, DefaultServices, Effect, Exit, Tracer } from "effect"
import type { ActivityResult, FinishedCall, Job } from "./activity.js"
import type { Assembled } from "./content.js"
import type { Env } from "./env.js"

/** Attribute keys. Harness's own under `harness.`; the model's and the tools' from OpenTelemetry's `gen_ai.*`. */
export const attr = {
  session: "harness.session.id",
  turn: "harness.turn",
  trigger: "harness.turn.trigger",
  turnOutcome: "harness.turn.outcome",
  steps: "harness.turn.steps",
  message: "harness.message.id",
  step: "harness.step",
  stepOutcome: "harness.step.outcome",
  finishReason: "harness.request.finish_reason",
  model: "gen_ai.request.model",
  provider: "gen_ai.provider.name",
  reportedModel: "gen_ai.response.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  tool: "gen_ai.tool.name",
  callId: "gen_ai.tool.call.id",
  toolOutcome: "harness.tool.outcome"
} as const

const triggerOf = (job: Job): string => job._tag === "prompt" ? "message" : job._tag

/** Effect's default tracer (the one in its default services): an agent created under it is untraced. */
const defaultTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/** Whether an agent created now records spans: the program provided a tracer of its own. */
export const tracing: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== defaultTracer)

/** Wraps `effect` in a span only when the agent is traced. */
const spanned =
  (env: Env, name: string, attributes: Record<string, unknown>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    env.traced ? Effect.withSpan(effect, name, { captureStackTrace: false, attributes }) : effect

/** Annotates the current span, when the agent is traced. */
export const annotate = (env: Env, key: string, value: unknown): Effect.Effect<void> =>
  env.traced ? Effect.annotateCurrentSpan(key, value) : Effect.void

/** Runs `effect` with the activity's span as its parent (when there is one). */
export const withActivity = <A, E, R>(
  span: Tracer.Span | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => span === undefined ? effect : Effect.withParentSpan(effect, span)

/**
 * Starts the span of one activity: a root span (turns are claimed by a driver fiber, not by whoever sent the
 * prompt), ended by {@link endTurn} once the driver has settled the activity. Untraced, callers skip it (an
 * activity then has no span).
 */
export const startTurn = (env: Env, job: Job): Effect.Effect<Tracer.Span> =>
  Effect.makeSpan("Agent.turn", {
    root: true,
    captureStackTrace: false,
    attributes: job._tag === "prompt"
      ? { [attr.session]: env.log.id, [attr.trigger]: triggerOf(job), [attr.message]: job.item.message.id }
      : { [attr.session]: env.log.id, [attr.trigger]: triggerOf(job) }
  })

/**
 * Ends an activity's span with its outcome: the `turn/end` reason (`no-turn` when no turn opened) and the exit of
 * its fiber — interrupted for a cancelled or disposed turn, a failure for one that failed, and for a turn that
 * ended on a failed model request a failure naming it (its fiber itself returned normally).
 */
export const endTurn = (
  span: Tracer.Span | undefined,
  exit: Exit.Exit<ActivityResult, unknown>,
  reason: TurnT.TurnEndReason | undefined,
  steps: number
): Effect.Effect<void> =>
  span === undefined ? Effect.void : Effect.flatMap(Clock.currentTimeNanos, (now) =>
    Effect.sync(() => {
      span.attribute(attr.turnOutcome, reason?.kind ?? "no-turn")
      span.attribute(attr.steps, steps)
      span.end(
        now,
        reason?.kind === "request-error" && Exit.isSuccess(exit)
          ? Exit.fail(`${reason.failure.code}: ${reason.failure.message}`)
          : exit
      )
    }))

/** The span of one step. */
export const step = (env: Env, turn: number, step: number) =>
  spanned(env, "Agent.step", { [attr.session]: env.log.id, [attr.turn]: turn, [attr.step]: step })

/** The span of one model request, from the request to its last part. */
export const request = (
  env: Env,
  turn: number,
  step: number,
  config: { readonly model: string; readonly provider?: string | undefined }
) =>
  spanned(
    env,
    "Agent.request",
    config.provider === undefined
      ? { [attr.session]: env.log.id, [attr.turn]: turn, [attr.step]: step, [attr.model]: config.model }
      : {
        [attr.session]: env.log.id,
        [attr.turn]: turn,
        [attr.step]: step,
        [attr.model]: config.model,
        [attr.provider]: config.provider
      }
  )

/** Annotates the current (request) span with what the response reported: finish reason, tokens, model. */
export const annotateResponse = (env: Env, assembled: Assembled): Effect.Effect<void> =>
  !env.traced ? Effect.void : Effect.annotateCurrentSpan({
    ...(assembled.finishReason === undefined ? {} : { [attr.finishReason]: assembled.finishReason }),
    ...(assembled.usage?.inputTokens === undefined ? {} : { [attr.inputTokens]: assembled.usage.inputTokens }),
    ...(assembled.usage?.outputTokens === undefined ? {} : { [attr.outputTokens]: assembled.usage.outputTokens }),
    ...(assembled.reportedModel === undefined ? {} : { [attr.reportedModel]: assembled.reportedModel })
  })

/** The span of one tool call. */
export const toolCall = (
  env: Env,
  call: { readonly turn: number; readonly step: number; readonly block: Content.ToolCallBlock }
) =>
  spanned(env, "Agent.toolCall", {
    [attr.session]: env.log.id,
    [attr.turn]: call.turn,
    [attr.step]: call.step,
    [attr.tool]: call.block.name,
    [attr.callId]: call.block.id
  })

/** Annotates the current (tool call) span with its result: `ok`, or the error result's code. */
export const annotateToolResult = (env: Env, result: FinishedCall): Effect.Effect<void> =>
  annotate(env, attr.toolOutcome, result.data.isError ? result.data.error?.code ?? "error" : "ok")
