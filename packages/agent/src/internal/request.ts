/**
 * One model request's inputs and transport: the system prompt, the route (the `request` hook, R51), the request
 * header logged before a request whose header changed, and the model's response stream.
 */
import type { AiError, LanguageModel, Prompt, Response as AiResponse, Tool } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import { Json, ModelStream } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import type { Scope, Stream } from "effect"
import { Cause, Context, Effect, Option } from "effect"
import type { RequestConfig } from "../Hooks.js"
import type { Env } from "./env.js"
import { append, provide } from "./live.js"
import type { State } from "./state.js"
import { honourCancel, read, update } from "./state.js"
import { failTurn, TurnFailure } from "./turnFailure.js"

/**
 * A system prompt given as an effect, evaluated for this step (a string or none is used as it is, with no effect of
 * its own: `runStep` reads it directly).
 */
export const evaluateSystemPrompt = (
  env: Env,
  system: Effect.Effect<string, unknown, unknown>,
  step: number
): Effect.Effect<string | undefined, TurnFailure> =>
  provide(env, system).pipe(
    Effect.mapErrorCause((cause) => Cause.fail(failTurn(step, "the system prompt failed")(cause))),
    Effect.zipLeft(honourCancel(env))
  )

/** The route this request starts from (R51): the last one logged, else the agent's own. */
export const proposedConfig = (env: Env, state: State): RequestConfig => state.header?.config ?? env.defaultConfig

/**
 * The route of this request as the `request` hook makes it from `proposed` (R51); without a hook the route is
 * `proposed` itself, with no effect of its own (`runStep` decides).
 */
export const hookedConfig = (
  env: Env,
  hook: NonNullable<NonNullable<Env["options"]["hooks"]>["request"]>,
  proposed: RequestConfig,
  turn: number,
  step: number
): Effect.Effect<RequestConfig, TurnFailure> =>
  provide(env, hook({ agent: env.service, turn, step, config: proposed }, Effect.succeed(proposed))).pipe(
    Effect.mapErrorCause((cause) => Cause.fail(failTurn(step, "request hook failed")(cause))),
    Effect.zipLeft(honourCancel(env)),
    Effect.filterOrFail(
      (config) =>
        typeof config === "object" && config !== null && typeof config.model === "string" && config.model !== "" &&
        (config.options === undefined || !("issue" in Json.copyJson(config.options))),
      () =>
        new TurnFailure({
          step,
          message: "the request hook returned a config without a model (or with non-JSON options)"
        })
    )
  )

/** The request header this step would log: the route, the system prompt and the advertised tools. */
export const headerOf = (
  env: Env,
  config: RequestConfig,
  system: string | undefined
): SessionEvent.RequestHeader["header"] => {
  const route: {
    -readonly [K in keyof SessionEvent.RequestHeader["header"]["config"]]:
      SessionEvent.RequestHeader["header"]["config"][K]
  } = {
    model: config.model
  }
  if (config.provider !== undefined) route.provider = config.provider
  if (config.options !== undefined) route.options = config.options
  const header: {
    -readonly [K in keyof SessionEvent.RequestHeader["header"]]: SessionEvent.RequestHeader["header"][K]
  } = {
    config: route
  }
  if (system !== undefined) header.system = system
  if (env.descriptors !== undefined) header.tools = env.descriptors
  return header
}

/** Whether two headers are the same (a header is logged again only when it changed). */
export const sameHeader = (a: SessionEvent.RequestHeader["header"], b: SessionEvent.RequestHeader["header"]): boolean =>
  a.system === b.system && a.tools === b.tools && a.config.model === b.config.model &&
  a.config.provider === b.config.provider && JSON.stringify(a.config.options) === JSON.stringify(b.config.options)

/**
 * Logs the request header (R51): always before this agent's first request (`initial` on a log without one,
 * `resume` otherwise), and later only when it changed. Runs inside a section's transaction `tx`.
 */
export const logHeader = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  header: SessionEvent.RequestHeader["header"]
) {
  const last = (yield* read(env)).header
  if (last !== undefined && sameHeader(last, header)) return
  const reason = last !== undefined ? "change" : (yield* env.log.state).header === undefined ? "initial" : "resume"
  yield* append(env, tx, { type: "request/header", data: { header, reason } })
  yield* update(env, (s) => ({ ...s, header }))
})

/** A part of a model's response, typed by `ModelStream` or decoded by `LanguageModel.streamText`. */
export type ResponsePart = ModelStream.Part | AiResponse.StreamPart<Record<string, Tool.Any>>

/** A model's response as the turn consumes it: a stream, or a pull when the model offers one (ADR 0033). */
export type Response =
  | {
    readonly _tag: "Stream"
    readonly stream: Stream.Stream<ResponsePart, AiError.AiError>
  }
  | { readonly _tag: "Pull"; readonly pull: ModelStream.Pull }

/**
 * The model's response for one request, its span and whatever the response holds in the `Scope`. When the
 * `LanguageModel` came with its own `ModelStream` (Harness's provider, the testkit's scripted model), the parts arrive
 * typed from it — pulled when it offers `pullText`, streamed otherwise — with the request `LanguageModel` would
 * have sent (the toolkit's tools, tool choice `auto`; `none` without tools) and its `LanguageModel.streamText` span
 * (ended when the scope closes), but without rebuilding and running the stream-part schema per request (ADR 0019).
 * Any other model goes through the standard `streamText`.
 */
export const modelResponse = (env: Env, prompt: Prompt.Prompt): Effect.Effect<Response, never, Scope.Scope> => {
  const lower = Context.getOption(env.context, ModelStream.ModelStream)
  if (Option.isNone(lower) || lower.value.model !== env.model) {
    return Effect.succeed({
      _tag: "Stream",
      stream: env.model.streamText({ prompt, toolkit: env.toolkit, disableToolCallResolution: true })
    })
  }
  const direct = lower.value
  const tools = env.toolkit === undefined ? [] : Object.values(env.toolkit.tools)
  // Untraced, the provider still gets the span its options require, but nothing ends or exports it.
  const span = env.traced
    ? Effect.makeSpanScoped("LanguageModel.streamText", { captureStackTrace: false })
    : Effect.makeSpan("LanguageModel.streamText", { captureStackTrace: false })
  return Effect.flatMap(span, (span): Effect.Effect<Response, never, Scope.Scope> => {
    const options: LanguageModel.ProviderOptions = {
      prompt,
      tools,
      toolChoice: tools.length === 0 ? "none" : "auto",
      responseFormat: { type: "text" },
      span
    }
    const pullText = direct.pullText
    return pullText === undefined
      ? Effect.succeed({ _tag: "Stream", stream: direct.streamText(options) })
      : Effect.map(pullText(options), (pull) => ({ _tag: "Pull", pull }))
  })
}
