/**
 * A turn's own failure (R59) — a hook, the system prompt, a log append — as opposed to a model-request failure
 * (R74–R75): the activity fails with it, and the driver closes the turn with `turn/end { kind: "error" }`.
 */
import type { Turn } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Cause, Chunk, Data, Predicate } from "effect"

/**
 * A turn failure that is not a model-request failure (R59): a hook, the system prompt, a log append.
 */
export class TurnFailure extends Data.TaggedError("TurnFailure")<{
  readonly step: number
  readonly message: string
  readonly code?: string | undefined
}> {}

/**
 * A turn stopped by its deadline (R158): the running step was interrupted on the `Clock`, and the driver closes the
 * turn with this `budget` reason (owed calls answered, like a cancel) instead of an error.
 */
export class BudgetStop extends Data.TaggedError("BudgetStop")<{ readonly reason: Turn.BudgetReason }> {}

/** A `TurnFailure` for a failed step hook, request hook, system prompt or turn-stopping hook. */
export const failTurn = (step: number, what: string) => (cause: Cause.Cause<unknown>) =>
  new TurnFailure({ step, message: `${what}: ${describeCause(cause)}` })

/** One failure or defect as a line: an error's name (or tag) and message, never its stack. */
const describeOne = (value: unknown): string => {
  if (value instanceof Error || (Predicate.isObject(value) && "message" in value)) {
    const tag = Predicate.hasProperty(value, "_tag") && typeof value._tag === "string" ? value._tag : undefined
    const name = tag ?? (value instanceof Error ? value.name : "Error")
    const message = Predicate.hasProperty(value, "message") && typeof value.message === "string" ? value.message : ""
    return message === "" ? name : `${name}: ${message}`
  }
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * What went wrong, for text that is logged durably or shown to the model (a tool's result, a turn's failure): each
 * failure and defect of `cause` by name and message, never a stack trace (whose frames name the host's absolute
 * paths) nor the cause's tree.
 */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const parts = [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]
  if (parts.length > 0) return parts.map(describeOne).join("; ")
  return Cause.isInterruptedOnly(cause) ? "interrupted" : "an unknown failure"
}

/** A `TurnFailure` for a refused append (`SESSION_LOG`). */
export const logFailure = (step: number) => (error: SessionLog.SessionLogError) =>
  new TurnFailure({ step, message: `the session log refused an append: ${error.message}`, code: "SESSION_LOG" })
