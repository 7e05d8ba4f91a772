/**
 * One activity: a claimed prompt's admission (`admission.ts`) and the turn it admits, or a retry turn (R45–R46);
 * the turn's steps (R47–R53, in `step.ts` and `stepSections.ts`, their requests in `request.ts`), continuation (R54)
 * and model-request failures (R74–R75). Everything here runs in the activity fiber, which a cancel interrupts; the
 * driver closes whatever an interrupted or failed activity left open.
 */
import type { AgentEvent, SessionEvent, Turn as TurnT } from "@harness/domain"
import type { History, SessionLog } from "@harness/session"
import { Cause, Clock, Effect, Ref } from "effect"
import type { CompactDecision } from "../Hooks.js"
import type { ActivityResult, Job, Progress, ToolRuntime } from "./activity.js"
import { admit } from "./admission.js"
import * as Budgets from "./budget.js"
import { repairLocked } from "./close.js"
import * as Compaction from "./compaction.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import * as Lifecycle from "./lifecycle.js"
import { appendOwn, provide, publish, publishAll } from "./live.js"
import { drainedLive, drainPlan, hasSteering, userMessageData } from "./outbox.js"
import * as Spans from "./spans.js"
import { honourCancel, locked, read } from "./state.js"
import { runStep } from "./step.js"
import { opensInline, openStep, type StepOutcome, stepOutcome } from "./stepSections.js"
import { appendWarning, endTurnLocked, endUnlessSteeringLocked } from "./turnEnd.js"
import type { TurnFailure } from "./turnFailure.js"
import { BudgetStop, failTurn, logFailure } from "./turnFailure.js"

/** Runs one activity to its end. */
export const runActivity = (
  env: Env,
  job: Job,
  progress: Ref.Ref<Progress>,
  tools: ToolRuntime
): Effect.Effect<ActivityResult, TurnFailure | BudgetStop> =>
  job._tag === "retry"
    ? runTurn(env, progress, tools, { trigger: { kind: "retry" }, retained: none, admitted: [] })
    : job._tag === "compaction"
    ? compactionActivity(env, progress, tools, job.instruction)
    : job._tag === "steering"
    ? runTurn(
      env,
      progress,
      tools,
      { trigger: { kind: "message", source: job.source }, retained: none, admitted: [] },
      {
        steeringOnly: true
      }
    )
    : admit(env, job.item.message).pipe(
      Effect.flatMap((admitted) =>
        admitted === undefined
          ? Effect.succeed(noTurn)
          : runTurn(env, progress, tools, {
            trigger: { kind: "message", source: job.item.message.source },
            retained: job.retained,
            admitted
          })
      )
    )

/**
 * A compaction asked for by `agent.compact` (R149): the `beforeCompact` hook first (a block opens no turn), then a
 * turn with trigger `compaction` whose first step is the compaction step; steering sent meanwhile makes it go on
 * with ordinary steps after the record, like any turn (R151).
 */
const compactionActivity = Effect.fnUntraced(function*(
  env: Env,
  progress: Ref.Ref<Progress>,
  tools: ToolRuntime,
  instruction: string | undefined
) {
  const system = fixedSystem(env)
  const estimate = yield* Compaction.currentEstimate(env, system)
  const decision = yield* Compaction.decide(env, { turn: undefined, reason: "manual", estimate })
  if (decision.kind === "block") return noTurn
  return yield* runTurn(env, progress, tools, { trigger: { kind: "compaction" }, retained: none, admitted: [] }, {
    compaction: { decision, estimate, instruction }
  })
})

/** The system prompt when it is a fixed string (what a compaction's estimate and request carry). */
const fixedSystem = (env: Env): string | undefined =>
  typeof env.options.system === "string" ? env.options.system : undefined

/**
 * Before a step the turn has not opened yet: an automatic compaction when the estimate passes the threshold (R146)
 * and `beforeCompact` does not block it, as step `step`. Returns whether a compaction step ran.
 */
