/**
 * Runs the tool calls of one step (R64–R73, with interruption): a rolling pool of parallel calls with a cap,
 * exclusive calls as barriers, preparation (argument decoding, approval) in model order, results committed strictly
 * in model order as soon as the finished prefix allows. Handler fibers live outside the turn fiber so that a cancel
 * can interrupt `interrupt` calls and let `finish` calls complete; the close procedure answers whatever is owed.
 */
import type { Content, Ids, Message as MessageT, SessionEvent } from "@harness/domain"
import { ToolArguments } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Cause, Effect, Either, Exit, Fiber, FiberMap, Option, ParseResult, Schema } from "effect"
import * as AgentTool from "../AgentTool.js"
import type { ApprovalDecision } from "../Hooks.js"
import type { FinishedCall, ToolRuntime } from "./activity.js"
import * as Approvals from "./approvals.js"
import type { Env } from "./env.js"
import { append, provide, provideFiber } from "./live.js"
import * as Message from "./message.js"
import { stageContexts } from "./outbox.js"
import * as Spans from "./spans.js"
import type { ApprovalAnswered } from "./state.js"
import { barrier, locked } from "./state.js"
import { describeCause } from "./turnFailure.js"

type ToolResultData = SessionEvent.SessionEventInputOf<"tool/result">["data"]

// Tool schemas are `@effect/ai` schemas whose context is typed `any`; tools whose schemas need services are not
// supported (decoding runs without them), so the schemas are viewed as context-free here.
const contextFree = (schema: Schema.Schema.All): Schema.Schema<unknown, unknown> =>
  schema as Schema.Schema<unknown, unknown>

/** Builds an error result the model can read. */
const errorResult = (
  call: { readonly turn: number; readonly step: number; readonly callId: Ids.ToolCallId; readonly name: string },
  code: SessionEvent.ToolErrorCode | (string & {}),
  message: string,
  name = "ToolError"
): ToolResultData => ({
  turn: call.turn,
  step: call.step,
  callId: call.callId,
  name: call.name,
  content: [{ type: "text", text: `Error: ${message}` }],
  isError: true,
  error: { name, code }
})

/** The text of `ABORTED` results. */
export const abortedMessage = "tool call aborted"
/** The text of `ABORTED_BEFORE_DISPATCH` results. */
export const abortedBeforeDispatchMessage = "tool call aborted before dispatch"

/**
 * What a call comes to before it starts, decided from its tool and arguments alone (pure, once per call): a result
 * it gets without running (unknown tool, arguments that are not JSON or do not decode), or the tool to run with
 * its decoded arguments; and whether it may share the pool.
 */
type Decoded =
  | { readonly _tag: "final"; readonly result: FinishedCall; readonly parallel: boolean }
  | {
    readonly _tag: "run"
    readonly tool: AgentTool.AgentTool<unknown>
    readonly params: unknown
    readonly parallel: boolean
  }

const final = (data: ToolResultData, parallel: boolean): Decoded => ({
  _tag: "final",
  result: plainResult(data),
  parallel
})

const isParallel = (tool: AgentTool.AgentTool<unknown>, params: unknown): boolean => {
  if (typeof tool.parallel === "boolean") return tool.parallel
  try {
    return tool.parallel(params) === true
  } catch {
    return false // a throwing predicate means exclusive (R65)
  }
}

/** A call of a step. */
export interface StepCall {
  readonly turn: number
  readonly step: number
  readonly block: Content.ToolCallBlock
}

/** A call as its result names it. */
export const resultBase = ({ block, step, turn }: StepCall) => ({ turn, step, callId: block.id, name: block.name })

/**
 * Decodes a call (R64, R69). A call that cannot run takes one slot while it is answered, unless its tool declares
 * itself exclusive.
 */
