/** What the goal actors share: one `Ref<State>`, the driver's action queue, and the permits that order them. */
import type { Agent as AgentNs } from "@harness/agent"
import type { AgentEvent, Ids as IdsT, Message, Turn } from "@harness/domain"
import type { Deferred, PubSub } from "effect"
import { Effect, Queue, Ref } from "effect"
import type { GoalReplayError } from "../GoalReplay.js"
import type * as Goals from "../Goals.js"
import type { BlockedReason, GoalChange, GoalRef, GoalState } from "../GoalState.js"
import { encodeChange, refOf, renderChange } from "../GoalState.js"

/** The round the driver reserved, from its enqueue to its turn's end. */
export interface Attempt {
  readonly goalId: string
  readonly revision: number
  readonly round: number
  readonly messageId: IdsT.AgentMessageId
  readonly text: string
  readonly phase: "queued" | "admitting" | "admitted"
  readonly turn: number | undefined
  readonly reason: Turn.TurnEndReason | undefined
  readonly stale: boolean
  readonly notDurable: boolean
}

export interface State {
  /** The fold of what the log has shown. */
  readonly durable: GoalState
  /** What `get` shows: `durable` with the pending changes applied. */
  readonly current: GoalState
  /**
   * Accepted changes not yet logged, in order. Only the head is handed to the agent: a staged change can stay
   * staged while a later idle injection would be appended at once, out of order (ADR 0014).
   */
  readonly pending: ReadonlyArray<{ readonly change: GoalChange; readonly injected: boolean }>
  readonly activation: Goals.Activation
  readonly attempt: Attempt | undefined
  readonly competingQueued: boolean
  readonly corrupt: GoalReplayError | undefined
  readonly gate: Deferred.Deferred<void> | undefined
  readonly observedSeq: number
  /** The last `steering/message` logged: the dequeue its drain publishes next is not a claim (R45). */
  readonly lastSteering: string | undefined
  readonly busy: number
}

export interface Runtime extends Core {
  readonly service: Goals.Service
}

export interface Core {
  readonly agent: AgentNs.Service
  readonly state: Ref.Ref<State>
  /**
   * Serialises mutations and the guard's checks. Taken, like `events`, only with `SessionLog.holding`: a plain
   * `withPermits` interrupted (by a cancel, in the guard) as the permit is handed over leaks it for good.
   */
  readonly lock: Effect.Semaphore
  /** Whoever takes events from the subscription holds it, so they are handled in order. */
  readonly events: Effect.Semaphore
  readonly subscription: Queue.Dequeue<AgentEvent.AgentEvent>
  readonly actions: Queue.Queue<Action>
  readonly driveRequested: Ref.Ref<boolean>
  readonly changes: PubSub.PubSub<Goals.Changed>
  readonly ran: PubSub.PubSub<void>
}

export type Action =
  | { readonly _tag: "drive" }
  | { readonly _tag: "inject" }
  | { readonly _tag: "withdraw"; readonly messageId: IdsT.AgentMessageId }
  | { readonly _tag: "pause"; readonly ref: GoalRef }
  | { readonly _tag: "block"; readonly ref: GoalRef; readonly reason: BlockedReason }
  | { readonly _tag: "disarm" }

/** The round-zero message of a change (R113). */
export const changeMessage = (change: GoalChange): Message.UserMessageData => {
  const ref = refOf(change)
  return {
    content: [{ type: "text", text: renderChange(change) }],
    source: { kind: "goal", goalId: ref.id, revision: ref.revision, round: 0, change: encodeChange(change) }
  }
}

/** `busy` counts the action until it has run; uninterruptible, as one counted but never queued blocks `settled`. */
export const enqueue = (rt: Core, action: Action): Effect.Effect<void> =>
  Effect.uninterruptible(
    Effect.zipRight(Ref.update(rt.state, (s) => ({ ...s, busy: s.busy + 1 })), Queue.offer(rt.actions, action))
  )

export const requestDrive = (rt: Core): Effect.Effect<void> =>
  Effect.uninterruptible(Effect.flatMap(
    Ref.getAndSet(rt.driveRequested, true),
    (already) => already ? Effect.void : enqueue(rt, { _tag: "drive" })
  ))

export const armedActive = (s: State, goalId: string, revision: number): boolean => {
  const goal = s.current.goal
  return goal !== undefined && goal.id === goalId && goal.revision === revision && goal.phase === "active" &&
    s.activation === "armed"
}
