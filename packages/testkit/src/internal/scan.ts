/**
 * The one scanner behind `Invariants`: it walks a run's live events or its durable log once, keeps the turn and step
 * context every check needs (which turn is open, what triggered it, which step is open, how many steps it has
 * had), and hands each entry with that context to every fold of the checks being run. The checks themselves keep
 * only their own bookkeeping (an inbox, a status, the steering staged so far).
 */
import type { AgentEvent, SessionEvent } from "@harness/domain"
import type { LogCheck } from "@harness/session"

/** The list an entry is in. */
export type Where = "events" | "log"

/** The turn an entry is in. */
interface OpenTurn {
  readonly turn: number
  readonly trigger: SessionEvent.SessionEventOf<"turn/start">["data"]["trigger"]
  /** The index of its `turn/start` in the list being scanned. */
  readonly index: number
}

/** Where an entry is, for the folds. */
interface Context {
  readonly index: number
  /** The open turn: from its `turn/start` (included) to its `turn/end` (included). */
  readonly turn: OpenTurn | undefined
  /** The open step: from its `step/start` (included) to its `step/end` (included). */
  readonly step: number | undefined
  /** The number of the last `step/start` of the open turn (0 before its first step, and outside turns). */
  readonly lastStep: number
}

/** What a check does at each entry of one list. */
interface Fold {
  /** A live event that is not a republished durable event (only when scanning the live events). */
  readonly live?: (event: AgentEvent.AgentEvent, at: Context) => void
  /** A durable event: an event of the log, or a `session/event` republication among the live events. */
  readonly durable?: (event: SessionEvent.SessionEvent, at: Context) => void
}

/** A violation as a check finds it; the runner adds the entry's `seq`. */
export type Found<R extends string> = Omit<LogCheck.Violation<R>, "seq">

/** The lengths of the two lists, for violations of something that never happened. */
interface Ends {
  readonly events: number
  readonly log: number
}

/** One invariant as folds over the live events and the log, and what it found once both were scanned. */
export interface Check<R extends string> {
  readonly events?: Fold | undefined
  readonly log?: Fold | undefined
  readonly finish: (ends: Ends) => ReadonlyArray<Found<R>>
}

const scanList = (
  entries: ReadonlyArray<AgentEvent.AgentEvent> | ReadonlyArray<SessionEvent.SessionEvent>,
  durableOf: (entry: AgentEvent.AgentEvent | SessionEvent.SessionEvent) => SessionEvent.SessionEvent | undefined,
  folds: ReadonlyArray<Fold>
): void => {
  if (folds.length === 0) return
  let turn: OpenTurn | undefined
  let step: number | undefined
  let lastStep = 0
  entries.forEach((entry, index) => {
    const durable = durableOf(entry)
    if (durable?.type === "turn/start") {
      turn = { turn: durable.data.turn, trigger: durable.data.trigger, index }
      step = undefined
      lastStep = 0
    } else if (durable?.type === "step/start") {
      step = durable.data.step
      lastStep = durable.data.step
    }
    const at: Context = { index, turn, step, lastStep }
    for (const fold of folds) {
      if (durable === undefined) fold.live?.(entry as AgentEvent.AgentEvent, at)
      else fold.durable?.(durable, at)
    }
    if (durable?.type === "turn/end") {
      turn = undefined
      step = undefined
      lastStep = 0
    } else if (durable?.type === "step/end") {
      step = undefined
    }
  })
}

/** The durable event a live event republishes, if it is one. */
const republished = (entry: AgentEvent.AgentEvent | SessionEvent.SessionEvent): SessionEvent.SessionEvent | undefined =>
  entry.type === "session/event" ? (entry as AgentEvent.AgentEventOf<"session/event">).event : undefined

/**
 * Runs `checks` over one run: one scan of the live events and one of the log, every check's fold at each entry, then
 * each check's findings in the order of `checks`, each with the `seq` of its entry when that entry is a durable event.
 */
export const run = <R extends string>(
  lists: {
    readonly events: ReadonlyArray<AgentEvent.AgentEvent>
    readonly log: ReadonlyArray<SessionEvent.SessionEvent>
  },
  checks: ReadonlyArray<Check<R>>
): ReadonlyArray<LogCheck.Violation<R>> => {
  const { events, log } = lists
  scanList(events, republished, checks.flatMap((check) => (check.events === undefined ? [] : [check.events])))
  scanList(
    log,
    (entry) => entry as SessionEvent.SessionEvent,
    checks.flatMap((check) => (check.log === undefined ? [] : [check.log]))
  )
  const ends: Ends = { events: events.length, log: log.length }
  return checks.flatMap((check) =>
    check.finish(ends).map((found): LogCheck.Violation<R> => {
      const entry = found.in === "log" ? log[found.index] : events[found.index]
      const seq = entry === undefined
        ? undefined
        : found.in === "log"
        ? (entry as SessionEvent.SessionEvent).seq
        : republished(entry)?.seq
      return seq === undefined ? found : { ...found, seq }
    })
  )
}
