/**
 * The driver runs the queued actions one at a time, outside any agent activity: drive passes that reserve the next
 * round (R123) or settle the last one (R124), withdrawals (R126) and deferred injections.
 */
import type { Ids as IdsT, Turn } from "@harness/domain"
import { Ids } from "@harness/domain"
import { Cause, Clock, Effect, Either, PubSub, Queue, Ref } from "effect"
import type * as Goals from "../Goals.js"
import type { BlockedReason } from "../GoalState.js"
import { renderRound } from "../GoalState.js"
import { exhausted, tokensUsed } from "./budget.js"
import { failedTurn, sync } from "./observer.js"
import type { Action, Core, Runtime, State } from "./runtime.js"
import { armedActive, changeMessage, requestDrive } from "./runtime.js"

const mintMessageId: Effect.Effect<IdsT.AgentMessageId> = Ids.randomUuid(Ids.AgentMessageId)

type Outcome =
  | { readonly _tag: "continue" }
  | { readonly _tag: "pause" }
  | { readonly _tag: "disarm" }
  | { readonly _tag: "block"; readonly reason: BlockedReason }

/** R124: what a round's end means for its goal. No abnormal outcome retries automatically. */
export const classify = (reason: Turn.TurnEndReason): Outcome => {
  switch (reason.kind) {
    case "completed":
      return { _tag: "continue" }
    case "aborted":
      return { _tag: "pause" }
    case "max-tokens":
      return { _tag: "block", reason: { code: "max-tokens", message: "The round hit the output token limit." } }
    case "disposed":
    case "interrupted":
      return { _tag: "disarm" }
    case "budget":
      // A round stopped by a budget of its own (the goal's tokens or deadline, the agent's step cap): the next drive
      // pass blocks the goal if the goal's budget is spent, else the next round goes on (R161). A session budget
      // would stop every round: it blocks the goal.
      return reason.scope === "session"
        ? {
          _tag: "block",
          reason: { code: "budget", message: `The session reached its ${reason.budget} budget (${reason.limit}).` }
        }
        : { _tag: "continue" }
    case "request-error":
    case "error": {
      const code = reason.kind === "request-error" ? reason.failure.code : reason.code
      const message = reason.kind === "request-error" ? reason.failure.message : reason.message
      return code === "RATE_LIMIT" || code === "QUOTA"
        ? { _tag: "block", reason: { code: "usage-limited", message } }
        : { _tag: "block", reason: { code: "turn-error", message } }
    }
  }
}

const ignoreGoalError = <A>(effect: Effect.Effect<A, Goals.Failure>): Effect.Effect<void> =>
  Effect.catchAll(Effect.asVoid(effect), (error) => Effect.logDebug("goal action skipped", error))

