/**
 * The agent's state: one immutable record in a `Ref` (the lifecycle value, ADR 0021, with the current activity and
 * its window, and what survives across turns) and the pending approvals, changed only inside the log's
 * transactions — the acceptance window: a critical section is a `SessionLog` transaction, so the section and its
 * appends take one permit (ADR 0028, ADR 0051).
 */
import type { Approval, SessionEvent, Turn } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import type { Deferred } from "effect"
import { Cause, Effect, Option, Ref } from "effect"
import type { ToolRuntime } from "./activity.js"
import * as Lifecycle from "./lifecycle.js"

/** A fresh tool runtime for one activity. */
export const makeToolRuntime = (): ToolRuntime => ({ finished: new Map(), dispatched: new Set() })

/** The last request's reported prompt size: its input tokens and how many history messages it carried. */
export interface UsageMark {
  readonly inputTokens: number
  readonly messages: number
}

/**
 * The agent's state. Contract: read and written only inside a transaction of the log (`env.log.transaction`, a
 * critical section), except plain reads for the public accessors and `honourCancel`.
 */
export interface State {
  /** Idle, running (a driver and perhaps an activity), disposing or disposed (ADR 0021). */
  readonly lifecycle: Lifecycle.Lifecycle
  /** The end reason of a turn whose close the store refused: the log still has it open (see `repairLocked`). */
  readonly unclosed: Turn.TurnEndReason | undefined
  /** The header this agent last logged (`undefined` before its first request). */
  readonly header: SessionEvent.RequestHeader["header"] | undefined
  /** The last request's reported input tokens, since the latest compaction (the context estimate's base, R146). */
  readonly usage: UsageMark | undefined
}

/** How a pending approval was answered (ADR 0054). */
export interface ApprovalAnswered {
  readonly decision: "allow" | "deny"
  readonly reason?: string | undefined
  readonly by: "person" | "timeout" | "cancel"
}

/** One pending approval: what is listed, and the wait of a call whose turn is open (absent after a restart). */
export interface ApprovalEntry {
  readonly pending: Approval.PendingApproval
  readonly waiting: Deferred.Deferred<ApprovalAnswered> | undefined
}

/** The pending approvals by call id, in request order (a `Map` keeps insertion order); see `approvals.ts`. */
export type Approvals = Ref.Ref<ReadonlyMap<string, ApprovalEntry>>

/** The agent's state, as its environment (`env.ts`) holds it: the record, the approvals, and the log that guards them. */
export interface StateParts {
  readonly state: Ref.Ref<State>
  /** The pending approvals (see `approvals.ts`, ADR 0054). */
  readonly approvals: Approvals
  readonly log: SessionLog.Service
}

/**
 * Runs a critical section — "holding the lock", the acceptance window's (ADR 0005) — as one transaction of the agent's
 * log (ADR 0051): `body` appends through `tx`, and nothing else changes the agent's state or its log meanwhile.
 * Uninterruptible, the wait included (a section is never left half done; an interruption landing as the permit is
 * handed over would leak it, as the property tests found under small `maxOpsBeforeYield` budgets); sections are
 * short and wait on nothing but other sections and the log.
 */
export const locked = <A, E, R>(
  env: StateParts,
  body: (tx: SessionLog.Transaction) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => env.log.transaction(body)

/** Reads the state. */
export const read = (env: StateParts): Effect.Effect<State> => Ref.get(env.state)

/** Updates the state. */
export const update = (env: StateParts, f: (state: State) => State): Effect.Effect<void> => Ref.update(env.state, f)

/**
 * Applies a lifecycle transition (ADR 0021). Runs in a critical section. The callers only ask for transitions their
 * state allows, so a refused one is a bug: a defect naming the transition and the state (thrown inside the update,
 * which makes it the same `die` as `Effect.dieMessage` in one interpreter step instead of three).
 */
export const transition = (
  env: StateParts,
  name: string,
  f: (lifecycle: Lifecycle.Lifecycle) => Option.Option<Lifecycle.Lifecycle>
): Effect.Effect<void> =>
  Ref.update(env.state, (state) => {
    const next = f(state.lifecycle)
    if (Option.isNone(next)) {
      throw new Cause.RuntimeException(`the agent's lifecycle refused "${name}" in state ${state.lifecycle._tag}`)
    }
    return { ...state, lifecycle: next.value }
  })

/**
 * Stops the activity if a cancel was recorded for it: run in the activity fiber right after each hook, so a hook
 * that cancels its own agent finishes, and nothing after it runs (no hook runs after a cancel).
 */
export const honourCancel = (env: StateParts): Effect.Effect<void> =>
  Effect.flatMap(
    Ref.get(env.state),
    (state) => (Lifecycle.cause(state.lifecycle) === undefined ? Effect.void : Effect.interrupt)
  )

/**
 * A durability barrier (ADR 0008): on a durable log, waits until everything appended (and every inbox record
 * recorded) so far is written and synced. A memory log has nothing to outlive, so it costs nothing there.
 */
export const barrier = (env: StateParts): Effect.Effect<void, SessionLog.SessionLogError> =>
  env.log.durable ? env.log.flush : Effect.void

/** The options of a record of inbox records the agent built itself (ADR 0023). */
const trusted = { trusted: true } as const

/**
 * Records durable inbox records (ADR 0017), trusted (ADR 0023): the agent builds them from decoded, frozen
 * messages. A refusal (a store that cannot take them) is logged, never thrown at a caller.
 */
export const recordInbox = (
  env: StateParts,
  records: ReadonlyArray<SessionLog.InboxRecordInput>
): Effect.Effect<void> =>
  env.log.recordInbox(records, trusted).pipe(
    Effect.catchAll((error) => Effect.logError("the session log refused an inbox record", error))
  )
