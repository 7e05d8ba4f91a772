/**
 * One step of a turn (R49), in four phases: prepare (hooks, D1, `step/start`, the route), request (the response
 * streamed into the log), assemble (what the response came to) and commit (the message, the tool calls, then the
 * section that closes the step). The sections that open and close a step are `stepSections.ts`.
 */
import { AiError, Prompt } from "@effect/ai"
import type { Content, LlmFailure as LlmFailureT, SessionEvent } from "@harness/domain"
import { LlmFailure } from "@harness/domain"
import { History, type SessionLog } from "@harness/session"
import type { Ref } from "effect"
import { Cause, Channel, Chunk, Clock, Context, Effect, Either, FiberRef, Option, Schema, Scope, Stream } from "effect"
import { CurrentRequest } from "../CurrentRequest.js"
import type { RequestConfig } from "../Hooks.js"
import type { Progress, ToolRuntime } from "./activity.js"
import * as Budgets from "./budget.js"
import * as Assembly from "./content.js"
import { chunkJson } from "./content.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import { append, provide, publishAppended } from "./live.js"
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
import { honourCancel, locked, read, update } from "./state.js"
import type { AppendMessage, RequestFailed, StepOutcome, StepRun } from "./stepSections.js"
import { endReplyStepLocked, endToolStepLocked, openStep } from "./stepSections.js"
import { runToolCalls } from "./toolCalls.js"
import type { TurnFailure } from "./turnFailure.js"
import { failTurn, logFailure } from "./turnFailure.js"

/**
 * One step (R49), in four phases: `prepare` (hook, D1, system prompt, `step/start`, route and header), `request`
 * (the response streamed into the log), `assemble` (what the response came to) and `commit` (the message, the tool
 * calls, D2, `step/end`). `opened`: the history of a step the section before it already opened (the turn's opening,
 * or the previous tool step's close).
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
  const run: StepRun = { turn, step, progress, tools, gauge }
  const prepared = yield* prepare(env, run, opened)
  const incoming: Incoming = { assembly: Assembly.initial, chunkSeqs: [], finishing: undefined }
  const response = yield* request(env, run, prepared, incoming)
  const answer = yield* assemble(env, run, prepared, response)
  return yield* commit(env, run, incoming, answer)
})

/** A step's request, prepared: its route, and the prompt built from the history the step opened with. */
interface Prepared {
  readonly config: RequestConfig
  readonly prompt: Prompt.Prompt
  /** How many messages of the history the prompt carries (with the reported input tokens, the estimate's base). */
  readonly messages: number
}

/**
 * Prepare: unless the section before opened the step, its `step` hook and D1 (`beforeOpening`); the system prompt;
 * the step's opening, unless done; the route (the `request` hook, R51) and its header, logged when it changed; the
 * prompt.
 */
const prepare = Effect.fnUntraced(function*(env: Env, run: StepRun, opened: History.History | undefined) {
  const { step, turn } = run
  if (opened === undefined) yield* beforeOpening(env, run)
  // A fixed system prompt and no `request` hook need no effect of their own (a step fewer each).
  const given = env.options.system
  const system = given === undefined || typeof given === "string"
    ? given
    : yield* evaluateSystemPrompt(env, given, step)
  const history = opened ?? (yield* locked(env, (tx) => openStep(env, tx, turn, step)))
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
  const prepared: Prepared = {
    config,
    prompt: Prompt.fromMessages(
      system === undefined ? messages : [Prompt.makeMessage("system", { content: system }), ...messages]
    ),
    messages: messages.length
  }
  return prepared
})

/**
 * Before a step opens in a section of its own: its `step` hook, then D1, the outbox drained into the turn. An empty
 * outbox needs no critical section: a send staged right after this read is the same as one staged right after the
 * drain (it waits for D2 either way).
 */
