/**
 * The observer folds every live agent event into the shared state, in order (the log's fold, pending changes, the
 * attempt, R126's fences). It never calls the agent: what it decides becomes an action for the driver.
 */
import type { AgentEvent, SessionEvent, Turn } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { Deferred, Effect, Either, Queue, Ref, Schema } from "effect"
import { decodeGoalEvent, GoalReplayError, stepGoal } from "../GoalReplay.js"
import { GoalChange } from "../GoalState.js"
import type { Action, Attempt, Core, State } from "./runtime.js"
import { armedActive, enqueue, requestDrive } from "./runtime.js"

type Step = readonly [State, ReadonlyArray<Action>, Deferred.Deferred<void> | undefined]

const stateOnly = (s: State): Step => [s, [], undefined]

const sameChange = Schema.equivalence(GoalChange)

const pauseIfArmed = (s: State, attempt: Attempt): ReadonlyArray<Action> =>
  armedActive(s, attempt.goalId, attempt.revision)
    ? [{ _tag: "pause", ref: { id: attempt.goalId, revision: attempt.revision } }]
    : []

const offer = (rt: Core, actions: ReadonlyArray<Action>) =>
  Effect.forEach(actions, (action) => action._tag === "drive" ? requestDrive(rt) : enqueue(rt, action), {
    discard: true
  })

/** The attempt's admission was dropped (a cancel between the guard and the prompt): forget it and open the gate. */
const dropAdmitting = (s: State): Step => [
  { ...s, attempt: undefined, gate: undefined },
  pauseIfArmed(s, s.attempt!),
  s.gate
]

const handle = (rt: Core, event: AgentEvent.AgentEvent): Effect.Effect<void> =>
  Effect.gen(function*() {
    const [actions, open] = yield* Ref.modify(rt.state, (s) => {
      const [next, actions, open] = transition(s, event)
      return [[actions, open] as const, next]
    })
    if (open !== undefined) yield* Deferred.succeed(open, undefined)
    yield* offer(rt, actions)
  })

const transition = (
  s: State,
  event: AgentEvent.AgentEvent
): Step => {
  const attempt = s.attempt
  switch (event.type) {
    case "agent/status": {
      if (event.status !== "idle") return stateOnly(s)
      const cleared = { ...s, competingQueued: false }
      if (attempt !== undefined && attempt.phase === "admitting") {
        const [next, actions, open] = dropAdmitting(cleared)
        return [next, [...actions, { _tag: "drive" }], open]
      }
      return [cleared, [{ _tag: "drive" }], undefined]
    }
    case "agent/inbox/enqueue": {
      if (attempt !== undefined && event.message.id === attempt.messageId) return stateOnly(s)
      // Human (or any other) work goes first (R126).
      const overtaken = attempt !== undefined && attempt.phase === "queued" && !attempt.stale
      return [
        { ...s, competingQueued: true, attempt: overtaken ? { ...attempt, stale: true } : attempt },
        overtaken ? [{ _tag: "withdraw", messageId: attempt.messageId }] : [],
        undefined
      ]
    }
    case "agent/inbox/dequeue": {
      if (
        attempt !== undefined && attempt.phase === "admitting" && event.message.id !== attempt.messageId &&
        event.message.id !== s.lastSteering
      ) {
        return dropAdmitting(s)
      }
      return stateOnly(s)
    }
    case "agent/inbox/discard": {
      if (attempt !== undefined && event.messages.some((m) => m.id === attempt.messageId)) {
        // A withdraw the driver did not ask for: someone took the round back, so no new one starts by itself.
        const taken = event.reason === "withdraw" && !attempt.stale
        return [
          { ...s, attempt: undefined, activation: taken ? "disarmed" : s.activation },
          [{ _tag: "drive" }],
          undefined
        ]
      }
      return stateOnly(s)
    }
    case "agent/cancel-requested": {
      const cleared = { ...s, competingQueued: false }
      const goal = s.current.goal
      if (goal === undefined || goal.phase !== "active" || s.activation !== "armed") return stateOnly(cleared)
      if (attempt === undefined) return stateOnly({ ...cleared, activation: "disarmed" })
      if (attempt.phase === "queued") {
        return [
          { ...cleared, attempt: undefined },
          pauseIfArmed(s, attempt),
          undefined
        ]
      }
      // Admitting or admitted: the aborted turn (or the dropped admission) pauses it through the normal path.
      return stateOnly(cleared)
    }
    case "agent/error": {
      if (attempt !== undefined && attempt.turn === event.turn && attempt.reason !== undefined) {
        return stateOnly({ ...s, attempt: { ...attempt, notDurable: true } })
      }
      return stateOnly(s)
    }
    case "session/event":
      return observe(s, event.event)
    default:
      return stateOnly(s)
  }
}

