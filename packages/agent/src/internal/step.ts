/** One step of a turn (R49): its request, the response's assembly, and the sections that close it (R48, R54). */
import { AiError, Prompt } from "@effect/ai"
import type { Content, LlmFailure as LlmFailureT, SessionEvent } from "@harness/domain"
import { LlmFailure } from "@harness/domain"
import { History, type SessionLog } from "@harness/session"
import {
  Cause,
  Channel,
  Chunk,
  Clock,
  Context,
  Effect,
  Either,
  FiberRef,
  Option,
  Ref,
  Schema,
  Scope,
  Stream
} from "effect"
import { CurrentRequest } from "../CurrentRequest.js"
import type { RequestConfig } from "../Hooks.js"
import * as Budgets from "./budget.js"
import * as Assembly from "./content.js"
import { chunkJson } from "./content.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import { append, appendOwn, provide, publishAppended } from "./live.js"
import { drain } from "./outbox.js"
import type { Response, ResponsePart } from "./request.js"
import {
  evaluateSystemPrompt,
  headerOf,
  hookedConfig,
  logHeader,
  modelResponse,
  proposedConfig,
  sameHeader
} from "./request.js"
import * as Spans from "./spans.js"
import type { Progress, ToolRuntime } from "./state.js"
import { honourCancel, locked, read, update } from "./state.js"
import { runToolCalls } from "./toolCalls.js"
import { appendWarning, endTurnLocked, turnReason } from "./turnEnd.js"
import type { TurnFailure } from "./turnFailure.js"
import { failTurn, logFailure } from "./turnFailure.js"

/**
 * Runs `f` on each chunk of the response `open` opens for the request `config`, in order, until it ends; a failure
 * of either ends it. One critical section and one batch append per chunk, not per part (ADR 0009 hot path, ADR 0019).
 * A pull is pulled directly (ADR 0033); a stream is pulled in this fiber (its channel pulled in the response's scope,
 * which also holds the request's span) rather than run by `Stream.runForEachChunk`, which forks a fiber and waits on
 * two `Deferred`s per run (ADR 0028). An interruption stops it between chunks and closes the scope either way.
 *
 * While the response is opened, pulled and closed, this fiber's context holds `CurrentRequest` (`config`) and the
 * response's `Scope`: both set in one update and put back by the exit handler that closes the scope
 * (`Effect.provideService` and `Scope.extend` would each add an acquire/release region per request, ADR 0033).
 */
const forEachChunk = <E2, R2>(
  config: RequestConfig,
  open: Effect.Effect<Response, never, Scope.Scope>,
  f: (chunk: Chunk.Chunk<ResponsePart>) => Effect.Effect<void, E2, R2>
): Effect.Effect<void, AiError.AiError | E2, R2> =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.flatMap(
      FiberRef.getAndUpdate(
        FiberRef.currentContext,
        (context) => Context.add(Context.add(context, CurrentRequest, config), Scope.Scope, scope)
      ),
      (context) =>
        Effect.onExit(
          // The scope is in this fiber's context from here to the exit handler.
          Effect.flatMap(open as Effect.Effect<Response>, (response) => {
            if (response._tag === "Pull") {
              const pulled = response.pull
              const loop: Effect.Effect<void, AiError.AiError | E2, R2> = Effect.matchEffect(pulled, {
                onFailure: Option.match({ onNone: () => Effect.void, onSome: Effect.fail }),
                onSuccess: (chunk) => Effect.zipRight(f(chunk), loop)
              })
              return loop
            }
            return Effect.flatMap(Channel.toPullIn(Stream.toChannel(response.stream), scope), (pull) => {
              const loop: Effect.Effect<void, AiError.AiError | E2, R2> = Effect.flatMap(
                pull,
                Either.match({ onLeft: () => Effect.void, onRight: (chunk) => Effect.zipRight(f(chunk), loop) })
              )
              return loop
            })
          }),
          (exit) => Effect.zipRight(Scope.close(scope, exit), FiberRef.set(FiberRef.currentContext, context))
        )
    ))

export type StepOutcome =
  | {
    readonly _tag: "Completed"
    readonly continue: boolean
    readonly concluded: boolean
    readonly maxTokens: boolean
    /** The step's own critical section ended the turn (a step without calls, or whose result concluded it). */
    readonly ended: boolean
    /** The next step's history, when the step's last critical section also opened the next step. */
    readonly next?: History.History | undefined
  }
  | { readonly _tag: "RequestFailed"; readonly error: AiError.AiError; readonly failure: LlmFailureT.LlmFailure }

export const stepOutcome = (outcome: StepOutcome): string =>
  outcome._tag === "RequestFailed"
    ? "request-failed"
    : outcome.concluded
    ? "concluded"
    : outcome.continue
    ? "continue"
    : "stop"