const beforeOpening = Effect.fnUntraced(function*(env: Env, run: StepRun) {
  const hook = env.options.hooks?.step
  if (hook !== undefined) {
    yield* provide(env, hook({ agent: env.service, turn: run.turn, step: run.step })).pipe(
      Effect.mapErrorCause((cause) => Cause.fail(failTurn(run.step, "step hook failed")(cause)))
    )
    yield* honourCancel(env)
  }
  if ((yield* Inbox.get(env.inbox)).outbox.length > 0) {
    yield* locked(env, (tx) => drain(env, tx, { turn: run.turn })).pipe(Effect.mapError(logFailure(run.step)))
  }
})

/**
 * A response on its way into the log, owned by its step: the fold of its parts so far (`content.ts`), the seqs of
 * its `assistant/chunk` records (the message cites them), and its finishing parts — from the chunk that carries
 * `finish` on — held back until the response ends and appended by the section that writes the message (ADR 0033):
 * the response's last parts, so nothing waits behind them, and one critical section fewer per step. Any other
 * outcome appends them in a section of their own first.
 */
interface Incoming {
  assembly: Assembly.State
  readonly chunkSeqs: Array<number>
  finishing: ReadonlyArray<ResponsePart> | undefined
}

/**
 * Request: the model's response to the prepared prompt, each chunk folded and appended as it arrives
 * (`receiveChunk`), then assembled. Succeeds with the assembled response or the request's failure; fails only when
 * the log refuses a chunk.
 */
const request = (
  env: Env,
  run: StepRun,
  prepared: Prepared,
  incoming: Incoming
): Effect.Effect<Either.Either<Assembly.Assembled, AiError.AiError>, TurnFailure> =>
  // The request is where a model's I/O happens: yield there even when the model answers at once, so the sender,
  // observers and other fibers run before the response is consumed (an instant model's turn would otherwise run
  // from its claim to its end without an async boundary, ADR 0028).
  Effect.zipRight(
    Effect.yieldNow(),
    forEachChunk(
      prepared.config,
      modelResponse(env, prepared.prompt),
      (chunk) => receiveChunk(env, run, incoming, chunk)
    ).pipe(
      Effect.flatMap(() => {
        const assembled = Assembly.result(incoming.assembly)
        return env.traced ? Effect.as(Spans.annotateResponse(env, assembled), assembled) : Effect.succeed(assembled)
      }),
      Spans.request(env, run.turn, run.step, prepared.config),
      Effect.matchEffect({
        onFailure: (error) =>
          error._tag === "SessionLogError"
            ? Effect.fail(logFailure(run.step)(error))
            : Effect.succeed(Either.left<AiError.AiError>(error)),
        onSuccess: (assembled) => Effect.succeed(Either.right(assembled))
      })
    )
  )

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

/**
 * Folds a chunk of the response into `incoming` and appends its parts in a critical section of their own — unless
 * a part carries `finish`: then they are held back with those before them (see {@link Incoming}).
 */
const receiveChunk = (
  env: Env,
  run: StepRun,
  incoming: Incoming,
  chunk: Chunk.Chunk<ResponsePart>
): Effect.Effect<void, SessionLog.SessionLogError> => {
  const parts = Chunk.toReadonlyArray(chunk)
  if (parts.length === 0) return Effect.void
  let finished = false
  for (const part of parts) {
    incoming.assembly = Assembly.step(incoming.assembly, part)
    if (part.type === "finish") finished = true
  }
  const pending = incoming.finishing === undefined ? parts : [...incoming.finishing, ...parts]
  incoming.finishing = undefined
  if (finished) {
    incoming.finishing = pending
    return Effect.void
  }
  return locked(env, (tx) => appendChunks(env, tx, run, incoming, pending))
}

/**
 * Appends parts as `assistant/chunk` records through the section's transaction `tx` (`chunkJson` is a JSON-lossless
 * copy by construction, so they are trusted, ADR 0023), notes their seqs and republishes them.
 */
