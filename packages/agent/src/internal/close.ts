/**
 * Closing a turn in the log (R57, R72, R73, R133): owed tool results in model order, then
 * staged context (after a default cancel), then `step/end`, then `turn/end`. Everything is derived from the log's
 * own state, so a close the store refused half-way is finished later by {@link repairLocked}: the log never stays
 * open while the agent runs on.
 */
import type { Turn as TurnT } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Effect } from "effect"
import type { Env, FinishedCall } from "./runtime.js"
import { append, drain, read, stageContexts, update } from "./runtime.js"
import { abortedBeforeDispatchMessage, abortedMessage, errorResult } from "./toolCalls.js"

/** What the tool runtime knows about the open step's calls when the turn closes. */
export interface CloseCalls {
  readonly finished: ReadonlyMap<string, FinishedCall>
  readonly dispatched: ReadonlySet<string>
}

/**
 * Closes the log's open turn with `reason`. Must run holding the lock. On a refusal, what was written stays (each
 * append is atomic) and the agent remembers the reason; the next append the agent makes outside a turn first
 * repairs the log.
 */
export const closeLocked = (
  env: Env,
  reason: TurnT.TurnEndReason,
  calls: CloseCalls,
  options: { readonly context: boolean }
): Effect.Effect<void, SessionLog.SessionLogError> =>
  Effect.gen(function*() {
    const log = yield* env.log.state
    const turn = log.openTurn
    if (turn === undefined) return
    yield* update(env, (s) => ({ ...s, unclosed: reason }))
    const step = log.openStep
    if (step !== undefined) {
      for (const owed of log.owed) {
        const call = { turn, step, callId: owed.callId, name: owed.name }
        let callSeq = owed.callSeq
        if (callSeq === undefined) {
          // Never started: a synthetic pair keeps the transcript provider-valid (R72).
          callSeq = (yield* append(env, {
            type: "tool/call",
            data: { turn, step, callId: owed.callId, name: owed.name, arguments: owed.arguments }
          })).seq
        }
        const done = calls.finished.get(owed.callId)
        const data = done !== undefined
          ? done.data
          : owed.callSeq !== undefined && calls.dispatched.has(owed.callId)
          ? errorResult(call, "ABORTED", abortedMessage, "AbortError")
          : errorResult(call, "ABORTED_BEFORE_DISPATCH", abortedBeforeDispatchMessage, "AbortError")
        yield* append(env, { type: "tool/result", data, sourceEventSeqs: [callSeq] })
        if (done !== undefined) yield* stageContexts(env, done.contexts)
      }
    }
    if (options.context) {
      // Context the log refuses stays staged (the drain puts it back); the turn still closes.
      yield* drain(env, { turn, only: "context" }).pipe(
        Effect.catchAll((error) => Effect.logWarning("staged context could not be logged; it stays staged", error))
      )
    }
    if (step !== undefined) yield* append(env, { type: "step/end", data: { turn, step } })
    yield* update(env, (s) => ({ ...s, window: false }))
    yield* append(env, { type: "turn/end", data: { turn, reason } })
    yield* update(env, (s) => ({ ...s, unclosed: undefined }))
  })

/**
 * Finishes a close the store refused earlier (calls still owed are answered `ABORTED`, or `ABORTED_BEFORE_DISPATCH`
 * when never logged). Must run holding the lock, before the agent appends anything outside a turn.
 */
export const repairLocked = (env: Env): Effect.Effect<void, SessionLog.SessionLogError> =>
  Effect.flatMap(read(env), ({ unclosed }) =>
    unclosed === undefined
      ? Effect.void
      : Effect.flatMap(env.log.state, (log) =>
        closeLocked(env, unclosed, {
          finished: new Map(),
          dispatched: new Set(log.owed.flatMap((owed) => owed.callSeq === undefined ? [] : [owed.callId]))
        }, { context: false })))
