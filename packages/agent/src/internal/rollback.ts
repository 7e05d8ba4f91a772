/**
 * `whenBusy: "rollback"` (ADR 0061): the record that drops the open turn from the model's view. Written in the send's
 * critical section, inside that turn, before the turn is cancelled: the decision and the record are one append, so a
 * crash leaves both or neither. The log keeps every event; `History` and `LogState` fold the record.
 */
import type { Ids } from "@harness/domain"
import { History, type SessionLog } from "@harness/session"
import { Effect, Ref } from "effect"
import type { Env } from "./env.js"
import * as Lifecycle from "./lifecycle.js"
import { appendOwn } from "./live.js"
import { read } from "./state.js"

/**
 * Appends `turn/rollback { turn, by, from, through }` for the running activity's open turn, if it has one (an
 * admission, or a turn that already wrote its `turn/end`, has nothing to roll back). Must run holding the lock.
 * `through` is the folded history's length now; `from` is where the turn's own messages begin (the events since its
 * `turn/start`, folded). Reads the log's events: a rollback is rare, and may pay for a read-back after a snapshot.
 */
export const rollbackLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  by: Ids.AgentMessageId
) {
  const activity = Lifecycle.activity((yield* read(env)).lifecycle)
  if (activity === undefined) return
  const turn = (yield* Ref.get(activity.progress)).turn
  if (turn === undefined || (yield* env.log.state).openTurn !== turn) return
  const through = (yield* env.log.history).length
  const events = yield* env.log.events
  let start = events.length
  while (start > 0 && events[start - 1]!.type !== "turn/start") start--
  let own = History.empty
  for (let index = start; index < events.length; index++) own = History.fold(own, events[index]!)
  yield* appendOwn(env, tx, [{ type: "turn/rollback", data: { turn, by, from: through - own.length, through } }])
})