export const decodeCall = (env: Env, call: StepCall): Decoded => {
  const { block } = call
  const base = resultBase(call)
  const tool = env.tools.get(block.name)
  if (tool === undefined) {
    const known = [...env.tools.keys()].join(", ")
    return final(
      errorResult(
        base,
        "UNKNOWN_TOOL",
        `unknown tool "${block.name}". ${known === "" ? "No tools are available." : `Available tools: ${known}.`}`
      ),
      true
    )
  }
  const declared = typeof tool.parallel === "boolean" ? tool.parallel : true
  const parsed = ToolArguments.parse(block.arguments)
  if (Either.isLeft(parsed)) {
    return final(
      errorResult(
        base,
        "INVALID_ARGUMENTS",
        `the arguments of "${block.name}" are not valid JSON (${parsed.left}); the tool was not run. ` +
          `Send the arguments as one JSON object.`
      ),
      declared
    )
  }
  const decoded = Schema.decodeUnknownEither(contextFree(tool.tool.parametersSchema), {
    errors: "all",
    onExcessProperty: "error"
  })(parsed.right)
  if (decoded._tag === "Left") {
    return final(
      errorResult(
        base,
        "INVALID_ARGUMENTS",
        `invalid arguments for "${block.name}": ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`
      ),
      declared
    )
  }
  return { _tag: "run", tool, params: decoded.right, parallel: isParallel(tool, decoded.right) }
}

const denyWithoutHook = (name: string): ApprovalDecision => ({
  kind: "deny",
  reason: `tool "${name}" requires approval and this agent has no toolApproval hook, so the call was not run. ` +
    `To allow such calls, give the agent a hooks.toolApproval that answers { kind: "allow" }.`
})

/**
 * Asks for approval of a call whose tool requires it (R67): the `toolApproval` hook decides, and a missing or
 * failing hook denies. A denial is the call's result.
 */
const decideApproval = (
  env: Env,
  call: StepCall,
  decoded: Extract<Decoded, { readonly _tag: "run" }>
): Effect.Effect<Decoded, SessionLog.SessionLogError> => {
  const { block, step, turn } = call
  const hook = env.options.hooks?.toolApproval
  const decision = hook === undefined
    ? Effect.succeed(denyWithoutHook(block.name))
    : provide(
      env,
      hook({
        agent: env.service,
        turn,
        step,
        callId: block.id,
        name: block.name,
        arguments: block.arguments,
        params: decoded.params
      }, Effect.succeed(denyWithoutHook(block.name)))
    ).pipe(
      Effect.catchAllCause((cause) =>
        Effect.succeed<ApprovalDecision>({ kind: "deny", reason: `the approval hook failed: ${describeCause(cause)}` })
      )
    )
  const denied = (reason: string) =>
    final(errorResult(resultBase(call), "DENIED", `the call was denied: ${reason}`), decoded.parallel)
  return Effect.flatMap(
    decision,
    (decided): Effect.Effect<Decoded, SessionLog.SessionLogError> =>
      decided.kind === "deny"
        ? Effect.succeed(denied(decided.reason))
        : decided.kind === "allow"
        ? Effect.succeed(decoded)
        // A person decides: a durable pending approval (ADR 0054).
        : Effect.map(
          Approvals.ask(env, { turn, step, callId: block.id, name: block.name, arguments: block.arguments }),
          (answered) => answered.decision === "allow" ? decoded : denied(answerReason(answered))
        )
  )
}

/** The words of a denial the model reads. */
export const answerReason = (answered: ApprovalAnswered): string =>
  answered.by === "timeout"
    ? "nobody answered its approval in time"
    : answered.reason === undefined || answered.reason === ""
    ? "a person denied it"
    : `a person denied it: ${answered.reason}`

const render = (value: unknown): string =>
  typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value) ?? String(value)

/** A result that concludes nothing and attaches no context: every error result. */
const plainResult = (data: ToolResultData): FinishedCall => ({ data, concludes: false, contexts: [] })

/** The answer to a call whose result has more characters than the agent lets a tool hand the model. */
const tooLarge = (base: Parameters<typeof errorResult>[0], length: number, maxChars: number): ToolResultData =>
  errorResult(
    base,
    "RESULT_TOO_LARGE",
    `"${base.name}" returned ${length} characters, more than the ${maxChars} a tool result may hold ` +
      "(maxToolResultChars): ask for less, e.g. a narrower range or a filter",
    "ResultTooLarge"
  )

