/**
 * Durable approvals (ADR 0054, R164–R170): a call whose approval needs a person is recorded (`approval/requested`,
 * durable) before anyone is asked, listed, and answered by call id — by a person through `approve`, or by the
 * timeout policy on the `Clock`. Whoever takes the pending entry first answers it (one `Ref.modify`), so a call is
 * answered once. A call whose turn is still open waits on its entry's `Deferred`; a call a restart cut (its turn
 * closed by crash repair, `APPROVAL_PENDING`) has none: `toolCalls.ts` runs it when it is allowed.
 */
import type { Approval, Ids } from "@harness/domain"
import { Clock, Deferred, Duration, Effect, Fiber, Ref } from "effect"
import type { Env } from "./env.js"
import { publish } from "./live.js"
import type { ApprovalAnswered, ApprovalEntry, Approvals } from "./state.js"

type Answered = ApprovalAnswered
type Entry = ApprovalEntry

/** Makes the empty set. */
export const make: Effect.Effect<Approvals> = Ref.make<ReadonlyMap<string, Entry>>(new Map())

/** The pending approvals now, in request order. */
export const list = (env: Env): Effect.Effect<ReadonlyArray<Approval.PendingApproval>> =>
  Effect.map(Ref.get(env.approvals), (entries) => [...entries.values()].map((entry) => entry.pending))

/** Takes the pending entry of `callId` away (at most one taker wins it), or `undefined`. */
export const take = (env: Env, callId: string): Effect.Effect<Entry | undefined> =>
  Ref.modify(env.approvals, (entries) => {
    const entry = entries.get(callId)
    if (entry === undefined) return [undefined, entries]
    const rest = new Map(entries)
    rest.delete(callId)
    return [entry, rest]
  })

export const put = (env: Env, entry: Entry): Effect.Effect<void> =>
  Ref.update(env.approvals, (entries) => new Map(entries).set(entry.pending.callId, entry))

/** Records an answer (`approval/answered`) and makes it durable before anything acts on it; publishes it. */
export const record = (
  env: Env,
  callId: Ids.ToolCallId,
  answered: Answered
) =>
  Effect.zipRight(
    Effect.zipRight(
      env.log.recordInbox([{
        type: "approval/answered",
        callId,
        decision: answered.decision,
        ...(answered.reason === undefined ? {} : { reason: answered.reason }),
        by: answered.by
      }]),
      env.log.flush
    ),
    publish(env, { type: "agent/approval/answered", callId, decision: answered.decision, by: answered.by })
  )

/**
 * Denies the call when its deadline passes, if it is still pending then (the timeout policy, on the `Clock`). A call
 * whose turn a restart cut is handed to `cut`.
 */
const expireAt = Effect.fnUntraced(function*(
  env: Env,
  pending: Approval.PendingApproval,
  cut: (pending: Approval.PendingApproval, answered: Answered) => Effect.Effect<void>
) {
  if (pending.deadline === undefined) return
  const now = yield* Clock.currentTimeMillis
  yield* Effect.sleep(Duration.millis(Math.max(0, pending.deadline - now)))
  const entry = yield* take(env, pending.callId)
  if (entry === undefined) return
  const answered: Answered = { decision: "deny", reason: "nobody answered in time", by: "timeout" }
  const written = yield* Effect.either(record(env, pending.callId, answered))
  if (written._tag === "Left") {
    yield* Effect.logError("the session log refused an approval's timeout", written.left)
  }
  if (entry.waiting !== undefined) yield* Deferred.succeed(entry.waiting, answered)
  else yield* cut(pending, answered)
})

/**
 * Closes the approval of a call whose wait ended without an answer (a cancel interrupted it): the call is never run,
 * so its approval is closed too; the record rides with the close's commit (a cancel has no barrier, R105).
 */
const closeUnanswered = Effect.fnUntraced(function*(env: Env, callId: Ids.ToolCallId) {
  if ((yield* take(env, callId)) === undefined) return
  yield* env.log.recordInbox([{ type: "approval/answered", callId, decision: "deny", by: "cancel" }])
    .pipe(Effect.catchAll((error) => Effect.logError("the session log refused an approval's close", error)))
  yield* publish(env, { type: "agent/approval/answered", callId, decision: "deny", by: "cancel" })
})

/**
 * Asks a person about a call of the open turn (R164, R165): records `approval/requested` durably, lists and
 * publishes it, then waits for the answer — a person's (`approve`) or the timeout policy's. Contract: interrupted
 * (a cancel), the entry is withdrawn and the call is answered by the turn's close as any undispatched call is.
 */
export const ask = Effect.fnUntraced(function*(
  env: Env,
  call: {
    readonly turn: number
    readonly step: number
    readonly callId: Ids.ToolCallId
    readonly name: string
    readonly arguments: string
  }
) {
  const now = yield* Clock.currentTimeMillis
  const after = env.options.approvalTimeout
  const deadline = after === undefined ? undefined : now + Duration.toMillis(Duration.decode(after))
  const pending: Approval.PendingApproval = {
    callId: call.callId,
    turn: call.turn,
    step: call.step,
    name: call.name,
    arguments: call.arguments,
    requestedAt: now,
    ...(deadline === undefined ? {} : { deadline }),
    live: true
  }
  const waiting = yield* Deferred.make<Answered>()
  yield* env.log.recordInbox([{
    type: "approval/requested",
    callId: call.callId,
    turn: call.turn,
    step: call.step,
    name: call.name,
    arguments: call.arguments,
    ...(deadline === undefined ? {} : { deadline })
  }])
  // Durable before anyone is asked: a restart finds the call pending (R166).
  yield* env.log.flush
  yield* put(env, { pending, waiting })
  yield* publish(env, { type: "agent/approval/requested", approval: pending })
  const timer = yield* Effect.forkIn(expireAt(env, pending, () => Effect.void), env.fibers)
  return yield* Deferred.await(waiting).pipe(
    Effect.onExit(() => Effect.zipRight(Fiber.interrupt(timer), closeUnanswered(env, call.callId)))
  )
})

/**
 * Restores the approvals a resumed session left pending (R167): each `approval/requested` with no
 * `approval/answered`, in request order, listed with `live: false` (crash repair closed its turn) and published;
 * a deadline still runs on the `Clock`, handing an expired call to `cut`. The log keeps them (R237): a long session
 * is not read back for them.
 */
export const restore = Effect.fnUntraced(function*(
  env: Env,
  cut: (pending: Approval.PendingApproval, answered: Answered) => Effect.Effect<void>
) {
  for (const requested of yield* env.log.pendingApprovals) {
    const pending: Approval.PendingApproval = {
      callId: requested.callId,
      turn: requested.turn,
      step: requested.step,
      name: requested.name,
      arguments: requested.arguments,
      requestedAt: requested.time,
      ...(requested.deadline === undefined ? {} : { deadline: requested.deadline }),
      live: false
    }
    yield* put(env, { pending, waiting: undefined })
    yield* publish(env, { type: "agent/approval/requested", approval: pending })
    yield* Effect.forkIn(expireAt(env, pending, cut), env.fibers)
  }
})
