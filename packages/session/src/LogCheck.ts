/**
 * The log's invariants as pure functions: the enclosure rules (R100) as a fold that the log runs before every
 * append, and `checkLog`, which runs the same fold over a whole log and returns every violation. Property tests
 * of the agent use `checkLog` on every log they build.
 *
 * @since 0.0.0
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { SessionLogError as SessionLogErrorSchema } from "@harness/domain"
import * as internal from "./internal/logCheck.js"

/**
 * The name of each rule a log can break (defined in `@harness/domain`, beside the `SessionLogError` that names
 * it, so the agent's operations can carry that error as a schema).
 *
 * @since 0.0.0
 * @category schemas
 */
export const Rule = SessionLogErrorSchema.Rule
/**
 * @since 0.0.0
 * @category models
 */
export type Rule = SessionLogErrorSchema.Rule

/**
 * One broken rule, at the entry that broke it: the shape every checker of a run reports — {@link checkLog} and
 * {@link step} over the durable log, and the testkit's `Invariants` over a run's live events and log (with their
 * own rule names for `R`).
 *
 * - `rule`: the rule broken.
 * - `in`: the list the offending entry is in: the durable log, or an agent's live events.
 * - `index`: the entry's position in that list; the list's length when what broke the rule is that something never
 *   happened. ({@link step} gives the position the refused event would take: `nextSeq`.)
 * - `seq`: the offending durable event's `seq`, when the entry is one (in a log from seq 0 without gaps, the same as
 *   `index`); absent for a live event that is not a durable one, and at the end of a list.
 *
 * @since 0.0.0
 * @category models
 */
export interface Violation<R extends string = Rule> {
  readonly rule: R
  readonly in: "log" | "events"
  readonly index: number
  readonly seq?: number | undefined
  readonly message: string
}

/**
 * A {@link Violation} of the log's own rules: always in the log, always at an event with a `seq`.
 *
 * @since 0.0.0
 * @category models
 */
export interface LogViolation extends Violation<Rule> {
  readonly in: "log"
  readonly seq: number
}

/**
 * A tool call of the open step that is still owed a result.
 *
 * @since 0.0.0
 * @category models
 */
export interface OwedCall {
  readonly callId: Ids.ToolCallId
  readonly name: string
  /** The model's raw argument text. */
  readonly arguments: string
  /** The `seq` of the call's `tool/call` event, or `undefined` when the call was never recorded (only its block in
   * the assistant message exists: crash repair answers it `TOOL_NOT_STARTED`, not `TOOL_OUTCOME_UNKNOWN`). */
  readonly callSeq: number | undefined
  /** `"safe"` when the call's `tool/call` says its tool is safe to repeat (R172): crash repair answers it
   * `TOOL_REPLAY_PENDING`. */
  readonly replay?: "safe" | undefined
}

/**
 * Every tool call of the open step, answered or not: the bookkeeping of the tool-call rules.
 *
 * @since 0.0.0
 * @category models
 */
export interface StepCall extends OwedCall {
  /** The `seq` of the `tool/result` that answered it, if any. */
  readonly resultSeq: number | undefined
  /** Whether it is a `tool-call` block of one of the step's assistant messages. */
  readonly inMessage: boolean
}

/**
 * The enclosure state after a prefix of the log.
 *
 * @since 0.0.0
 * @category models
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
  /**
   * The latest `compaction`, if any (ADR 0052): the number of folded history messages its summary replaces and the
   * summary. A snapshot keeps it beside the header, so a log opened from one derives its history past it.
   */
  readonly compaction: { readonly messages: number; readonly summary: string } | undefined
  /**
   * The ranges of folded history messages `turn/rollback` records left out since the latest compaction (ADR 0061), as
   * `History` folds them: absolute `[from, to)` pairs, `open` while the rolled-back turn has not ended. A snapshot
   * keeps them beside the compaction.
   */
  readonly dropped: { readonly ranges: ReadonlyArray<readonly [number, number]>; readonly open: boolean } | undefined
  /**
   * Every tool call of the open step in model order: the `tool-call` blocks of its assistant messages in content
   * order, then the calls known only from `tool/call` events, in log order. Empty when no step is open.
   */
  readonly calls: ReadonlyArray<StepCall>
  /**
   * The calls of {@link calls} still owed a `tool/result`, in the same order: what the agent's cancellation
   * finalizer answers with synthetic results, and what crash repair closes. Empty when no step is open.
   */
  readonly owed: ReadonlyArray<OwedCall>
}

/**
 * The state of an empty log.
 *
 * @since 0.0.0
 * @category utils
 */
export const initial: LogState = internal.initial

/**
 * Checks one event against the state after the events before it: its `seq` must be `state.nextSeq`, and it must
 * keep the enclosure rules (R100). The checkLog-only rules (`unanswered-tool-call`, `unclosed-turn`) are not
 * append-time rules and never refuse an event.
 *
 * Contract: pure and cheap (O(1), or O(tool calls of the open step) for tool events; no scan of the log). Returns
 * the next state, or the violation that refuses the event (the caller's state then stands unchanged).
 *
 * @since 0.0.0
 * @category utils
 */
export const step: (
  state: LogState,
  event: SessionEvent.SessionEvent
) => { readonly state: LogState } | { readonly violation: LogViolation } = internal.step

/**
 * Every violation in a whole log, in `seq` order. It runs the same fold as {@link step}.
 *
 * Contract: pure; continues after a violation (so one bad event does not hide later ones: a refused event is
 * skipped, except that a misnumbered or nested `turn/start` / `step/start` still opens its turn or step and a
 * matching `turn/end` still closes its turn); also reports the checkLog-only rules: `unanswered-tool-call` (one per
 * call owed at a `step/end`) and `unclosed-turn` (at the last event).
 *
 * @since 0.0.0
 * @category utils
 */
export const checkLog: (events: ReadonlyArray<SessionEvent.SessionEvent>) => ReadonlyArray<LogViolation> =
  internal.checkLog
