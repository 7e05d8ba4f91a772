/**
 * The driver: a fiber that exists only while there is work. It claims the head of the queued FIFO (opening the
 * acceptance window before admission, R35), runs each activity in its own fiber and waits for it with
 * `Fiber.await`, then settles it: an activity that ended on its own wrote its `turn/end`; one that was interrupted
 * (cancel, disposal) or failed is closed here, well-formed (see `close.ts`).
 */
import type { AgentEvent, Turn as TurnT } from "@harness/domain"
import { Turn } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Cause, Effect, Exit, Fiber, FiberMap, Option, Ref } from "effect"
import type { Activity, ActivityResult, Job, Progress } from "./activity.js"
import type { CloseCalls } from "./close.js"
import { closeLocked, repairLocked } from "./close.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import * as Lifecycle from "./lifecycle.js"
import { publish, publishAll, reportLogError } from "./live.js"
import { drain, hasSteering } from "./outbox.js"
import * as Spans from "./spans.js"
import * as Stale from "./stale.js"
import { barrier, locked, makeToolRuntime, read, recordInbox, transition } from "./state.js"
import { runActivity } from "./turn.js"
import { BudgetStop, describeCause, TurnFailure } from "./turnFailure.js"

const statusRunning: AgentEvent.AgentEvent = Object.freeze({ type: "agent/status", status: "running" })

/**
 * Makes sure a driver runs. Must run holding the lock.
 */
export const ensureDriver = (env: Env): Effect.Effect<void> =>
  Effect.flatMap(read(env), ({ lifecycle }) => lifecycle._tag === "Idle" ? startDriver(env) : Effect.void)

/** Starts the driver fiber. Must run holding the lock, with the lifecycle `Idle`. */
const startDriver = (env: Env): Effect.Effect<void> =>
  Effect.flatMap(Effect.makeLatch(false), (idle) =>
    Effect.flatMap(
      Effect.forkIn(Effect.interruptible(driverLoop(env)), env.fibers),
      (driver) => transition(env, "driverStarted", (l) => Lifecycle.driverStarted(l, driver, idle))
    ))

/**
 * Installs a new activity: opens the window, reports `running` if idle, forks the activity fiber. Must run holding
 * the lock. For a claimed prompt, `agent/inbox/dequeue` follows `agent/status` (R35, R89).
 */
export const startActivity = Effect.fnUntraced(function*(
  env: Env,
  job: Job
) {
  const { lifecycle } = yield* read(env)
  if (lifecycle._tag === "Idle") yield* startDriver(env)
  // Published before the activity is forked, so an observer waiting for them is scheduled ahead of the activity
  // fiber (ADR 0028): `running` if idle, then, for a claimed prompt, its `dequeue` (R35, R89). Nothing of the
  // activity runs before this section ends anyway.
  const running = Lifecycle.status(lifecycle) === "idle"
  if (job._tag === "prompt") {
    const { message } = job.item
    yield* publishAll(env, (): Array<AgentEvent.AgentEvent> => {
      const dequeue: AgentEvent.AgentEvent = { type: "agent/inbox/dequeue", message }
      return running ? [statusRunning, dequeue] : [dequeue]
    })
  } else if (running) {
    yield* publish(env, statusRunning)
  }
  // The new activity's opening drains the outbox: steering is no longer stranded.
  yield* Inbox.modify(env.inbox, (s) => s.stranded ? { ...s, stranded: false } : s)
  // The activity's own state, made as this section runs (no effect of its own is needed). The activity fiber waits
  // on `started` until its activity, window open, is in the lifecycle, so its hooks always see the window open (R24,
  // R35) and a cancel always finds it — even if this fiber is descheduled right after the fork.
  const progress = Ref.unsafeMake<Progress>({ turn: undefined, step: 0, ended: undefined, maxTokens: false })
  const tools = makeToolRuntime()
  const started = Effect.unsafeMakeLatch(false)
  const span = env.traced ? yield* Spans.startTurn(env, job) : undefined
  const fiber = yield* Effect.forkIn(
    Spans.withActivity(
      span,
      Effect.interruptible(Effect.zipRight(started.await, runActivity(env, job, progress, tools)))
    ),
    env.fibers
  )
  const activity: Activity = {
    job,
    fiber,
    progress,
    tools,
    window: true,
    cause: undefined,
    logContextOnClose: false,
    span
  }
  yield* transition(env, "activityStarted", (l) => Lifecycle.activityStarted(l, activity))
  started.unsafeOpen()
  return activity
})

