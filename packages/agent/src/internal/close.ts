/**
 * Closing a turn in the log (R57, R72, R73, R133) with the session's own closers
 * (`Closers.close`, ADR 0008): the agent only says how each owed call is answered and which staged context goes
 * in before `step/end`; the records themselves are computed from the log's state and appended as one unit
 * (one append in the section's transaction), so a close is written whole or not at all. They are built from the log's checked state, the cancel
 * cause decoded where it entered and results the tool runtime rendered itself: trusted (ADR 0023). A close the
 * store refused is finished by {@link repairLocked} before the agent appends anything else outside a turn: the log
 * never stays open while the agent runs on.
 */
import type { Turn as TurnT } from "@harness/domain"
import { Closers, type SessionLog } from "@harness/session"
import { Chunk, Effect } from "effect"
import type { FinishedCall } from "./activity.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import type { OutboxItem } from "./inbox.js"
import { appendOwn } from "./live.js"
import { outboxEvent, stageContexts } from "./outbox.js"
import { read, update } from "./state.js"
import { abortedBeforeDispatchMessage, abortedMessage } from "./toolCalls.js"

/** What the tool runtime knows about the open step's calls when the turn closes. */
export interface CloseCalls {
  readonly finished: ReadonlyMap<string, FinishedCall>
  readonly dispatched: ReadonlySet<string>
}

/**
 * How the agent answers an owed call: the result a finished handler produced; `ABORTED` for a dispatched call;
 * `ABORTED_BEFORE_DISPATCH` for one that never ran (with a synthetic `tool/call` when it was never recorded, R72).
 */
const answerWith = (calls: CloseCalls) => (owed: Closers.OwedCallAt): Closers.Answer => {
  const done = calls.finished.get(owed.callId)
  if (done !== undefined) {
    const { content, error, isError, meta } = done.data
    return { content, isError, error, meta }
  }
  return owed.callSeq !== undefined && calls.dispatched.has(owed.callId)
    ? Closers.errorAnswer("ABORTED", abortedMessage, { name: "AbortError" })
    : Closers.errorAnswer("ABORTED_BEFORE_DISPATCH", abortedBeforeDispatchMessage, {
      name: "AbortError",
      recordCall: true
    })
}

/**
 * Closes the log's open turn with `reason`, in one append through the section's transaction `tx`. `context`: staged context
 * (and the contexts of the finished calls) is logged before `step/end` (after a default cancel); otherwise the
 * finished calls' contexts are staged. On a refusal nothing is written and the agent remembers the reason; the next
 * append the agent makes outside a turn first repairs the log.
 */
export const closeLocked = Effect.fnUntraced(
  function*(
    env: Env,
    tx: SessionLog.Transaction,
    reason: TurnT.TurnEndReason,
    calls: CloseCalls,
    options: { readonly context: boolean }
  ) {
    const log = yield* env.log.state
    const turn = log.openTurn
    if (turn === undefined) return
    yield* update(env, (s) => ({ ...s, unclosed: reason }))
    // The contexts the finished calls attached, in model order of their calls (R68).
    const contexts = log.openStep === undefined
      ? []
      : log.owed.flatMap((owed) => calls.finished.get(owed.callId)?.contexts ?? [])
    const staged = options.context
      ? Chunk.toReadonlyArray((yield* Inbox.get(env.inbox)).outbox).filter((item) => item._tag === "context")
      : []
    const afterResults = options.context
      ? [
        ...staged.map((item) => outboxEvent(item, undefined)),
        ...contexts.map((message) => outboxEvent({ _tag: "context", message }, undefined))
      ]
      : []
    yield* appendOwn(env, tx, Closers.close(log, { reason, answer: answerWith(calls), afterResults }))
    if (options.context) {
      const logged = new Set<OutboxItem>(staged)
      yield* Inbox.modify(env.inbox, (s) => ({ ...s, outbox: Chunk.filter(s.outbox, (item) => !logged.has(item)) }))
    } else {
      yield* stageContexts(env, contexts)
    }
    yield* update(env, (s) => ({ ...s, unclosed: undefined }))
  }
)

/**
 * Finishes a close the store refused earlier (calls still owed are answered `ABORTED`, or `ABORTED_BEFORE_DISPATCH`
 * when never logged). Runs inside a section's transaction `tx`, before the agent appends anything outside a turn.
 */
export const repairLocked = (env: Env, tx: SessionLog.Transaction): Effect.Effect<void, SessionLog.SessionLogError> =>
  Effect.flatMap(read(env), ({ unclosed }) =>
    unclosed === undefined
      ? Effect.void
      : Effect.flatMap(env.log.state, (log) =>
        closeLocked(env, tx, unclosed, {
          finished: new Map(),
          dispatched: new Set(log.owed.flatMap((owed) => owed.callSeq === undefined ? [] : [owed.callId]))
        }, { context: false })))