/**
 * Turns a handler's exit into the result the model reads (R69). Synchronous but for the contexts a successful
 * outcome attaches, which are decoded as any user message is.
 */
export const resultOf = (
  base: { readonly turn: number; readonly step: number; readonly callId: Ids.ToolCallId; readonly name: string },
  tool: AgentTool.AgentTool<unknown>,
  exit: Exit.Exit<unknown, unknown>,
  maxChars: number
): Effect.Effect<FinishedCall> => {
  if (Exit.isSuccess(exit)) {
    const outcome = AgentTool.isOutcome(exit.value) ? exit.value : undefined
    const value = outcome === undefined ? exit.value : outcome.value
    const encoded = Schema.encodeUnknownEither(contextFree(tool.tool.successSchema))(value)
    if (encoded._tag === "Left") {
      return Effect.succeed(plainResult(errorResult(
        base,
        "INVALID_OUTPUT",
        `"${base.name}" produced an invalid result: ${ParseResult.TreeFormatter.formatErrorSync(encoded.left)}`
      )))
    }
    const text = render(encoded.right)
    if (text.length > maxChars) return Effect.succeed(plainResult(tooLarge(base, text.length, maxChars)))
    const succeeded = (contexts: ReadonlyArray<MessageT.UserMessageData>): FinishedCall => ({
      data: {
        turn: base.turn,
        step: base.step,
        callId: base.callId,
        name: base.name,
        content: text === "" ? [] : [{ type: "text", text }],
        isError: false
      },
      concludes: outcome?.concludesTurn === true,
      contexts
    })
    const attached = outcome?.contexts ?? []
    if (attached.length === 0) return Effect.succeed(succeeded([]))
    // The first invalid context makes the whole result an error.
    return Effect.match(Effect.forEach(attached, Message.decodeUserMessageData), {
      onFailure: (error) =>
        plainResult(
          errorResult(base, "INVALID_OUTPUT", `"${base.name}" attached an invalid context: ${error.message}`)
        ),
      onSuccess: succeeded
    })
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    const encoded = Schema.encodeUnknownEither(contextFree(tool.tool.failureSchema))(error)
    const message =
      typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" &&
        error.message !== ""
        ? error.message
        : render(encoded._tag === "Right" ? encoded.right : String(error))
    const name = typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : "ToolError"
    // A failure may carry its own routing code (the domain allows tools codes of their own); `TOOL_FAILED` is
    // the default.
    const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" &&
        error.code !== ""
      ? error.code
      : "TOOL_FAILED"
    return Effect.succeed(plainResult(
      message.length > maxChars ? tooLarge(base, message.length, maxChars) : errorResult(base, code, message, name)
    ))
  }
  if (Cause.isInterruptedOnly(exit.cause)) {
    return Effect.succeed(plainResult(errorResult(base, "ABORTED", abortedMessage, "AbortError")))
  }
  return Effect.succeed(plainResult(
    errorResult(base, "TOOL_DEFECT", `"${base.name}" crashed: ${describeCause(exit.cause)}`, "ToolDefect")
  ))
}

/**
 * Appends the results of the finished calls that are next in model order, through the section's transaction
 * `tx`; settles the batch after the last one.
 */
const commitReadyLocked = (
  env: Env,
  tx: SessionLog.Transaction,
  calls: ReadonlyArray<Content.ToolCallBlock>,
  runtime: ToolRuntime,
  progress: BatchProgress
): Effect.Effect<void, SessionLog.SessionLogError> =>
  Effect.suspend(() => {
    const next = progress.next
    if (next === calls.length) {
      settleBatch(progress, "committed")
      return Effect.void
    }
    const callId = calls[next]!.id
    const result = runtime.finished.get(callId)
    if (result === undefined) return Effect.void
    // Built by `resultOf` / `errorResult` from the call and strings they render themselves: trusted (ADR 0023).
    return Effect.flatMap(
      append(
        env,
        tx,
        { type: "tool/result", data: result.data, sourceEventSeqs: [progress.callSeqs.get(callId)!] },
        true
      ),
      () => {
        runtime.finished.delete(callId)
        progress.next = next + 1
        progress.concluded = progress.concluded || (result.concludes && !result.data.isError)
        return Effect.zipRight(
          stageContexts(env, result.contexts),
          commitReadyLocked(env, tx, calls, runtime, progress)
        )
      }
    )
  })