/** A turn that a `requestError` or error retry may continue. */
export const failedTurn = (reason: Turn.TurnEndReason): boolean =>
  reason.kind === "error" || reason.kind === "request-error"

const observe = (
  s: State,
  event: SessionEvent.SessionEvent
): Step => {
  if (event.seq <= s.observedSeq) return stateOnly(s)
  const seen = { ...s, observedSeq: event.seq }
  if (s.corrupt !== undefined) return stateOnly(seen)
  const attempt = s.attempt
  switch (event.type) {
    case "steering/message":
      return stateOnly({ ...seen, lastSteering: event.data.messageId })
    case "turn/start": {
      const trigger = event.data.trigger
      if (attempt === undefined) return stateOnly(seen)
      // A compaction turn (ADR 0052) is no round's: it neither starts nor settles one.
      if (trigger.kind === "compaction") return stateOnly(seen)
      if (trigger.kind === "retry") {
        // A retry continues the round after a failed turn: its own end settles the round, which counts once.
        return attempt.reason !== undefined && failedTurn(attempt.reason)
          ? stateOnly({ ...seen, attempt: { ...attempt, turn: event.data.turn, reason: undefined } })
          : stateOnly(seen)
      }
      const source = trigger.source
      const ours = source.kind === "goal" && source.goalId === attempt.goalId && source.revision === attempt.revision &&
        source.round === attempt.round
      if (ours) return stateOnly({ ...seen, attempt: { ...attempt, turn: event.data.turn } })
      return attempt.phase === "admitting" ? dropAdmitting(seen) : stateOnly(seen)
    }
    case "turn/end":
      return attempt !== undefined && attempt.turn === event.data.turn
        ? stateOnly({ ...seen, attempt: { ...attempt, reason: event.data.reason } })
        : stateOnly(seen)
    case "user/message": {
      const folded = stepGoal(s.durable, event)
      if (Either.isLeft(folded)) return [{ ...seen, corrupt: folded.left }, [], s.gate]
      const decoded = Either.getOrUndefined(decodeGoalEvent(event))
      if (decoded === undefined) return stateOnly({ ...seen, durable: folded.right })
      if (decoded._tag === "change") {
        const head = s.pending[0]
        if (head !== undefined && head.injected && sameChange(head.change, decoded.change)) {
          const pending = s.pending.slice(1)
          return [
            { ...seen, durable: folded.right, pending },
            pending.length > 0 ? [{ _tag: "inject" }] : [{ _tag: "drive" }],
            undefined
          ]
        }
        if (s.pending.length > 0) {
          return [
            {
              ...seen,
              corrupt: new GoalReplayError({
                seq: event.seq,
                rule: "revision-not-advanced",
                message:
                  "a logged goal change is not the next pending change: it must advance the current goal by one revision"
              })
            },
            [],
            s.gate
          ]
        }
        // A change this service did not make (another writer): it folded, so it is the new truth.
        return [{ ...seen, durable: folded.right, current: folded.right }, [{ _tag: "drive" }], undefined]
      }
      // A round: it is counted in the cache too (its goal is the cache's, the gate kept mutations out).
      const current = { ...s.current, roundsStarted: folded.right.roundsStarted }
      if (attempt !== undefined && event.data.messageId === attempt.messageId) {
        return [
          { ...seen, durable: folded.right, current, attempt: { ...attempt, phase: "admitted" }, gate: undefined },
          [],
          s.gate
        ]
      }
      return stateOnly({ ...seen, durable: folded.right, current })
    }
    default:
      return stateOnly(seen)
  }
}

/** Catches the observer up: handles every event published so far, in order. */
export const sync = (rt: Core): Effect.Effect<void> =>
  SessionLog.holding(
    rt.events,
    Effect.flatMap(Queue.takeAll(rt.subscription), (events) => Effect.forEach(events, (e) => handle(rt, e)))
  ).pipe(Effect.asVoid)