const appendChunks = (
  env: Env,
  tx: SessionLog.Transaction,
  run: StepRun,
  incoming: Incoming,
  parts: ReadonlyArray<ResponsePart>
): Effect.Effect<unknown, SessionLog.SessionLogError> =>
  Effect.flatMap(
    tx.appendTrusted(
      parts.map((part) => ({
        type: "assistant/chunk" as const,
        data: { turn: run.turn, step: run.step, chunk: chunkJson(part) }
      }))
    ),
    (events) => {
      for (const event of events) incoming.chunkSeqs.push(event.seq)
      return publishAppended(env, events)
    }
  )

/** Appends the finishing parts held back, if any, through the section's transaction `tx`. */
const appendFinishing = (
  env: Env,
  tx: SessionLog.Transaction,
  run: StepRun,
  incoming: Incoming
): Effect.Effect<unknown, SessionLog.SessionLogError> =>
  Effect.suspend(() => {
    const parts = incoming.finishing
    incoming.finishing = undefined
    return parts === undefined ? Effect.void : appendChunks(env, tx, run, incoming, parts)
  })

/** The assistant message a response came to, ready to commit. */
interface Reply {
  readonly _tag: "Reply"
  readonly data: SessionEvent.SessionEventInputOf<"assistant/message">["data"]
  /** Built here from typed parts and checked by hand, so it skips the schema pass (ADR 0023). */
  readonly trusted: boolean
  /** The calls to run: none from a truncated response (R52). */
  readonly calls: ReadonlyArray<Content.ToolCallBlock>
  readonly maxTokens: boolean
}

/**
 * Assemble: what the response came to — a failed request (the request failed, or the response reported an error,
 * finished with one or was stopped by a content filter; R75) or the assistant message to commit. Records the
 * request's reported input tokens, the context estimate's base (R146), and charges a reply to the turn's budgets.
 */
const assemble = (
  env: Env,
  run: StepRun,
  prepared: Prepared,
  response: Either.Either<Assembly.Assembled, AiError.AiError>
): Effect.Effect<Reply | RequestFailed> => {
  if (response._tag === "Left") {
    const error = response.left
    return Effect.map(
      Clock.currentTimeMillis,
      (now): RequestFailed => ({ _tag: "RequestFailed", error, failure: LlmFailure.failureOf(error, now) })
    )
  }
  const assembled = response.right
  const reported = reportedFailure(assembled)
  const answer = reported !== undefined ? requestFailure(reported) : replyOf(run, prepared, assembled)
  const inputTokens = assembled.usage?.inputTokens
  // A reported 0 is taken as not reported: a request always carries some input.
  return inputTokens !== undefined && inputTokens > 0
    ? Effect.as(update(env, (s) => ({ ...s, usage: { inputTokens, messages: prepared.messages } })), answer)
    : Effect.succeed(answer)
}

/** The reply a response without a failure came to, charged to the turn's budgets (R157). */
const replyOf = (run: StepRun, prepared: Prepared, assembled: Assembly.Assembled): Reply => {
  const maxTokens = assembled.finishReason === "length"
  // Truncated tool calls are never executed or logged as calls (R52).
  const content: ReadonlyArray<Content.AssistantBlock> = maxTokens
    ? assembled.content.filter((block) => block.type !== "tool-call")
    : assembled.content
  const data = messageData(run, prepared.config, assembled, content)
  Budgets.charge(run.gauge, assembled.usage, prepared.config.model)
  return {
    _tag: "Reply",
    data,
    trusted: Assembly.isValidMessage(data),
    calls: content.filter((block): block is Content.ToolCallBlock => block.type === "tool-call"),
    maxTokens
  }
}

/** A failed request for a failure the response reported about itself. */
const requestFailure = (failure: LlmFailureT.LlmFailure): RequestFailed => ({
  _tag: "RequestFailed",
  error: new AiError.UnknownError({ module: "Agent", method: "step", description: failure.message, cause: failure }),
  failure
})