/**
 * A batch's own bookkeeping, read and written synchronously: the seq of each call's `tool/call`, the index of the
 * next call to commit, whether a result concluded; `settled` opens at the batch's `outcome`: every result committed,
 * or the first commit that failed.
 */
interface BatchProgress {
  readonly callSeqs: Map<string, number>
  next: number
  concluded: boolean
  readonly settled: Effect.Latch
  outcome: "pending" | "committed" | SessionLog.SessionLogError
}

/**
 * Settles the batch once: the first outcome wins. (A latch, not a `Deferred`: making a `Deferred` costs V8 a new
 * chain of maps each time, ADR 0036.)
 */
const settleBatch = (progress: BatchProgress, outcome: "committed" | SessionLog.SessionLogError): void => {
  if (progress.outcome !== "pending") return
  progress.outcome = outcome
  progress.settled.unsafeOpen()
}

/** What one step's tool calls run with. */
export interface ToolCallsInput {
  readonly turn: number
  readonly step: number
  readonly calls: ReadonlyArray<Content.ToolCallBlock>
  readonly runtime: ToolRuntime
  /**
   * Appended in the first call's critical section, through its transaction, before its `tool/call`: the step's
   * message (ADR 0033).
   */
  readonly opening: (tx: SessionLog.Transaction) => Effect.Effect<unknown, SessionLog.SessionLogError>
}

/**
 * Runs the calls of one step and commits their results in model order; returns whether a result concluded the
 * turn. Contract: every call gets its `tool/call` before its preparation and exactly one `tool/result`; the
 * results' contexts are staged on the outbox (the D2 drain logs them after the whole batch, R68).
 *
 * The activity fiber starts the calls one after another (preparation in model order, a rolling pool of parallel
 * calls, exclusive calls as barriers) and then waits for the last commit. Whoever finishes a call — a handler
 * fiber, or the activity for a call prepared into an error — commits the contiguous prefix of finished calls, under
 * the lock. No fiber of the batch is a child of the activity, so interrupting the activity interrupts only its own
 * waits; the close procedure handles the handler fibers by their cancel policy.
 */