const requestFailure = (failure: LlmFailureT.LlmFailure): StepOutcome => ({
  _tag: "RequestFailed",
  error: new AiError.UnknownError({ module: "Agent", method: "step", description: failure.message, cause: failure }),
  failure
})

/**
 * Whether nothing runs between a step's opening and the critical section before it: no `step` hook and no system
 * prompt to evaluate. Then the section that opens a turn, or that closes a tool step the turn goes on after, also
 * opens the next step (ADR 0033): its D1 would find the outbox that section just drained.
 */
export const opensInline = (env: Env): boolean => {
  const system = env.options.system
  // A `turnBudget` hook and a session budget are read after the turn opens, before its first step (R156, R160); an
  // agent that may compact before a step decides so before opening it (R146).
  return env.options.hooks?.step === undefined && (system === undefined || typeof system === "string") &&
    env.options.hooks?.turnBudget === undefined && env.budget.maxSessionTokens === undefined &&
    env.budget.maxSessionCost === undefined && env.compaction?.contextWindow === undefined
}

/**
 * In an unconcluded tool step's last critical section, after its `step/end`: opens the next step when nothing runs
 * before the next step's opening (`opensInline`). Runs inside that section's transaction `tx`.
 */
const openNext = (
  env: Env,
  tx: SessionLog.Transaction,
  progress: Ref.Ref<Progress>,
  turn: number,
  step: number
): Effect.Effect<History.History | undefined, TurnFailure> =>
  !opensInline(env)
    ? Effect.succeed(undefined)
    : Effect.zipRight(Ref.update(progress, (p) => ({ ...p, step: step + 1 })), openStep(env, tx, turn, step + 1))

/**
 * Opens a step: the history the request will see — the reconstruction boundary (R103): the log as it is right
 * before `step/start` — then `step/start`, through the section's transaction `tx`.
 */
export const openStep = (
  env: Env,
  tx: SessionLog.Transaction,
  turn: number,
  step: number
): Effect.Effect<History.History, TurnFailure> =>
  Effect.zipLeft(env.log.history, appendOwn(env, tx, [{ type: "step/start", data: { turn, step } }])).pipe(
    Effect.mapError(logFailure(step))
  )

/**
 * One step (R49): hook, D1, snapshot, `step/start`, header, stream, message, tools, D2, `step/end`. `opened`: the
 * history of a step the section before it already opened (the turn's opening, or the previous tool step's close).
 */