const compactIfDue = Effect.fnUntraced(function*(env: Env, turn: number, step: number) {
  const system = fixedSystem(env)
  const estimate = yield* Compaction.due(env, system)
  if (estimate === undefined) return false
  const decision = yield* Compaction.decide(env, { turn, reason: "automatic", estimate })
  if (decision.kind === "block") return false
  yield* Compaction.runStep(env, turn, step, {
    reason: "automatic",
    estimate,
    decision,
    system,
    instruction: undefined
  })
  return true
})

const none: ReadonlySet<Inbox.OutboxKey> = new Set()

/** How an activity can end (see `ActivityResult`). */
const noTurn: ActivityResult = { _tag: "NoTurn" }
const turnEnded: ActivityResult = { _tag: "Ended", retry: false }
const turnEndedForRetry: ActivityResult = { _tag: "Ended", retry: true }

/**
 * Opens a turn (R45) and runs its steps until it ends (R54). Contract: returns only after its own `turn/end`;
 * fails with a `TurnFailure` (or is interrupted) with the turn still open, for the driver to close.
 */
const runTurn = Effect.fnUntraced(function*(
  env: Env,
  progress: Ref.Ref<Progress>,
  tools: ToolRuntime,
  opening: Opening,
  options: OpenOptions = {}
) {
  // The first step opens in the turn's opening section when nothing runs before its `step/start`: its D1 would
  // find the outbox this section just drained (ADR 0033).
  const manual = options.compaction
  const opensStep = opensInline(env) && manual === undefined
  const started = yield* locked(env, (tx) => openTurnLocked(env, tx, progress, opening, options, opensStep))
  if (started === undefined) return noTurn
  const turn = started.turn
  if (env.traced) yield* Spans.annotate(env, Spans.attr.turn, turn)
  // The turn's budgets (R154–R160): checked after every step, here or in the section that closes a tool step.
  const gauge = yield* Budgets.open(env, turn, opening.trigger)
  let step = 0
  // The history of the next step when the section before it already opened (and counted) it: see `openStep`.
  let opened: History.History | undefined = started.history
  // A compaction step was just run: the next step is the turn's own (one compaction per boundary).
  let compacted = false
  while (true) {
    if (opened === undefined && (yield* budgetBefore(env, progress, gauge, turn, step))) return turnEnded
    step += 1
    const n = step
    // A step is counted as it begins, before anything of it runs (what a failure or a close reports); a step
    // opened by the section before it was counted there.
    if (opened === undefined) yield* Ref.update(progress, (p) => ({ ...p, step: n }))
    if (manual !== undefined && n === 1) {
      yield* Compaction.runStep(env, turn, n, { reason: "manual", system: fixedSystem(env), ...manual })
      // Nothing more to do unless steering arrived meanwhile (R151): then the turn goes on with it.
      if (!(yield* hasSteering(env))) {
        const ended = yield* locked(env, (tx) => endUnlessSteeringLocked(env, tx, progress, turn)).pipe(
          Effect.mapError(logFailure(n))
        )
        if (ended) return turnEnded
      }
      compacted = true
      continue
    }
    if (opened === undefined && !compacted && (yield* compactIfDue(env, turn, n))) {
      compacted = true
      continue
    }
    compacted = false
    const stepRun = runStep(env, progress, tools, turn, n, opened, gauge)
    const run = Budgets.timed(gauge) ? withDeadline(gauge, n, stepRun) : stepRun
    const outcome = yield* (env.traced
      ? run.pipe(
        Effect.tap((o) => Spans.annotate(env, Spans.attr.stepOutcome, stepOutcome(o))),
        Spans.step(env, turn, n)
      )
      : run)
    opened = outcome._tag === "Completed" ? outcome.openedNext : undefined
    if (outcome._tag === "RequestFailed") return yield* requestFailed(env, progress, turn, n, outcome)
    if (outcome.ended) return turnEnded
    if (outcome.maxTokens) yield* Ref.update(progress, (p) => ({ ...p, maxTokens: true }))
    if (outcome.continue) continue
    // Steering staged after D2 (e.g. from a `step/end` observer) makes another step without turn-stopping.
    if (yield* hasSteering(env)) continue
    const stopping = env.options.hooks?.turnStopping
    if (stopping !== undefined) {
      yield* provide(env, stopping({ agent: env.service, turn })).pipe(
        Effect.mapErrorCause((cause) => Cause.fail(failTurn(n, "turnStopping hook failed")(cause)))
      )
      yield* honourCancel(env)
    }
    // D3, then end the turn in the same critical section, so no steering can slip in between (R54).
    const ended = yield* locked(env, (tx) => endUnlessSteeringLocked(env, tx, progress, turn)).pipe(
      Effect.mapError(logFailure(n))
    )
    if (ended) return turnEnded
  }
})