const drivePass = (rt: Runtime): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* Ref.set(rt.driveRequested, false)
    yield* sync(rt)
    const s = yield* Ref.get(rt.state)
    if (s.corrupt !== undefined) return
    if ((yield* rt.agent.status) !== "idle" || s.competingQueued) return
    const attempt = s.attempt
    if (attempt !== undefined) {
      if (attempt.reason === undefined) return
      yield* Ref.update(rt.state, (st) => ({ ...st, attempt: undefined }))
      const ref = { id: attempt.goalId, revision: attempt.revision }
      if (attempt.notDurable) {
        yield* rt.service.disarm
      } else if (!attempt.stale && armedActive(s, attempt.goalId, attempt.revision)) {
        const outcome = classify(attempt.reason)
        if (outcome._tag === "pause") yield* ignoreGoalError(rt.service.pause(ref))
        else if (outcome._tag === "disarm") yield* rt.service.disarm
        else if (outcome._tag === "block") yield* ignoreGoalError(rt.service.block(ref, outcome.reason))
      } else if (attempt.reason.kind !== "completed" && !failedTurn(attempt.reason)) {
        // A cancelled round of a superseded revision: nothing to pause, but the cancel still stops the driver.
        yield* rt.service.disarm
      }
      return yield* requestDrive(rt)
    }
    const goal = s.current.goal
    if (goal === undefined || goal.phase !== "active" || s.activation !== "armed") return
    // A round is reserved only over a logged state: changes still pending would land after its prompt.
    if (s.pending.length > 0) return
    const tokens = tokensUsed(yield* rt.agent.log, goal.id)
    const reason = exhausted(goal, s.current.roundsStarted, tokens, yield* Clock.currentTimeMillis)
    if (reason !== undefined) {
      return yield* ignoreGoalError(rt.service.block({ id: goal.id, revision: goal.revision }, reason))
    }
    const round = s.current.roundsStarted + 1
    const messageId = yield* mintMessageId
    const text = renderRound(goal, round)
    yield* Ref.update(rt.state, (st): State => ({
      ...st,
      attempt: {
        goalId: goal.id,
        revision: goal.revision,
        round,
        messageId,
        text,
        phase: "queued",
        turn: undefined,
        reason: undefined,
        stale: false,
        notDurable: false
      }
    }))
    const queued = yield* Effect.either(rt.agent.followup(
      { content: [{ type: "text", text }], source: { kind: "goal", goalId: goal.id, revision: goal.revision, round } },
      { id: messageId }
    ))
    if (Either.isLeft(queued)) {
      yield* Ref.update(rt.state, (st) => ({ ...st, attempt: undefined }))
      const now = yield* Ref.get(rt.state)
      if (armedActive(now, goal.id, goal.revision)) {
        yield* ignoreGoalError(
          rt.service.block({ id: goal.id, revision: goal.revision }, {
            code: "queue-failed",
            message: `the goal round could not be queued: ${queued.left.message}`
          })
        )
      }
    }
  })

/**
 * Withdraws a round human work overtook (R126). `Withdrawn`: its discard reaches the observer, which asks for a new
 * pass. `NotPending`: the agent claimed it first, and the guard blocks the stale reservation (or it already ran).
 */
const withdrawRound = (rt: Core, messageId: IdsT.AgentMessageId): Effect.Effect<void> =>
  rt.agent.withdraw(messageId).pipe(
    Effect.flatMap((result) =>
      result._tag === "Withdrawn"
        ? Effect.void
        : Effect.logDebug("goal round already claimed: the admission guard decides it", result.id)
    ),
    Effect.catchAll((error) => Effect.logError("goal round could not be withdrawn", error))
  )

/** Hands the next deferred change to the agent; if it is refused, unlogged changes fall back to the log's fold. */
const injectNext = (rt: Core): Effect.Effect<void> =>
  Effect.gen(function*() {
    const head = yield* Ref.modify(rt.state, (s) => {
      const first = s.pending[0]
      if (first === undefined || first.injected) return [undefined, s]
      return [first.change, { ...s, pending: [{ change: first.change, injected: true }, ...s.pending.slice(1)] }]
    })
    if (head === undefined) return
    const injected = yield* Effect.either(rt.agent.inject(changeMessage(head)))
    if (Either.isLeft(injected)) {
      yield* Effect.logError(
        "a deferred goal change could not be injected; unlogged changes are dropped",
        injected.left
      )
      yield* Ref.update(rt.state, (s) => ({ ...s, pending: [], current: s.durable, activation: "disarmed" as const }))
    }
  })

const runAction = (rt: Runtime, action: Action): Effect.Effect<void> => {
  switch (action._tag) {
    case "drive":
      return drivePass(rt)
    case "inject":
      return injectNext(rt)
    case "withdraw":
      return withdrawRound(rt, action.messageId)
    case "pause":
      return ignoreGoalError(rt.service.pause(action.ref))
    case "block":
      return ignoreGoalError(rt.service.block(action.ref, action.reason))
    case "disarm":
      return rt.service.disarm
  }
}

export const driverLoop = (rt: Runtime): Effect.Effect<never> =>
  Effect.forever(
    Effect.gen(function*() {
      const action = yield* Queue.take(rt.actions)
      yield* runAction(rt, action).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError("goal driver action failed", cause)
        ),
        Effect.ensuring(
          Effect.zipRight(Ref.update(rt.state, (s) => ({ ...s, busy: s.busy - 1 })), PubSub.publish(rt.ran, undefined))
        )
      )
    })
  )
