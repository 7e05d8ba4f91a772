/**
 * The records that close an open turn, computed in one place from the log's own state: the `tool/result`s still
 * owed by the open step (in model order), `step/end` if a step is open, and `turn/end` with a given reason. The
 * agent's cancel and dispose path and the log's crash repair (R106) both use it, so a turn is closed the same way
 * whoever closes it.
 *
 * @since 0.0.0
 */
import type { Content, SessionEvent, Turn } from "@harness/domain"
import type { LogState, OwedCall } from "./LogCheck.js"

/**
 * How one owed call is answered.
 *
 * - `content`, `isError`, `error`, `meta`: the `tool/result`'s own fields.
 * - `recordCall`: for a call that was never recorded (`callSeq` undefined: it exists only as a block of the
 *   assistant message), write a synthetic `tool/call` just before the result, so the transcript pairs every call
 *   (the agent's cancel path does this, R72). Without it the result stands alone, which the enclosure rules allow
 *   only for crash repair's `TOOL_NOT_STARTED` code. Ignored for a recorded call.
 *
 * @since 0.0.0
 * @category models
 */
export interface Answer {
  readonly content: ReadonlyArray<Content.TextBlock>
  readonly isError: boolean
  readonly error?: { readonly name: string; readonly code: string } | undefined
  readonly meta?: SessionEvent.SessionEventInputOf<"tool/result">["data"]["meta"] | undefined
  readonly recordCall?: boolean | undefined
}

/**
 * An owed call with the turn and step it belongs to.
 *
 * @since 0.0.0
 * @category models
 */
export interface OwedCallAt extends OwedCall {
  readonly turn: number
  readonly step: number
}

/**
 * Options of {@link close}.
 *
 * @since 0.0.0
 * @category models
 */
export interface CloseOptions {
  /** The `turn/end` reason. */
  readonly reason: Turn.TurnEndReason
  /** How each owed call is answered (default {@link repairAnswer}: the crash-repair answers of R106). */
  readonly answer?: ((call: OwedCallAt) => Answer) | undefined
  /**
   * Records to write after the owed results and before `step/end` (e.g. the agent's staged context after a
   * default cancel). Contract: they must not open or close a turn or step; they shift the `seq`s of what follows.
   */
  readonly afterResults?: ReadonlyArray<SessionEvent.SessionEventInput> | undefined
}

import * as internal from "./internal/closers.js"

/**
 * The text of crash repair's `TOOL_OUTCOME_UNKNOWN` result (R106): the call was recorded, so it may have run.
 *
 * @since 0.0.0
 * @category constants
 */
export const outcomeUnknownText: string = internal.outcomeUnknownText

/**
 * The text of crash repair's `TOOL_NOT_STARTED` result (R106): the call was never recorded, so it never ran.
 *
 * @since 0.0.0
 * @category constants
 */
export const notStartedText: string = internal.notStartedText

/**
 * The text of crash repair's `APPROVAL_PENDING` result (ADR 0054): the call waited for approval when the session was
 * cut, so it has not run, and its approval stays pending.
 *
 * @since 0.0.0
 * @category constants
 */
export const approvalPendingText: string = internal.approvalPendingText

/**
 * The text of crash repair's `TOOL_REPLAY_PENDING` result (R172): the call was running when the session was cut,
 * its tool is safe to repeat, so the resumed agent runs it again and sends its result as a message.
 *
 * @since 0.0.0
 * @category constants
 */
export const replayPendingText: string = internal.replayPendingText

/**
 * Crash repair's answer to a recorded call whose approval was still pending (ADR 0054): `APPROVAL_PENDING`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const approvalPendingAnswer: Answer = internal.approvalPendingAnswer

/**
 * An error answer with one text block `Error: <message>` and `error: { name, code }` (`name` defaults to
 * `ToolError`), the shape the agent writes for its own error results.
 *
 * @since 0.0.0
 * @category constructors
 */
export const errorAnswer: (
  code: string,
  message: string,
  options?: { readonly name?: string | undefined; readonly recordCall?: boolean | undefined }
) => Answer = internal.errorAnswer

/**
 * Crash repair's answer (R106): `TOOL_OUTCOME_UNKNOWN` for a recorded call (it may have run), `TOOL_NOT_STARTED`
 * for a call that was never recorded (it cannot have run), without a synthetic `tool/call`; `TOOL_REPLAY_PENDING`
 * for a recorded call whose `tool/call` says `replay: "safe"` (R172: the resumed agent runs it again).
 *
 * @since 0.0.0
 * @category constructors
 */
export const repairAnswer: (call: OwedCall) => Answer = internal.repairAnswer

/**
 * The records that close the log's open turn, in the order they must be appended.
 *
 * Contract: pure. Empty when no turn is open. Otherwise, for every call of `state.owed` (model order) an optional
 * synthetic `tool/call` (see {@link Answer.recordCall}) and its `tool/result` (`sourceEventSeqs` = the call's
 * `seq`), then `afterResults`, then `step/end` if a step is open, then `turn/end { reason }`. The `seq`s cited by
 * `sourceEventSeqs` assume the records are appended in order, starting at `state.nextSeq`, with nothing in between
 * (append them with one `SessionLog` `appendAll`). Appended so, they pass `LogCheck.step` and leave no turn open.
 *
 * @since 0.0.0
 * @category closing
 */
export const close: (state: LogState, options: CloseOptions) => ReadonlyArray<SessionEvent.SessionEventInput> =
  internal.close

/**
 * Crash repair's closers (R106): {@link close} with `turn/end { interrupted }` and the {@link repairAnswer}s.
 *
 * @since 0.0.0
 * @category closing
 */
export const repair: (state: LogState) => ReadonlyArray<SessionEvent.SessionEventInput> = internal.repair
