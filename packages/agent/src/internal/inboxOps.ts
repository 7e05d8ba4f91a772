/** The operations on pending items: `inbox`, `withdraw`, and the changes in place (`edit`, `move`, `promote`, `demote`). */
import type { Ids as IdsT, Inbox as InboxT, Operations } from "@harness/domain"
import { Ids } from "@harness/domain"
import { Effect, Option, Schema } from "effect"
import { InboxChangeError } from "../AgentError.js"
import { ensureDriver } from "./driver.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import * as Lifecycle from "./lifecycle.js"
import { publish } from "./live.js"
import * as Message from "./message.js"
import type { State } from "./state.js"
import { barrier, locked, read, recordInbox } from "./state.js"

const checkId = Message.decodeInput(Ids.AgentMessageId, "message id")

/** Whether staged steering is waking work now: it joins the open activity, or was stranded by a closed one. */
export const steeringWakes = (state: State, inbox: Inbox.Snapshot): boolean =>
  Lifecycle.activity(state.lifecycle) !== undefined || inbox.stranded

/**
 * Withdraws one pending item (ADR 0009). Must run holding the lock.
 */
const withdrawLocked: (env: Env, id: IdsT.AgentMessageId) => Effect.Effect<InboxT.WithdrawResult> = Effect.fnUntraced(
  function*(env: Env, id: IdsT.AgentMessageId) {
    const state = yield* read(env)
    const withdrawn = Lifecycle.isDisposed(state.lifecycle)
      ? Option.none()
      : yield* Inbox.withdraw(env.inbox, id, steeringWakes(state, yield* Inbox.get(env.inbox)))
    if (Option.isNone(withdrawn)) return { _tag: "NotPending", id }
    const { item, message } = withdrawn.value
    yield* recordInbox(env, [{ type: "inbox/settled", id, fate: "withdrawn" }])
    yield* publish(env, { type: "agent/inbox/discard", messages: [message], reason: "withdraw" })
    return { _tag: "Withdrawn", item }
  }
)

/** `inbox`: the pending items now, read under the lock. */
export const inbox = (env: Env) => locked(env, () => inboxLocked(env))

const inboxLocked = Effect.fnUntraced(function*(env: Env) {
  const snapshot = yield* Inbox.get(env.inbox)
  return yield* Inbox.list(env.inbox, steeringWakes(yield* read(env), snapshot))
})

/**
 * `withdraw`: a withdrawal is durable when it returns (a crash must not bring back what the sender took back); a
 * cancel has no barrier (it must never wait for a store that is down): its discards are durable at the next one.
 */
export const withdraw = (
  env: Env,
  id: Operations.Withdraw["id"]
) =>
  Effect.flatMap(
    checkId(id),
    (checked) =>
      Effect.tap(locked(env, () => withdrawLocked(env, checked)), (result) =>
        result._tag === "Withdrawn"
          ? barrier(env).pipe(
            Effect.catchAll((error) => Effect.logWarning("the withdrawal could not be made durable", error))
          )
          : Effect.void)
  )

// -------------------------------------------------------------------------------------------------------------
// Changing a pending item in place (ADR 0050): `edit`, `move`, `promote`, `demote`. Each is decided holding the
// lock, so the driver cannot claim (nor a drain log) the item at the same time; each records its change durably
// (`inbox/revised`) and publishes it live, and returns once the record is durable, as `withdraw` does.

const checkPosition = Message.decodeInput(Schema.NonNegativeInt, "position")

/** The refusal for an id that is not pending (or not pending where the operation needs it). */
const refusal = Effect.fnUntraced(function*(
  env: Env,
  id: IdsT.AgentMessageId,
  operation: string,
  where?: "queued" | "steering"
) {
  if (where === "steering") {
    return new InboxChangeError({ id, reason: "not-queued", message: `cannot ${operation} ${id}: it is steering` })
  }
  if (where === "queued") {
    return new InboxChangeError({
      id,
      reason: "not-steering",
      message: `cannot ${operation} ${id}: it is a queued turn`
    })
  }
  const known = yield* Inbox.isKnown(env.inbox, id, env.log.hasMessage).pipe(Effect.orElseSucceed(() => true))
  return known
    ? new InboxChangeError({
      id,
      reason: "taken",
      message: `cannot ${operation} ${id}: it is no longer pending (claimed, logged, discarded or withdrawn)`
    })
    : new InboxChangeError({ id, reason: "unknown", message: `cannot ${operation} ${id}: no such message` })
})

const disposedChange = (id: IdsT.AgentMessageId, operation: string) =>
  new InboxChangeError({ id, reason: "disposed", message: `cannot ${operation} ${id}: the agent was disposed` })