/** The next activity to await, claiming a waking item if there is no activity; `undefined` ends the driver. */
const nextActivity = Effect.fnUntraced(function*(env: Env) {
  const { lifecycle } = yield* read(env)
  const current = Lifecycle.activity(lifecycle)
  if (current !== undefined) return current
  if (!Lifecycle.isDisposed(lifecycle)) {
    let claimed = yield* Inbox.claim(env.inbox)
    // An item whose `expiresAt` passed is never taken, even when the driver gets the lock before its expiry fiber
    // does (ADR 0059): it is discarded as expired and the next one claimed. A plain item pays one test.
    while (
      Option.isSome(claimed) && claimed.value.expiresAt !== undefined && (yield* Stale.hasExpired(claimed.value))
    ) {
      yield* Stale.expiredLocked(env, claimed.value.message)
      claimed = yield* Inbox.claim(env.inbox)
    }
    const inbox = yield* Inbox.get(env.inbox)
    if (Option.isSome(claimed)) {
      return yield* startActivity(env, { _tag: "prompt", item: claimed.value, retained: Inbox.stagedKeys(inbox) })
    }
    // Steering stranded by a cancelled or failed turn never waits for an unrelated send: it runs as its own turn.
    const steering = inbox.stranded ? Inbox.firstSteering(inbox) : Option.none()
    if (Option.isSome(steering)) return yield* startActivity(env, { _tag: "steering", source: steering.value.source })
  }
  if (Lifecycle.status(lifecycle) === "running") yield* publish(env, { type: "agent/status", status: "idle" })
  yield* transition(env, "driverStopped", Lifecycle.driverStopped)
  const driving = Lifecycle.driving(lifecycle)
  if (driving !== undefined) driving.idle.unsafeOpen()
  return undefined
})

const driverLoop = Effect.fnUntraced(function*(env: Env) {
  let activity = yield* locked(env, () => nextActivity(env))
  while (activity !== undefined) {
    const exit = yield* Fiber.await(activity.fiber)
    // A turn that ended settles and claims what comes next in one critical section; otherwise it is claimed here.
    const next = yield* settle(env, activity, exit)
    activity = Option.isSome(next) ? next.value : yield* locked(env, () => nextActivity(env))
  }
})

/**
 * Logs staged context outside any turn, in order (like an idle inject), through the section's transaction `tx`. A
 * failing append keeps the rest staged and is logged as a warning.
 */
export const flushContext = (env: Env, tx: SessionLog.Transaction): Effect.Effect<void> =>
  Effect.zipRight(repairLocked(env, tx), drain(env, tx, { turn: undefined, only: "context" })).pipe(
    Effect.catchAll((error) => Effect.logWarning("staged context could not be logged; it stays staged", error)),
    Effect.asVoid
  )

const errorMessage = (
  exit: Exit.Exit<ActivityResult, unknown>
): { readonly message: string; readonly code?: string } => {
  if (Exit.isSuccess(exit)) return { message: "the turn ended without closing" }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof TurnFailure) {
    return failure.value.code === undefined
      ? { message: failure.value.message }
      : { message: failure.value.message, code: failure.value.code }
  }
  return { message: `the turn failed unexpectedly: ${describeCause(exit.cause)}`, code: "DEFECT" }
}

/**
 * Settles an activity whose fiber has exited and ends its span with the outcome; returns what comes next when it
 * settled a turn (see `settleActivity`). The driver is not interrupted by a cancel, so everything the log owes is
 * written here.
 */
const settle = (
  env: Env,
  activity: Activity,
  exit: Exit.Exit<ActivityResult, unknown>
): Effect.Effect<Option.Option<Activity | undefined>> =>
  Spans.withActivity(activity.span, settleActivity(env, activity, exit))