export const runToolCalls = Effect.fnUntraced(function*(
  env: Env,
  input: ToolCallsInput
) {
  const { calls, runtime, step, turn } = input
  // The pool's slots; a batch of one call has nothing to share them with and takes none (ADR 0033).
  const pool = calls.length === 1 ? undefined : yield* Effect.makeSemaphore(env.maxParallel)
  const releasing = <A, E, R>(permits: number, effect: Effect.Effect<A, E, R>, on: "error" | "interrupt" | "exit") =>
    pool === undefined
      ? effect
      : on === "error"
      ? Effect.onError(effect, () => pool.release(permits))
      : on === "interrupt"
      ? Effect.onInterrupt(effect, () => pool.release(permits))
      : Effect.ensuring(effect, pool.release(permits))
  // Read and written by the activity as it starts a call (before the call can finish) and by `commitReady` under
  // the lock.
  const progress: BatchProgress = {
    callSeqs: new Map(),
    next: 0,
    concluded: false,
    settled: yield* Effect.makeLatch(false),
    outcome: "pending"
  }

  const commitReady = locked(
    env,
    (tx) =>
      commitReadyLocked(env, tx, calls, runtime, progress).pipe(
        Effect.catchAll((error) => Effect.sync(() => settleBatch(progress, error)))
      )
  )
  const finish = (callId: string, result: FinishedCall) =>
    Effect.suspend(() => {
      runtime.finished.set(callId, result)
      return commitReady
    })

  // The opening is appended once, with the first call.
  let opening: ((tx: SessionLog.Transaction) => Effect.Effect<unknown, SessionLog.SessionLogError>) | undefined =
    input.opening
  for (const block of calls) {
    // Starting a call (ADR 0007, R67): the pool has room (an exclusive call waits for the pool to
    // drain) → `tool/call` → preparation (approval) → dispatch. So a call waiting for the pool is not in the log yet
    // (a cancel answers it with a synthetic `ABORTED_BEFORE_DISPATCH` pair) and nobody is asked to approve it while
    // the calls ahead of it run. The call is decoded once, first: its parallelism is read from its decoded
    // arguments (pure), and a call that cannot run (unknown tool, bad arguments) is answered at once.
    const decoded = decodeCall(env, { turn, step, block })
    const { parallel } = decoded
    const permits = parallel ? 1 : env.maxParallel
    if (pool !== undefined) yield* pool.take(permits)
    // Built from a block of the logged (checked) assistant message: trusted (ADR 0023).
    const call = (tx: SessionLog.Transaction) =>
      append(env, tx, {
        type: "tool/call",
        data: {
          turn,
          step,
          callId: block.id,
          name: block.name,
          arguments: block.arguments,
          // Durable with the call: crash repair, which runs before any agent has tools, reads it (R172).
          ...(decoded._tag === "run" && decoded.tool.replay === "safe" ? { replay: "safe" as const } : {})
        }
      }, true)
    const opens = opening
    const called = yield* releasing(
      permits,
      locked(env, (tx) => opens === undefined ? call(tx) : Effect.zipRight(opens(tx), call(tx))),
      "error"
    )
    opening = undefined
    progress.callSeqs.set(block.id, called.seq)
    const prepared = decoded._tag === "run" && decoded.tool.approval === "required"
      ? yield* releasing(permits, decideApproval(env, { turn, step, block }, decoded), "error")
      : decoded
    if (prepared._tag === "final") {
      if (pool !== undefined) yield* pool.release(permits)
      yield* finish(block.id, prepared.result).pipe(
        Effect.zipLeft(Spans.annotateToolResult(env, prepared.result)),
        Spans.toolCall(env, { turn, step, block })
      )
      continue
    }
    // The dispatch barrier (ADR 0008): on a durable log the `tool/call` is on disk before its side effect starts.
    yield* releasing(permits, barrier(env), "error")
    const base = resultBase({ turn, step, block })
    const handler = releasing(
      permits,
      provideFiber(env, prepared.tool.handler(prepared.params, { callId: block.id, agent: env.service })).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.flatMap(resultOf(base, prepared.tool, exit, env.maxToolResult), (result) => {
            // Uninterruptible from here: a finished call's result is recorded and committed, never lost half-way.
            const recorded = Effect.uninterruptible(finish(block.id, result))
            // A traced call's span is annotated with the outcome and ends with the handler's own exit (its failure
            // or defect); an interrupted handler ends it interrupted.
            return env.traced
              ? Effect.zipRight(Effect.zipRight(Spans.annotateToolResult(env, result), recorded), exit)
              : recorded
          })
        ),
        Spans.toolCall(env, { turn, step, block }),
        Effect.exit,
        Effect.asVoid
      ),
      "exit"
    )
    // A call has a tool here, so the agent has tools and its handler maps.
    const handlers = prepared.tool.onCancel === "finish" ? env.handlers!.finish : env.handlers!.interrupt
    // Forked into the handler map (interruptible; it leaves the map when it exits), in one uninterruptible step
    // with its mark as dispatched: a close finds exactly the calls still running, by id. An exclusive call is a
    // barrier: nothing else starts until it is done (R66).
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        runtime.dispatched.add(block.id)
        const forked = FiberMap.run(handlers, block.id, handler)
        return parallel
          ? forked
          : Effect.flatMap(forked, (fiber): Effect.Effect<unknown> => restore(Fiber.await(fiber)))
      })
    )
  }
  yield* progress.settled.await
  const outcome = progress.outcome
  if (typeof outcome !== "string") return yield* Effect.fail(outcome)
  return { concluded: progress.concluded }
})