/** Runs a change under the lock, then waits for its record to be durable (a barrier failure is only logged). */
const changed = <A, E>(env: Env, effect: Effect.Effect<A, E>) =>
  Effect.tap(
    locked(env, () => effect),
    () =>
      barrier(env).pipe(
        Effect.catchAll((error) => Effect.logWarning("the inbox change could not be made durable", error))
      )
  )

const editLocked = Effect.fnUntraced(function*(env: Env, id: IdsT.AgentMessageId, data: Message.UserMessageData) {
  const state = yield* read(env)
  if (Lifecycle.isDisposed(state.lifecycle)) return yield* disposedChange(id, "edit")
  const done = yield* Inbox.edit(env.inbox, id, data, steeringWakes(state, yield* Inbox.get(env.inbox)))
  if (Option.isNone(done)) return yield* (yield* refusal(env, id, "edit"))
  const { item, message } = done.value
  const change = { _tag: "edit" as const, content: message.content, source: message.source }
  yield* recordInbox(env, [{ type: "inbox/revised", id, change }])
  yield* publish(env, { type: "agent/inbox/edit", message })
  return item
})

/** `edit(id, message)`: the message is decoded as a send's is, then the item changed under the lock. */
export const edit = (env: Env, id: Operations.Edit["id"], input: Operations.Edit["message"]) =>
  Effect.flatMap(
    Effect.zip(checkId(id), Message.decodeUserMessageData(input)),
    ([checked, data]) => changed(env, editLocked(env, checked, data))
  )

const moveLocked = Effect.fnUntraced(function*(env: Env, id: IdsT.AgentMessageId, position: number) {
  const state = yield* read(env)
  if (Lifecycle.isDisposed(state.lifecycle)) return yield* disposedChange(id, "move")
  const done = yield* Inbox.move(env.inbox, id, position, steeringWakes(state, yield* Inbox.get(env.inbox)))
  if (Option.isNone(done)) return yield* (yield* refusal(env, id, "move"))
  const { before, pending, position: at } = done.value
  yield* recordInbox(env, [{
    type: "inbox/revised",
    id,
    change: before === undefined ? { _tag: "move" } : { _tag: "move", before }
  }])
  yield* publish(env, { type: "agent/inbox/move", message: pending.message, position: at })
  return pending.item
})

/** `move(id, position)`. */
export const move = (env: Env, id: Operations.Move["id"], position: Operations.Move["position"]) =>
  Effect.flatMap(
    Effect.zip(checkId(id), checkPosition(position)),
    ([checked, at]) => changed(env, moveLocked(env, checked, at))
  )

const placeLocked = Effect.fnUntraced(function*(env: Env, id: IdsT.AgentMessageId, to: "steering" | "queued") {
  const operation = to === "steering" ? "promote" : "demote"
  const { lifecycle } = yield* read(env)
  if (Lifecycle.isDisposed(lifecycle)) return yield* disposedChange(id, operation)
  if (to === "steering" && !Lifecycle.windowOpen(lifecycle)) {
    // Only a queued item can be promoted; say so first when the id is not one.
    const pending = (yield* Inbox.list(env.inbox, false)).find((item) => item.id === id)
    if (pending === undefined) return yield* (yield* refusal(env, id, operation))
    if (pending.placement === "steering") return yield* (yield* refusal(env, id, operation, "steering"))
    return yield* new InboxChangeError({
      id,
      reason: "no-open-turn",
      message: `cannot promote ${id}: no admission or turn is open to steer`
    })
  }
  const done = yield* (to === "steering" ? Inbox.promote(env.inbox, id) : Inbox.demote(env.inbox, id))
  if (Option.isNone(done)) return yield* (yield* refusal(env, id, operation))
  if (!done.value.moved) return yield* (yield* refusal(env, id, operation, done.value.where))
  const { item, message } = done.value.pending
  yield* recordInbox(env, [{ type: "inbox/revised", id, change: { _tag: "place", placement: to } }])
  yield* publish(env, { type: "agent/inbox/place", message, placement: to })
  // A demoted item is a waking queued turn: after the open turn, the driver claims it.
  if (to === "queued") yield* ensureDriver(env)
  return item
})

/** `promote(id)`: a queued turn joins the open admission or turn as steering. */
export const promote = (env: Env, id: Operations.Promote["id"]) =>
  Effect.flatMap(checkId(id), (checked) => changed(env, placeLocked(env, checked, "steering")))

/** `demote(id)`: steering not yet drained becomes a queued turn, last. */
export const demote = (env: Env, id: Operations.Demote["id"]) =>
  Effect.flatMap(checkId(id), (checked) => changed(env, placeLocked(env, checked, "queued")))
