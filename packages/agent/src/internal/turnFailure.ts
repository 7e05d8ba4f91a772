/**
 * A turn's own failure (R59) — a hook, the system prompt, a log append — as opposed to a model-request failure
 * (R74–R75): the activity fails with it, and the driver closes the turn with `turn/end { kind: "error" }`.
 */
import type { SessionLog } from "@harness/session"
import { Cause, Data } from "effect"

/**
 * A turn failure that is not a model-request failure (R59): a hook, the system prompt, a log append.
 */
export class TurnFailure extends Data.TaggedError("TurnFailure")<{
  readonly step: number
  readonly message: string
  readonly code?: string | undefined
}> {}

/** A `TurnFailure` for a failed step hook, request hook, system prompt or turn-stopping hook. */
export const failTurn = (step: number, what: string) => (cause: Cause.Cause<unknown>) =>
  new TurnFailure({ step, message: `${what}: ${Cause.pretty(cause)}` })

/** A `TurnFailure` for a refused append (`SESSION_LOG`). */
export const logFailure = (step: number) => (error: SessionLog.SessionLogError) =>
  new TurnFailure({ step, message: `the session log refused an append: ${error.message}`, code: "SESSION_LOG" })
