/**
 * The delivery contract's invariants as pure folds over what an agent run left behind: its live events (as an
 * `EventRecorder` collects them, `session/event` republications included) and its durable log. Each check returns
 * every violation it finds — an empty list means the invariant held — so a property test can run them all after
 * every random run and say exactly which event broke what.
 *
 * The checks only read plain data: they need no agent, no runtime and no clock, so they also run on hand-made
 * event lists and on logs loaded from disk. They are folds over one scanner that keeps the turn and step context
 * (which turn is open, what triggered it, which step is open): {@link check} walks the live events once and the log
 * once for all of them. A violation has the same shape as the log's own (`LogCheck.Violation`), with the names
 * below as its `rule`.
 *
 * @since 0.0.0
 */
import type { AgentEvent, SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import * as checks from "./internal/checks.js"
import * as scan from "./internal/scan.js"

/**
 * The invariant a violation breaks.
 *
 * - `fifo-conservation` (R88): every enqueued id gets exactly one `dequeue` or one `discard` membership; the
 *   outstanding count never goes negative; nothing unknown is dequeued or discarded; injection never appears.
 * - `status-trace` (R23): `agent/status` starts from `idle`, alternates, never repeats; turns run while `running`.
 * - `steering-in-open-turn`: every `steering/message` names the turn that is open.
 * - `steering-joins-turn`: steering accepted into an open window is logged before that turn ends normally.
 * - `message-fate`: every accepted id ends in exactly one of logged, discarded, dropped at admission, pending.
 * - `injected-context`: every injected id is logged (once, as a `user/message`) or still staged.
 * - `one-send-one-turn` (R32): a queued prompt is logged inside a turn, as the only queued prompt of that turn.
 * - `settled-once` (R57): every turn that ends settles exactly once, unless a retry turn follows it at once.
 * - `admission-cancel` (R80): a prompt whose admission saw an effective cancel is dropped: its turn never opens.
 * - `admission-order` (R45): at a turn's opening, steering staged before its prompt was claimed precedes the prompt,
 *   steering accepted during its admission follows it.
 * - `no-discard`: no `agent/inbox/discard` of a cancel (one without a `reason`; the run cancelled only with
 *   `keepInbox`).
 * - `disposed-last`: `agent/disposed` is published once, as the last event.
 *
 * The log's own rules (R100, every turn closed included) are `LogCheck.Rule`s: {@link logWellFormed} reports them
 * as `LogCheck.checkLog` does.
 *
 * @since 0.0.0
 * @category models
 */
export type Invariant =
  | "fifo-conservation"
  | "status-trace"
  | "steering-in-open-turn"
  | "steering-joins-turn"
  | "message-fate"
  | "injected-context"
  | "one-send-one-turn"
  | "settled-once"
  | "admission-cancel"
  | "admission-order"
  | "no-discard"
  | "disposed-last"

/**
 * One broken invariant, or one broken rule of the log: `LogCheck.Violation` with an {@link Invariant} or a
 * `LogCheck.Rule` as its `rule`. `index` is the position of the offending entry in the list named by `in` (the
 * live events or the log); a violation found only at the end of the run (something never happened) has `index`
 * equal to that list's length. `seq` is there when the entry is a durable event (of the log, or republished as a
 * `session/event`).
 *
 * @since 0.0.0
 * @category models
 */
export type Violation = LogCheck.Violation<Invariant | LogCheck.Rule>

/**
 * Where an accepted message ended up.
 *
 * - `logged`: a `user/message` or `steering/message` carries its id.
 * - `discarded`: a `cancel` (or disposal) reported it in an `agent/inbox/discard`.
 * - `dropped`: it was claimed as a prompt (`dequeue`) but never logged: admission blocked, failed or was cancelled.
 * - `pending`: none of these yet (queued, parked, or staged).
 *
 * @since 0.0.0
 * @category models
 */
export type Fate = "logged" | "discarded" | "dropped" | "pending"

type Events = ReadonlyArray<AgentEvent.AgentEvent>
type Log = ReadonlyArray<SessionEvent.SessionEvent>

const only = (
  lists: { readonly events?: Events; readonly log?: Log },
  check: scan.Check<Invariant>
): ReadonlyArray<Violation> => scan.run({ events: lists.events ?? [], log: lists.log ?? [] }, [check])

/**
 * FIFO conservation (R88) over the live events.
 *
 * Contract: reports an id enqueued twice; a `dequeue` or `discard` of an id never enqueued, or already dequeued or
 * discarded (so each enqueued id has at most one terminal event); an id repeated within one `discard`; the
 * outstanding count (enqueues − dequeues − discarded items) going negative; any inbox event about an id in
 * `injected` (injection never enters a FIFO, R29). When `outstanding` is given, the count at the end must equal it
 * (0 after disposal, which discards everything pending); the violation names the ids still outstanding.
 *
 * @since 0.0.0
 * @category invariants
 */
export const fifoConservation = (
  events: Events,
  options: { readonly injected?: Iterable<string> | undefined; readonly outstanding?: number | undefined } = {}
): ReadonlyArray<Violation> => only({ events }, checks.fifoConservation(options))

/**
 * Status trace legality (R23) over the live events.
 *
 * Contract: the agent starts `idle` (it publishes no status until it changes), so the trace must go running → idle
 * → running …, never publishing the status it already has; a `turn/start` or `agent/settled` never happens while the
 * status is `idle`, and `idle` is never published while a turn is open. When `end` is given, the last status must
 * be it (`idle` once the run is quiescent or disposed).
 *
 * @since 0.0.0
 * @category invariants
 */
export const statusTrace = (
  events: Events,
  options: { readonly end?: AgentEvent.AgentStatus | undefined } = {}
): ReadonlyArray<Violation> => only({ events }, checks.statusTrace(options))

/**
 * Steering never lands in a closed turn: every `steering/message` of the log names the turn that is open.
 *
 * @since 0.0.0
 * @category invariants
 */
export const steeringInOpenTurn = (log: Log): ReadonlyArray<Violation> => only({ log }, checks.steeringInOpenTurn())

/**
 * Steering joins its turn: steering accepted while a turn is open (or while the prompt that opens it is admitted)
 * is logged before that turn ends. A turn that ends `aborted`, `disposed`, `interrupted` or in `error` is exempt:
 * input staged in it stays staged (R56, R81) and must join the next turn that ends normally instead. Reads only
 * the live events (`session/event` republications included).
 *
 * Contract: at each `turn/end` with reason `completed` or `max-tokens`, every steering id enqueued (placement
 * `steering`) before it and neither logged as `steering/message` nor discarded is reported, once.
 *
 * @since 0.0.0
 * @category invariants
 */
export const steeringJoinsTurn = (events: Events): ReadonlyArray<Violation> =>
  only({ events }, checks.steeringJoinsTurn())

/**
 * The fate of each id in `ids`, from the live events and the log: the first of its fates (see {@link Fate});
 * `pending` when it has none. {@link messageFates} reports ids with more than one.
 *
 * @since 0.0.0
 * @category invariants
 */
export const fates = (events: Events, log: Log, ids: Iterable<string>): ReadonlyMap<string, Fate> => {
  const { all, check } = checks.trails()
  scan.run({ events, log }, [check])
  const out = new Map<string, Fate>()
  for (const id of ids) out.set(id, checks.fatesOf(all.get(id))[0] ?? "pending")
  return out
}

/**
 * Message fates: every id in `accepted` (the ids the run's sends returned) ends in exactly one of {logged,
 * discarded and reported, dropped at admission, still pending} (see {@link Fate}).
 *
 * Contract: reports an id logged more than once, discarded more than once or dequeued more than once; an id with two
 * fates (e.g. logged and discarded); a dropped id that was not a queued prompt (steering is dequeued only once it
 * is logged; injected context is never dequeued); a logged FIFO item that was never dequeued (it entered the log
 * without being claimed or drained); and, when `final` is set (the agent was disposed, so nothing can still be
 * pending), an id with no fate at all.
 *
 * @since 0.0.0
 * @category invariants
 */
export const messageFates = (
  events: Events,
  log: Log,
  options: { readonly accepted: Iterable<string>; readonly final?: boolean | undefined }
): ReadonlyArray<Violation> => only({ events, log }, checks.messageFates(options))

/**
 * No injected context is ever lost: every id in `injected` (the ids `inject` returned) is in the log exactly once,
 * as a `user/message`, or — unless `final` is set — still staged.
 *
 * @since 0.0.0
 * @category invariants
 */
export const injectedContext = (
  log: Log,
  options: { readonly injected: Iterable<string>; readonly final?: boolean | undefined }
): ReadonlyArray<Violation> => only({ log }, checks.injectedContext(options))

/**
 * One send, one turn (R32): a message enqueued as `queued` that is logged is logged inside a turn (as a
 * `user/message`), and no turn logs two of them — queued prompts are never merged.
 *
 * @since 0.0.0
 * @category invariants
 */
export const oneSendOneTurn = (events: Events, log: Log): ReadonlyArray<Violation> =>
  only({ events, log }, checks.oneSendOneTurn())

/**
 * Every turn settles once (R57): `agent/settled` names a turn that has ended, at most once, and — when `final` is
 * set — every turn that ended got one, except a turn followed at once by a `retry` turn (only the last turn of a
 * retry chain settles). Reads only the live events.
 *
 * @since 0.0.0
 * @category invariants
 */
export const settledOnce = (
  events: Events,
  options: { readonly final?: boolean | undefined } = {}
): ReadonlyArray<Violation> => only({ events }, checks.settledOnce(options))

/**
 * A cancel during admission drops the prompt (R80): when `agent/cancel-requested` is published after a prompt's
 * `dequeue` and before the next `turn/start`, that turn must not be the prompt's (no turn opens for it, no
 * `turn/end`, no `agent/settled`). Reads only the live events (`session/event` republications included).
 *
 * @since 0.0.0
 * @category invariants
 */
export const admissionCancel = (events: Events): ReadonlyArray<Violation> => only({ events }, checks.admissionCancel())

/**
 * The order of a turn's opening (R45): among the `steering/message`s logged between a prompted turn's `turn/start`
 * and its first `step/start`, those logged before the prompt were enqueued before the prompt was claimed (its
 * `dequeue`: retained from earlier), and those logged after it were enqueued after the claim (accepted during the
 * admission). Reads only the live events (`session/event` republications included).
 *
 * @since 0.0.0
 * @category invariants
 */
export const admissionOrder = (events: Events): ReadonlyArray<Violation> => only({ events }, checks.admissionOrder())

/**
 * Nothing is discarded but by `withdraw`: for a run whose cancels all had `keepInbox` (pass the events recorded
 * before disposal, which discards whatever is pending).
 *
 * @since 0.0.0
 * @category invariants
 */
export const noDiscard = (events: Events): ReadonlyArray<Violation> =>
  only({ events }, checks.noDiscard({ before: events.length }))

/**
 * `agent/disposed` is published at most once, and nothing after it. When `required` is set it must be there.
 *
 * @since 0.0.0
 * @category invariants
 */
export const disposedLast = (
  events: Events,
  options: { readonly required?: boolean | undefined } = {}
): ReadonlyArray<Violation> => only({ events }, checks.disposedLast(options))

/**
 * The log's own rules: `LogCheck.checkLog` (gap-free seq, turn numbering, enclosure, steps nested in turns, every
 * tool call answered once, every turn closed): `LogCheck`'s own violations, with the `LogCheck.Rule` as their `rule`,
 * at the offending event's position in the log.
 *
 * @since 0.0.0
 * @category invariants
 */
export const logWellFormed = (log: Log): ReadonlyArray<Violation> => LogCheck.checkLog(log)

/**
 * What one run left behind, for {@link check}.
 *
 * @since 0.0.0
 * @category models
 */
export interface Run {
  /** Every live event recorded from before the first send (an `EventRecorder` subscribed first). */
  readonly events: Events
  /** The whole durable log. */
  readonly log: Log
  /** The ids returned by the run's sends (`inject` included or not: injected ids are checked by their own rule). */
  readonly accepted?: Iterable<string> | undefined
  /** The ids returned by `inject` (and by any next-step, no-wakeup send). */
  readonly injected?: Iterable<string> | undefined
  /** The agent was disposed: nothing may be pending or outstanding, the status ended `idle`, `agent/disposed` is last. */
  readonly final?: boolean | undefined
  /**
   * Every cancel had `keepInbox`: nothing may be discarded among the first `keepInboxOnly` events (the events
   * recorded before disposal began).
   */
  readonly keepInboxOnly?: number | undefined
}

/**
 * Every invariant of this module over one run: FIFO conservation, the status trace, steering in open turns and
 * joining its turn, message fates, one send one turn, settling once, cancels during admission, the order of a turn's
 * opening, injected context, the log's rules, and — as the options say — no discard and disposal last.
 *
 * Contract: the same violations, in the same order, as calling each check on its own and concatenating them in the
 * order above; but the live events and the log are each scanned once, for all of them.
 *
 * @since 0.0.0
 * @category invariants
 */
export const check = (run: Run): ReadonlyArray<Violation> => {
  const final = run.final === true
  const injected = [...(run.injected ?? [])]
  return [
    ...scan.run(run, [
      checks.fifoConservation({ injected, outstanding: final ? 0 : undefined }),
      checks.statusTrace({ end: final ? "idle" : undefined }),
      checks.steeringInOpenTurn(),
      checks.steeringJoinsTurn(),
      checks.messageFates({ accepted: run.accepted ?? [], final }),
      checks.oneSendOneTurn(),
      checks.settledOnce({ final }),
      checks.admissionCancel(),
      checks.admissionOrder(),
      checks.injectedContext({ injected, final }),
      ...(run.keepInboxOnly === undefined ? [] : [checks.noDiscard({ before: run.keepInboxOnly })]),
      checks.disposedLast({ required: final })
    ]),
    ...logWellFormed(run.log)
  ]
}

/**
 * A readable list of violations, one per line, for assertion messages.
 *
 * @since 0.0.0
 * @category invariants
 */
export const render = (violations: ReadonlyArray<Violation>): string =>
  violations.map((v) => `${v.rule} @ ${v.in}[${v.index}]: ${v.message}`).join("\n")