export const runStep = Effect.fnUntraced(function*(
  env: Env,
  progress: Ref.Ref<Progress>,
  tools: ToolRuntime,
  turn: number,
  step: number,
  opened: History.History | undefined,
  gauge: Budgets.Gauge
) {
  let history = opened
  if (history === undefined) {
    const hook = env.options.hooks?.step
    if (hook !== undefined) {
      yield* provide(env, hook({ agent: env.service, turn, step })).pipe(
        Effect.mapErrorCause((cause) => Cause.fail(failTurn(step, "step hook failed")(cause)))
      )
      yield* honourCancel(env)
    }
    // D1. An empty outbox needs no critical section: a send staged right after this read is the same as one
    // staged right after the drain (it waits for D2 either way).
    if ((yield* Inbox.get(env.inbox)).outbox.length > 0) {
      yield* locked(env, (tx) => drain(env, tx, { turn })).pipe(Effect.mapError(logFailure(step)))
    }
  }
  // A fixed system prompt and no `request` hook need no effect of their own (a step fewer each).
  const given = env.options.system
  const system = given === undefined || typeof given === "string"
    ? given
    : yield* evaluateSystemPrompt(env, given, step)
  if (history === undefined) history = yield* locked(env, (tx) => openStep(env, tx, turn, step))
  const state = yield* read(env)
  const proposed = proposedConfig(env, state)
  const hook = env.options.hooks?.request
  const config = hook === undefined ? proposed : yield* hookedConfig(env, hook, proposed, turn, step)
  // Only this activity writes the header, so an unchanged one is known without the lock (and the state read
  // before the hook ran still has it).
  const header = headerOf(env, config, system)
  const last = state.header
  if (last === undefined || !sameHeader(last, header)) {
    yield* locked(env, (tx) => logHeader(env, tx, header)).pipe(Effect.mapError(logFailure(step)))
  }

  const messages = History.messages(history)
  const requestMessages = messages.length
  const prompt = Prompt.fromMessages(
    system === undefined ? messages : [Prompt.makeMessage("system", { content: system }), ...messages]
  )
  // The request is where a model's I/O happens: yield there even when the model answers at once, so the sender,
  // observers and other fibers run before the response is consumed (an instant model's turn would otherwise run
  // from its claim to its end without an async boundary, ADR 0028).
  yield* Effect.yieldNow()
  // The response so far: a pure fold over the parts as they arrive (`content.ts`).
  let assembling = Assembly.initial
  const chunkSeqs: Array<number> = []
  // Appends parts as `assistant/chunk` records (`chunkJson` is a JSON-lossless copy by construction, so they are
  // trusted, ADR 0023) through the section's transaction `tx`, and republishes them.
  const appendChunk = (tx: SessionLog.Transaction, parts: ReadonlyArray<ResponsePart>) =>
    Effect.flatMap(
      tx.appendTrusted(
        parts.map((part) => ({ type: "assistant/chunk" as const, data: { turn, step, chunk: chunkJson(part) } }))
      ),
      (events) => {
        for (const event of events) chunkSeqs.push(event.seq)
        return publishAppended(env, events)
      }
    )
  // The parts from the chunk that carries `finish` on are held until the response ends, and appended by the
  // section that writes the message (ADR 0033): the response's last parts, so nothing waits behind them, and one
  // critical section fewer per step. Any other outcome appends them in a section of their own first.
  let finishing: ReadonlyArray<ResponsePart> | undefined
  const appendFinishing = (tx: SessionLog.Transaction) =>
    Effect.suspend(() => {
      const parts = finishing
      finishing = undefined
      return parts === undefined ? Effect.void : appendChunk(tx, parts)
    })
  const finishingFirst = <A>(outcome: A) =>
    finishing === undefined ? Effect.succeed(outcome) : Effect.as(locked(env, appendFinishing), outcome).pipe(
      Effect.mapError(logFailure(step))
    )
  const streamed = yield* forEachChunk(config, modelResponse(env, prompt), (chunk) => {
    const parts = Chunk.toReadonlyArray(chunk)
    if (parts.length === 0) return Effect.void
    let finished = false
    for (const part of parts) {
      assembling = Assembly.step(assembling, part)
      if (part.type === "finish") finished = true
    }
    const pending = finishing === undefined ? parts : [...finishing, ...parts]
    finishing = undefined
    if (finished) {
      finishing = pending
      return Effect.void
    }
    return locked(env, (tx) => appendChunk(tx, pending))
  }).pipe(
    Effect.flatMap(() => {
      const assembled = Assembly.result(assembling)
      return env.traced ? Effect.as(Spans.annotateResponse(env, assembled), assembled) : Effect.succeed(assembled)
    }),
    Spans.request(env, turn, step, config),
    Effect.either
  )
  if (streamed._tag === "Left") {
    const error = streamed.left
    if (error._tag === "SessionLogError") return yield* Effect.fail(logFailure(step)(error))
    const failure = LlmFailure.failureOf(error, yield* Clock.currentTimeMillis)
    return yield* finishingFirst<StepOutcome>({ _tag: "RequestFailed", error, failure })
  }
  const assembled = streamed.right
  // The context estimate's base (R146): this request's reported prompt size.
  const inputTokens = assembled.usage?.inputTokens
  // A reported 0 is taken as not reported: a request always carries some input.
  if (inputTokens !== undefined && inputTokens > 0) {
    yield* update(env, (s) => ({ ...s, usage: { inputTokens, messages: requestMessages } }))
  }
  if (assembled.hasError) {
    const carried = Schema.decodeUnknownOption(LlmFailure.LlmFailure)(assembled.error)
    return yield* finishingFirst(requestFailure(Option.getOrElse(carried, () => ({
      code: "UNKNOWN" as const,
      message: `the model stream reported an error: ${JSON.stringify(Assembly.jsonOf({ error: assembled.error }))}`
    }))))
  }
  if (assembled.finishReason === "error") {
    return yield* finishingFirst(requestFailure({ code: "SERVER", message: "the model finished with an error" }))
  }
  if (assembled.finishReason === "content-filter") {
    return yield* finishingFirst(
      requestFailure({ code: "CONTENT_FILTER", message: "the model's output was stopped by a content filter" })
    )
  }
  const maxTokens = assembled.finishReason === "length"
  // Truncated tool calls are never executed or logged as calls (R52).
  const content: ReadonlyArray<Content.AssistantBlock> = maxTokens
    ? assembled.content.filter((block) => block.type !== "tool-call")
    : assembled.content
  const data: {
    -readonly [K in keyof SessionEvent.SessionEventInputOf<"assistant/message">["data"]]:
      SessionEvent.SessionEventInputOf<"assistant/message">["data"][K]
  } = {
    turn,
    step,
    content,
    provenance: {
      model: config.model,
      ...(config.provider === undefined ? {} : { provider: config.provider }),
      ...(assembled.reportedModel === undefined ? {} : { reportedModel: assembled.reportedModel })
    }
  }
  if (assembled.finishReason !== undefined) data.finishReason = assembled.finishReason
  if (assembled.usage !== undefined) data.usage = assembled.usage
  Budgets.charge(gauge, assembled.usage, config.model)
  // Built here from typed parts; checked by hand, it skips the schema pass (ADR 0023).
  const trustMessage = Assembly.isValidMessage(data)
  const calls = content.filter((block): block is Content.ToolCallBlock => block.type === "tool-call")
  // The finishing parts, then the message that cites every chunk (their seqs are known once the parts are appended),
  // in the transaction `tx` of the section that writes the message.
  const appendMessage = (tx: SessionLog.Transaction) =>
    Effect.zipRight(
      appendFinishing(tx),
      Effect.suspend(() =>
        append(env, tx, { type: "assistant/message", data, sourceEventSeqs: chunkSeqs }, trustMessage)
      )
    )
  if (calls.length === 0) {
    // No calls: the message, D2, `step/end` and — unless steering was drained or a `turnStopping` hook must run
    // in between — D3 and `turn/end` (R48, R54) in one critical section (ADR 0028). Nothing can be staged while it
    // holds the lock, so D3 finds nothing D2 left: the log is the one separate sections give with no send between.
    return yield* locked(env, (tx) => endReplyStepLocked(env, tx, progress, turn, step, appendMessage, maxTokens)).pipe(
      Effect.mapError(logFailure(step))
    )
  }
  // The message goes in the first call's critical section, right before its `tool/call` (ADR 0033).
  const { concluded } = yield* runToolCalls(env, { turn, step, calls, runtime: tools, opening: appendMessage }).pipe(
    Effect.mapError(logFailure(step))
  )
  const now = Budgets.timed(gauge) ? yield* Clock.currentTimeMillis : 0
  return yield* locked(env, (tx) => endToolStepLocked(env, tx, progress, turn, step, concluded, gauge, now))
})