/** Ends the activity's span with how its turn ended (`undefined`: no turn opened). Untraced, callers skip it. */
const endSpan = (
  activity: Activity,
  exit: Exit.Exit<ActivityResult, unknown>,
  reason: TurnT.TurnEndReason | undefined
) => Effect.flatMap(Ref.get(activity.progress), (progress) => Spans.endTurn(activity.span, exit, reason, progress.step))

/**
 * Settles an activity and ends its span; when it settled a turn, returns what comes next (the next activity, or
 * `undefined` when the driver stopped), decided in the same critical section.
 */
const settleActivity = Effect.fnUntraced(function*(
  env: Env,
  activity: Activity,
  exit: Exit.Exit<ActivityResult, unknown>
) {
  const progress = yield* Ref.get(activity.progress)
  if (progress.turn === undefined) {
    // No turn opened: the admission blocked, failed or was cancelled (R42–R43, R80), or `turn/start` itself
    // failed (R60).
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    if (Option.isSome(failure)) {
      const { code, message } = errorMessage(exit)
      const turn = (yield* env.log.state).lastTurn + 1
      yield* publish(env, {
        type: "agent/error",
        turn,
        step: 0,
        error: code === undefined ? { message } : { message, code }
      })
    }
    yield* locked(env, (tx) => settleUnopened(env, tx, activity))
    const unsettled = activity.job._tag === "retry" ? activity.job.unsettled : undefined
    if (unsettled !== undefined) {
      yield* publish(env, {
        type: "agent/settled",
        turn: unsettled.turn,
        reason: Turn.settleReasonOf(unsettled.reason)
      })
    }
    if (activity.span !== undefined) yield* endSpan(activity, exit, undefined)
    return Option.none()
  }
  const turn = progress.turn
  const reason: TurnT.TurnEndReason = progress.ended ?? (yield* close(env, activity, exit, turn))
  // The `turn/end` barrier (ADR 0008): a turn settles once its close is durable (a memory log has no barrier).
  if (env.log.durable) {
    yield* barrier(env).pipe(Effect.catchAll((error) => reportLogError(env, turn, progress.step, error)))
  }
  const next = yield* locked(env, (tx) => settleTurn(env, tx, activity, exit, turn, reason))
  return Option.some(next)
})

/**
 * The settlement of an activity that opened no turn, in one transaction `tx`: settles a claimed prompt's inbox record and
 * leaves stranded steering for the next turn.
 */
const settleUnopened = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  activity: Activity
) {
  // Steering retained by a blocked or failed admission waits for the next turn (R43); after a cancelled
  // admission (with `keepInbox`, or it would have been discarded) it is waking work.
  const cause = Lifecycle.cause((yield* read(env)).lifecycle)
  const cancelled = cause !== undefined
  // A claimed prompt that opened no turn (blocked, failed or cancelled admission) left the inbox without
  // reaching the log: its inbox record is settled here (a claim that opens a turn is settled by the
  // turn's `user/message`, ADR 0017). Disposal settles nothing: the prompt comes back on resume.
  if (activity.job._tag === "prompt" && cause !== "disposed") {
    yield* recordInbox(env, [{
      type: "inbox/settled",
      id: activity.job.item.message.id,
      fate: "claimed",
      cause: cause ?? "refused"
    }])
  }
  yield* transition(env, "activitySettled", Lifecycle.activitySettled)
  yield* Inbox.modify(env.inbox, (s) => ({ ...s, stranded: cancelled }))
  // Context-only staged input is logged at once; steering keeps its context beside it, staged (R43).
  if (!(yield* hasSteering(env))) yield* flushContext(env, tx)
})

/**
 * The settlement of a closed turn, in one transaction `tx`: a retry starts at once; otherwise the turn settles and the
 * next activity is claimed in the same section.
 */
