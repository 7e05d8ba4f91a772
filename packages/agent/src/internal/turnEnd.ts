/** A turn's close: `turn/end` (R54, R57) and the budget warning before a hard stop (R159). */
import type { Turn as TurnT } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Effect, Ref } from "effect"
import type { Progress } from "./activity.js"
import * as Budgets from "./budget.js"

import type { Env } from "./env.js"
import * as Lifecycle from "./lifecycle.js"
import { appendOwn, publish } from "./live.js"
import { drain, hasSteering } from "./outbox.js"
import { transition, update } from "./state.js"

/**
 * Closes the window and appends `turn/end`, atomically (R57: `acceptsNextStep` is false before `turn/end`).
 *
 * Contract: the turn ends with `reason` even when the store refuses the `turn/end`: the refusal is reported once
 * (`agent/error`, `SESSION_LOG`), the turn settles with `reason`, and the agent remembers it so that the repair
 * before its next out-of-turn append writes that same `turn/end` (see `repairLocked`).
 */
export const endTurnLocked = Effect.fnUntraced(
  function*(
    env: Env,
    tx: SessionLog.Transaction,
    progress: Ref.Ref<Progress>,
    turn: number,
    reason: TurnT.TurnEndReason
  ) {
    yield* transition(env, "windowClosed", Lifecycle.windowClosed)
    const written = yield* Effect.either(appendOwn(env, tx, [{ type: "turn/end", data: { turn, reason } }]))
    if (written._tag === "Left") {
      yield* update(env, (s) => ({ ...s, unclosed: reason }))
      yield* publish(env, {
        type: "agent/error",
        turn,
        step: (yield* Ref.get(progress)).step,
        error: { message: `the turn could not be closed: ${written.left.message}`, code: "SESSION_LOG" }
      })
    }
    yield* Ref.update(progress, (p) => ({ ...p, ended: reason }))
  }
)

export const turnReason = (progress: Pick<Progress, "maxTokens">): TurnT.TurnEndReason =>
  progress.maxTokens ? { kind: "max-tokens" } : { kind: "completed" }

/** The warning one step before a hard stop (R159): a `user/message` from the `budget` plugin, in the open turn. */
export const appendWarning = (env: Env, tx: SessionLog.Transaction, text: string) =>
  appendOwn(env, tx, [{
    type: "user/message",
    data: { content: [{ type: "text", text }], source: Budgets.warningSource }
  }])

/**
 * D3, then ends the turn, in one transaction `tx`, unless D3 drained steering or steering is staged for it (R54); returns
 * whether it ended. One section, so no steering can slip in between.
 */
export const endUnlessSteeringLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  progress: Ref.Ref<Progress>,
  turn: number
) {
  if ((yield* drain(env, tx, { turn })).steering) return false
  if (yield* hasSteering(env)) return false
  yield* endTurnLocked(env, tx, progress, turn, turnReason(yield* Ref.get(progress)))
  return true
})