/**
 * The budget check before a step the previous section did not open (R155, R159): at the turn's start (a session
 * budget already spent) and after a step that goes on without a tool step's close (steering). Takes the lock only
 * to write: the warning, or `turn/end` with the budget reached. Returns whether the turn ended.
 */
const budgetBefore = Effect.fnUntraced(function*(
  env: Env,
  progress: Ref.Ref<Progress>,
  gauge: Budgets.Gauge,
  turn: number,
  step: number
) {
  const now = Budgets.timed(gauge) ? yield* Clock.currentTimeMillis : 0
  const stop = Budgets.reached(gauge, step, now)
  if (stop !== undefined) {
    yield* locked(env, (tx) => endTurnLocked(env, tx, progress, turn, stop))
    return true
  }
  const warning = Budgets.warning(gauge, step)
  if (warning !== undefined) {
    yield* locked(env, (tx) => appendWarning(env, tx, warning)).pipe(Effect.mapError(logFailure(step)))
  }
  return false
})

/**
 * Runs a step under the turn's deadline (R158): when it passes, the step is interrupted on the `Clock` (its model
 * stream, its tool calls) and the activity fails with `BudgetStop`, which the driver closes like a cancel.
 */
const withDeadline = <A, E>(gauge: Budgets.Gauge, step: number, run: Effect.Effect<A, E>) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const deadline = gauge.deadline ?? now
    return Effect.timeoutFail(run, {
      duration: Math.max(0, deadline - now),
      onTimeout: () => new BudgetStop({ reason: Budgets.deadlineReason(gauge, step, deadline) })
    })
  })

/** How a turn opens: its trigger, the staged input it retains and the admitted prompts (R45). */
interface Opening {
  readonly trigger: TurnT.TurnTrigger
  readonly retained: ReadonlySet<Inbox.OutboxKey>
  readonly admitted: ReadonlyArray<Inbox.UserInput>
}

interface OpenOptions {
  /** A turn for stranded steering: it opens only if steering is still staged (it may have been withdrawn). */
  readonly steeringOnly?: boolean
  /** A compaction turn (`agent.compact`): its first step compacts, with this decision and instruction. */
  readonly compaction?: {
    readonly decision: CompactDecision
    readonly estimate: number
    readonly instruction: string | undefined
  }
}

/**
 * The turn's opening section, one transaction `tx`: `turn/start`, the retained input, the prompts and the input accepted
 * during the admission in one append (R45), and the first step's `step/start` when `opensStep`. `undefined`: a
 * turn for stranded steering found none.
 */
const openTurnLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  progress: Ref.Ref<Progress>,
  opening: Opening,
  options: OpenOptions,
  opensStep: boolean
) {
  // A cancel accepted while this activity waited for the lock (it waits uninterruptibly) opens no turn: the
  // admitted prompt is dropped (R45 step 2, R80). One read serves this check and the repair's.
  const state = yield* read(env)
  if (Lifecycle.cause(state.lifecycle) !== undefined) return yield* Effect.interrupt
  if (options.steeringOnly === true && !(yield* hasSteering(env))) return undefined
  if (state.unclosed !== undefined) yield* repairLocked(env, tx).pipe(Effect.mapError(logFailure(0)))
  const turn = (yield* env.log.state).lastTurn + 1
  // The opening records go in one `appendAll` (all or nothing): `turn/start`, the retained input (staged
  // before this admission), the prompt, then input accepted during the admission (R45). The prompt's
  // `user/message` carries its id, which is what settles its inbox record (ADR 0017).
  const snapshot = yield* Inbox.get(env.inbox)
  // Counted by key (the message's id), not remembered as a number: an item withdrawn during the admission must not
  // make one accepted during it count as retained, and an item edited during it stays retained.
  let leading = 0
  for (const item of snapshot.outbox) {
    if (!opening.retained.has(Inbox.outboxKey(item))) break
    leading++
  }
  // A compaction turn drains nothing before its compaction step: what was staged lands after the record (R151).
  const drains = options.compaction === undefined
  const retainedDrain = drainPlan(snapshot, { turn, limit: drains ? leading : 0 })
  const laterDrain = drainPlan({ ...snapshot, outbox: retainedDrain.rest }, drains ? { turn } : { turn, limit: 0 })
  const prompts = opening.admitted.map((input): SessionEvent.SessionEventInput => ({
    type: "user/message",
    data: userMessageData(input)
  }))
  // All built here from accepted input and the hook's decoded decision: trusted (ADR 0023). Joined by `concat`, not
  // spreads: the parts come with different element kinds (an empty plan's `[]`), and a spread optimized for one kind
  // deoptimizes on the next (`--trace-deopt`: "wrong map"; TurboFan compiled this section once more per W1 run).
  const start: Array<SessionEvent.SessionEventInput> = [{
    type: "turn/start",
    data: { turn, trigger: opening.trigger }
  }]
  const events = yield* tx.appendTrusted(start.concat(retainedDrain.events, prompts, laterDrain.events)).pipe(
    Effect.mapError(logFailure(0))
  )
  // The first step is counted here when this section opens it.
  yield* Ref.update(progress, (p) => ({ ...p, turn, step: opensStep ? 1 : p.step }))
  yield* Inbox.modify(env.inbox, (s) => ({ ...s, outbox: laterDrain.rest }))
  const promptsAt = 1 + retainedDrain.taken.length
  const laterAt = promptsAt + prompts.length
  yield* publishAll(env, (): Array<AgentEvent.AgentEvent> => [
    { type: "session/event", event: events[0]! },
    ...drainedLive(retainedDrain.taken, events.slice(1, promptsAt)),
    ...events.slice(promptsAt, laterAt).map((event) => ({ type: "session/event" as const, event })),
    ...drainedLive(laterDrain.taken, events.slice(laterAt))
  ])
  if (!opensStep) return { turn, history: undefined }
  return { turn, history: yield* openStep(env, tx, turn, 1) }
})

/**
 * A failed model request (R75): `step/end` first, then the `requestError` waterfall (default `fail`; a hook failure
 * counts as `fail`), then `agent/error` (even when a retry follows) and `turn/end { error }`.
 */
const requestFailed = Effect.fnUntraced(function*(
  env: Env,
  progress: Ref.Ref<Progress>,
  turn: number,
  step: number,
  outcome: Extract<StepOutcome, { readonly _tag: "RequestFailed" }>
) {
  yield* locked(env, (tx) => appendOwn(env, tx, [{ type: "step/end", data: { turn, step } }])).pipe(
    Effect.mapError(logFailure(step))
  )
  const hook = env.options.hooks?.requestError
  const decision = hook === undefined
    ? "fail"
    : yield* provide(
      env,
      hook({ agent: env.service, turn, step, error: outcome.error, failure: outcome.failure }, Effect.succeed("fail"))
    ).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logWarning("requestError hook failed; the request failure stands", cause), "fail" as const)
      )
    )
  yield* honourCancel(env)
  const failure = outcome.failure
  yield* publish(env, {
    type: "agent/error",
    turn,
    step,
    error: { message: failure.message, code: failure.code }
  })
  yield* locked(env, (tx) => endTurnLocked(env, tx, progress, turn, { kind: "request-error", step, failure }))
  return decision === "retry" ? turnEndedForRetry : turnEnded
})