const settleTurn = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  activity: Activity,
  exit: Exit.Exit<ActivityResult, unknown>,
  turn: number,
  reason: TurnT.TurnEndReason
) {
  const { lifecycle } = yield* read(env)
  const current = Lifecycle.activity(lifecycle)
  const retry = current?.cause === undefined && Exit.isSuccess(exit) && exit.value._tag === "Ended" &&
    exit.value.retry
  if (retry && !Lifecycle.isDisposed(lifecycle)) {
    yield* transition(env, "activitySettled", Lifecycle.activitySettled)
    if (activity.span !== undefined) yield* endSpan(activity, exit, reason)
    return yield* startActivity(env, { _tag: "retry", unsettled: { turn, reason } })
  }
  if (current?.cause !== undefined && current.logContextOnClose) yield* flushContext(env, tx)
  // Steering still staged after the turn closed (a `keepInbox` cancel, a failure) runs next by itself.
  yield* transition(env, "activitySettled", Lifecycle.activitySettled)
  yield* Inbox.modify(env.inbox, (s) => ({ ...s, stranded: true }))
  // Only the terminal turn of a retry chain settles (R57); what comes next is claimed after it.
  yield* publish(env, { type: "agent/settled", turn, reason: Turn.settleReasonOf(reason) })
  if (activity.span !== undefined) yield* endSpan(activity, exit, reason)
  return yield* nextActivity(env)
})

/**
 * Closes a turn its activity left open: stops the tool handlers (`interrupt` calls are interrupted, `finish` calls
 * complete), answers every owed call in model order, logs staged context after a default cancel, closes the open
 * step and ends the turn. Returns the reason it wrote.
 */
const close = Effect.fnUntraced(function*(
  env: Env,
  activity: Activity,
  exit: Exit.Exit<ActivityResult, unknown>,
  turn: number
) {
  const cause = Lifecycle.cause((yield* read(env)).lifecycle)
  const progress = yield* Ref.get(activity.progress)
  let reason: TurnT.TurnEndReason
  const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  if (cause !== undefined) {
    reason = cause === "disposed" ? { kind: "disposed" } : { kind: "aborted" }
  } else if (Option.isSome(failure) && failure.value instanceof BudgetStop) {
    // The deadline interrupted a step (R158): closed like a cancel, ended as a budget stop, no `agent/error`.
    reason = failure.value.reason
  } else {
    const error = errorMessage(exit)
    reason = error.code === undefined
      ? { kind: "error", step: progress.step, message: error.message }
      : { kind: "error", step: progress.step, message: error.message, code: error.code }
    // R59: `agent/error` precedes `turn/end` (interruption beats error: none for a cancelled turn).
    yield* publish(env, { type: "agent/error", turn, step: progress.step, error })
  }
  // Exactly the running calls: `interrupt` ones are interrupted (all at once), `finish` ones complete. With none
  // running (a cancel during the model request, the common case) there is nothing to wait for.
  // An agent without tools has no handlers.
  const handlers = env.handlers
  if (handlers !== undefined) {
    const interrupting = Array.from(handlers.interrupt, ([, fiber]) => fiber)
    if (interrupting.length > 0 || (yield* FiberMap.size(handlers.finish)) > 0) {
      yield* Effect.zip(Fiber.interruptAll(interrupting), FiberMap.awaitEmpty(handlers.finish), {
        concurrent: true
      })
    }
  }
  // Every handler has stopped: the tool runtime holds what the calls came to.
  const written = yield* locked(env, (tx) => Effect.either(writeClose(env, tx, reason, activity.tools)))
  // Observers waiting for the closing `turn/end` run before the rest of the settlement (ADR 0028).
  yield* Effect.yieldNow()
  if (written._tag === "Left") {
    yield* Effect.logError("the turn could not be closed in the session log", written.left)
    yield* publish(env, {
      type: "agent/error",
      turn,
      step: progress.step,
      error: { message: `the turn could not be closed: ${written.left.message}`, code: "SESSION_LOG" }
    })
  }
  return reason
})

/**
 * Writes a turn's closing records through the section's transaction `tx`. The window closes first (R57); a later default cancel still
 * makes them log context.
 */
const writeClose = (
  env: Env,
  tx: SessionLog.Transaction,
  reason: TurnT.TurnEndReason,
  calls: CloseCalls
): Effect.Effect<void, SessionLog.SessionLogError> =>
  Effect.flatMap(
    transition(env, "windowClosed", Lifecycle.windowClosed),
    () =>
      Effect.flatMap(read(env), ({ lifecycle }) => {
        const current = Lifecycle.activity(lifecycle)
        return closeLocked(env, tx, reason, calls, {
          context: current?.cause !== undefined && current.logContextOnClose
        })
      })
  )