/**
 * The end of a step without tool calls, in one transaction `tx`: the message, D2, `step/end` and — unless steering was
 * drained or a `turnStopping` hook must run in between — D3 and `turn/end` (R48, R54).
 */
const endReplyStepLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  progress: Ref.Ref<Progress>,
  turn: number,
  step: number,
  appendMessage: (tx: SessionLog.Transaction) => Effect.Effect<unknown, SessionLog.SessionLogError>,
  maxTokens: boolean
) {
  yield* appendMessage(tx)
  const drained = yield* drain(env, tx, { turn })
  yield* appendOwn(env, tx, [{ type: "step/end", data: { turn, step } }])
  const ended = env.options.hooks?.turnStopping === undefined && !drained.steering
  if (ended) {
    const { maxTokens: before } = yield* Ref.get(progress)
    yield* endTurnLocked(env, tx, progress, turn, turnReason({ maxTokens: before || maxTokens }))
  }
  const outcome: StepOutcome = { _tag: "Completed", continue: drained.steering, concluded: false, maxTokens, ended }
  return outcome
})

/**
 * The end of a step with tool calls, in one transaction `tx`: D2, then `step/end`. A step whose result concluded the turn
 * ends it here, in the same section, without `turnStopping` (R54): no steering can be accepted between its D2 and
 * its `turn/end`, and steering D2 drained stays in the log for the next turn's request. Any other tool step opens
 * the next one here (R48).
 */
const endToolStepLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  progress: Ref.Ref<Progress>,
  turn: number,
  step: number,
  concluded: boolean,
  gauge: Budgets.Gauge,
  now: number
) {
  yield* Effect.zipRight(
    drain(env, tx, { turn }),
    appendOwn(env, tx, [{ type: "step/end", data: { turn, step } }])
  ).pipe(Effect.mapError(logFailure(step)))
  // A step with calls did not stop at `max-tokens` (a truncated response's calls are dropped, R52): only an
  // earlier step of the turn can have made its reason `max-tokens`.
  if (concluded) {
    yield* endTurnLocked(env, tx, progress, turn, turnReason(yield* Ref.get(progress)))
    const outcome: StepOutcome = { _tag: "Completed", continue: false, concluded, maxTokens: false, ended: true }
    return outcome
  }
  // The budgets after the step (R155): a budget reached ends the turn here, instead of opening the next step; the
  // last step before a hard stop is preceded by the warning (R159).
  const stop = Budgets.reached(gauge, step, now)
  if (stop !== undefined) {
    yield* endTurnLocked(env, tx, progress, turn, stop)
    const outcome: StepOutcome = { _tag: "Completed", continue: false, concluded, maxTokens: false, ended: true }
    return outcome
  }
  const warning = Budgets.warning(gauge, step)
  if (warning !== undefined) yield* appendWarning(env, tx, warning).pipe(Effect.mapError(logFailure(step)))
  const next = yield* openNext(env, tx, progress, turn, step)
  const outcome: StepOutcome = { _tag: "Completed", continue: true, concluded, maxTokens: false, ended: false, next }
  return outcome
})