/** The failure a response reported about itself, if any (R75). Pure. */
const reportedFailure = (assembled: Assembly.Assembled): LlmFailureT.LlmFailure | undefined => {
  if (assembled.hasError) {
    const carried = Schema.decodeUnknownOption(LlmFailure.LlmFailure)(assembled.error)
    return Option.getOrElse(carried, () => ({
      code: "UNKNOWN" as const,
      message: `the model stream reported an error: ${JSON.stringify(Assembly.jsonOf({ error: assembled.error }))}`
    }))
  }
  if (assembled.finishReason === "error") return { code: "SERVER", message: "the model finished with an error" }
  if (assembled.finishReason === "content-filter") {
    return { code: "CONTENT_FILTER", message: "the model's output was stopped by a content filter" }
  }
  return undefined
}

/** The `assistant/message` data of a reply with `content`: its provenance, finish reason and usage. Pure. */
const messageData = (
  run: StepRun,
  config: RequestConfig,
  assembled: Assembly.Assembled,
  content: ReadonlyArray<Content.AssistantBlock>
): SessionEvent.SessionEventInputOf<"assistant/message">["data"] => {
  const data: {
    -readonly [K in keyof SessionEvent.SessionEventInputOf<"assistant/message">["data"]]:
      SessionEvent.SessionEventInputOf<"assistant/message">["data"][K]
  } = {
    turn: run.turn,
    step: run.step,
    content,
    provenance: {
      model: config.model,
      ...(config.provider === undefined ? {} : { provider: config.provider }),
      ...(assembled.reportedModel === undefined ? {} : { reportedModel: assembled.reportedModel })
    }
  }
  if (assembled.finishReason !== undefined) data.finishReason = assembled.finishReason
  if (assembled.usage !== undefined) data.usage = assembled.usage
  return data
}

/**
 * Commit: a failed request appends the finishing parts held back and goes back to the turn (R75). A reply without
 * calls commits in one critical section (`endReplyStepLocked`); one with calls goes into the first call's section,
 * right before its `tool/call` (ADR 0033), and its step closes once the calls are done (`commitCalls`).
 */
const commit = (
  env: Env,
  run: StepRun,
  incoming: Incoming,
  answer: Reply | RequestFailed
): Effect.Effect<StepOutcome, TurnFailure> => {
  if (answer._tag === "RequestFailed") {
    return incoming.finishing === undefined
      ? Effect.succeed(answer)
      : Effect.as(
        locked(env, (tx) => appendFinishing(env, tx, run, incoming)).pipe(Effect.mapError(logFailure(run.step))),
        answer
      )
  }
  const reply = answer
  // The message cites every chunk: their seqs are known once the finishing parts are appended.
  const appendMessage: AppendMessage = (tx) =>
    Effect.zipRight(
      appendFinishing(env, tx, run, incoming),
      Effect.suspend(() =>
        append(
          env,
          tx,
          { type: "assistant/message", data: reply.data, sourceEventSeqs: incoming.chunkSeqs },
          reply.trusted
        )
      )
    )
  // One critical section (ADR 0028): nothing can be staged while it holds the lock, so D3 finds nothing D2 left:
  // the log is the one separate sections give with no send between.
  return reply.calls.length === 0
    ? locked(env, (tx) => endReplyStepLocked(env, tx, run, appendMessage, reply.maxTokens)).pipe(
      Effect.mapError(logFailure(run.step))
    )
    : commitCalls(env, run, reply, appendMessage)
}

/** Commit of a reply with calls: the calls (the first one's section appends the message), then the step's close. */
const commitCalls = Effect.fnUntraced(function*(env: Env, run: StepRun, reply: Reply, appendMessage: AppendMessage) {
  const { concluded } = yield* runToolCalls(env, {
    turn: run.turn,
    step: run.step,
    calls: reply.calls,
    runtime: run.tools,
    opening: appendMessage
  }).pipe(Effect.mapError(logFailure(run.step)))
  const now = Budgets.timed(run.gauge) ? yield* Clock.currentTimeMillis : 0
  return yield* locked(env, (tx) => endToolStepLocked(env, tx, run, concluded, now))
})
