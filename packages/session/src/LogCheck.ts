/**
 * The log's invariants as pure functions: the enclosure rules (R100) as a fold that the log runs before every
 * append, and `checkLog`, which runs the same fold over a whole log and returns every violation. Property tests
 * of the agent use `checkLog` on every log they build.
 *
 * @since 0.0.0
 */
import type { SessionEvent } from "@harness/domain"

/**
 * The name of each rule a log can break.
 *
 * - `seq-gap`: `seq` is not the previous one plus 1 (the first is 0).
 * - `outside-turn`: an event other than `user/message` outside a turn.
 * - `turn-number`: a `turn/start` whose number is not the previous turn's plus 1.
 * - `nested-turn`: a `turn/start` while a turn is open.
 * - `turn-end-mismatch`: a `turn/end` that does not name the open turn (or with no turn open).
 * - `turn-end-step-open`: a `turn/end` while a step is open.
 * - `step-number`: a `step/start` whose number is not the previous step's plus 1 in this turn (from 1).
 * - `nested-step`: a `step/start` while a step is open.
 * - `step-end-mismatch`: a `step/end` that does not name the open step.
 * - `wrong-turn`: an event naming a turn that is not the open one (e.g. an event of a closed turn).
 * - `outside-step`: an assistant chunk or message, tool call or fresh tool result outside the step it names.
 * - `unknown-tool-call`: a `tool/result` with no prior `tool/call` of that id in the same step (crash repair's
 *   `TOOL_NOT_STARTED` result excepted).
 * - `duplicate-tool-call`: a second `tool/call` with the same id in one step.
 * - `duplicate-tool-result`: a second `tool/result` for the same call.
 * - `unanswered-tool-call` (checkLog only): at `step/end`, a `tool/call`, or a tool call of the step's assistant
 *   message, without a `tool/result`.
 * - `unclosed-turn` (checkLog only): the log ends inside a turn.
 *
 * @since 0.0.0
 */
export type Rule =
  | "seq-gap"
  | "outside-turn"
  | "turn-number"
  | "nested-turn"
  | "turn-end-mismatch"
  | "turn-end-step-open"
  | "step-number"
  | "nested-step"
  | "step-end-mismatch"
  | "wrong-turn"
  | "outside-step"
  | "unknown-tool-call"
  | "duplicate-tool-call"
  | "duplicate-tool-result"
  | "unanswered-tool-call"
  | "unclosed-turn"

/**
 * One broken rule, at the event that broke it.
 *
 * @since 0.0.0
 */
export interface Violation {
  readonly seq: number
  readonly rule: Rule
  readonly message: string
}

/**
 * The enclosure state after a prefix of the log.
 *
 * @since 0.0.0
 */
export interface LogState {
  /** The `seq` the next event gets. */
  readonly nextSeq: number
  /** The number of the last `turn/start` (0 if none): the next turn is `lastTurn + 1` (R38, R134). */
  readonly lastTurn: number
  /** The open turn, if any. */
  readonly openTurn: number | undefined
  /** The last step number of the open turn (0 before its first step). */
  readonly lastStep: number
  /** The open step, if any. */
  readonly openStep: number | undefined
  /** The header of the last `request/header` event, if any (R51). */
  readonly header: SessionEvent.RequestHeader["header"] | undefined
}

/** @since 0.0.0 */
export declare const initial: LogState

/**
 * Checks one event against the state after the events before it.
 *
 * Contract: pure; returns the next state, or the violation that refuses the event (append-time rules only; the
 * state is then unchanged).
 *
 * @since 0.0.0
 */
export declare const step: (
  state: LogState,
  event: SessionEvent.SessionEvent
) => { readonly state: LogState } | { readonly violation: Violation }

/**
 * Every violation in a whole log, in `seq` order. Contract: pure; continues after a violation (so one bad event
 * does not hide later ones); also reports the checkLog-only rules.
 *
 * @since 0.0.0
 */
export declare const checkLog: (events: ReadonlyArray<SessionEvent.SessionEvent>) => ReadonlyArray<Violation>
