/**
 * The delivery contract's invariants as pure folds over what an agent run left behind: its live events (as an
 * `EventRecorder` collects them, `session/event` republications included) and its durable log. Each check returns
 * every violation it finds — an empty list means the invariant held — so a property test can run them all after
 * every random run and say exactly which event broke what.
 *
 * The checks only read plain data: they need no agent, no runtime and no clock, so they also run on hand-made
 * event lists and on logs loaded from disk.
 *
 * @since 0.0.0
 */
import type { AgentEvent, SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"

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
 * - `no-discard`: no `agent/inbox/discard` but a `withdraw`'s (the run cancelled only with `keepInbox`).
 * - `disposed-last`: `agent/disposed` is published once, as the last event.
 * - `log`: a rule of `LogCheck.checkLog` (R100), every turn closed included.
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
  | "log"

/**
 * One broken invariant. `index` is the position of the offending event in the list named by `in` (the live events
 * or the log); a violation found only at the end of the run (something never happened) has `index` equal to that
 * list's length.
 *
 * @since 0.0.0
 * @category models
 */
export interface Violation {
  readonly invariant: Invariant
  readonly in: "events" | "log"
  readonly index: number
  readonly message: string
}

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

const violation = (invariant: Invariant, where: "events" | "log", index: number, message: string): Violation => ({
  invariant,
  in: where,
  index,
  message
})

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
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const injected = new Set(options.injected ?? [])
  const open = new Map<string, AgentEvent.AgentEventOf<"agent/inbox/enqueue">["placement"]>()
  const closed = new Map<string, string>()
  let count = 0
  const v = (index: number, message: string) => out.push(violation("fifo-conservation", "events", index, message))
  const terminate = (index: number, id: string, how: string) => {
    if (injected.has(id)) v(index, `injected message ${id} was ${how} (injection never enters a FIFO)`)
    if (open.delete(id)) {
      closed.set(id, how)
    } else if (closed.has(id)) {
      v(index, `message ${id} was ${how} after it was already ${closed.get(id)}`)
    } else {
      v(index, `message ${id} was ${how} but never enqueued`)
    }
  }
  events.forEach((event, index) => {
    switch (event.type) {
      case "agent/inbox/enqueue": {
        const id = event.message.id
        if (injected.has(id)) v(index, `injected message ${id} was enqueued (injection never enters a FIFO)`)
        if (open.has(id) || closed.has(id)) {
          v(index, `message ${id} was enqueued twice`)
        } else {
          open.set(id, event.placement)
        }
        count += 1
        break
      }
      case "agent/inbox/dequeue": {
        terminate(index, event.message.id, "dequeued")
        count -= 1
        if (count < 0) v(index, `the outstanding count went negative (${count}) at a dequeue`)
        break
      }
      case "agent/inbox/discard": {
        const seen = new Set<string>()
        for (const message of event.messages) {
          if (seen.has(message.id)) v(index, `message ${message.id} appears twice in one discard`)
          seen.add(message.id)
          terminate(index, message.id, "discarded")
        }
        count -= event.messages.length
        if (count < 0) v(index, `the outstanding count went negative (${count}) at a discard`)
        break
      }
    }
  })
  if (options.outstanding !== undefined && count !== options.outstanding) {
    const ids = [...open.keys()]
    v(
      events.length,
      `the outstanding count is ${count} at the end, expected ${options.outstanding}` +
        (ids.length === 0 ? "" : ` (still outstanding: ${ids.join(", ")})`)
    )
  }
  return out
}

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
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const v = (index: number, message: string) => out.push(violation("status-trace", "events", index, message))
  let status: AgentEvent.AgentStatus = "idle"
  let openTurn: number | undefined
  events.forEach((event, index) => {
    if (event.type === "agent/status") {
      if (event.status === status) v(index, `status "${status}" published twice in a row`)
      if (event.status === "idle" && openTurn !== undefined) v(index, `status "idle" while turn ${openTurn} is open`)
      status = event.status
    } else if (event.type === "agent/settled") {
      if (status === "idle") v(index, `turn ${event.turn} settled while the status is "idle"`)
    } else if (event.type === "session/event") {
      const durable = event.event
      if (durable.type === "turn/start") {
        if (status === "idle") v(index, `turn ${durable.data.turn} started while the status is "idle"`)
        openTurn = durable.data.turn
      } else if (durable.type === "turn/end") {
        openTurn = undefined
      }
    }
  })
  if (options.end !== undefined && status !== options.end) {
    v(events.length, `the status is "${status}" at the end, expected "${options.end}"`)
  }
  return out
}

/**
 * Steering never lands in a closed turn: every `steering/message` of the log names the turn that is open.
 *
 * @since 0.0.0
 * @category invariants
 */
export const steeringInOpenTurn = (log: Log): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  let openTurn: number | undefined
  log.forEach((event, index) => {
    if (event.type === "turn/start") openTurn = event.data.turn
    else if (event.type === "turn/end") openTurn = undefined
    else if (event.type === "steering/message" && event.data.turn !== openTurn) {
      out.push(violation(
        "steering-in-open-turn",
        "log",
        index,
        openTurn === undefined
          ? `steering ${event.data.messageId} was logged for turn ${event.data.turn} while no turn is open`
          : `steering ${event.data.messageId} was logged for turn ${event.data.turn} while turn ${openTurn} is open`
      ))
    }
  })
  return out
}

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
export const steeringJoinsTurn = (events: Events): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const staged = new Map<string, number>()
  events.forEach((event, index) => {
    if (event.type === "agent/inbox/enqueue" && event.placement === "steering") staged.set(event.message.id, index)
    else if (event.type === "agent/inbox/discard") { for (const m of event.messages) staged.delete(m.id) }
    else if (event.type === "session/event") {
      const durable = event.event
      if (durable.type === "steering/message") staged.delete(durable.data.messageId)
      else if (
        durable.type === "turn/end" &&
        (durable.data.reason.kind === "completed" || durable.data.reason.kind === "max-tokens")
      ) {
        for (const [id, at] of staged) {
          out.push(violation(
            "steering-joins-turn",
            "events",
            index,
            `steering ${id} (enqueued at event ${at}) is still staged when turn ${durable.data.turn} ends ${durable.data.reason.kind}`
          ))
        }
        staged.clear()
      }
    }
  })
  return out
}

interface Trail {
  readonly logged: Array<number>
  readonly steeringLogged: Array<number>
  readonly dequeued: Array<number>
  readonly discarded: Array<number>
  placement: AgentEvent.AgentEventOf<"agent/inbox/enqueue">["placement"] | undefined
}

const trails = (events: Events, log: Log): Map<string, Trail> => {
  const all = new Map<string, Trail>()
  const trail = (id: string): Trail => {
    let found = all.get(id)
    if (found === undefined) {
      found = { logged: [], steeringLogged: [], dequeued: [], discarded: [], placement: undefined }
      all.set(id, found)
    }
    return found
  }
  log.forEach((event, index) => {
    if (event.type === "user/message" && event.data.messageId !== undefined) {
      trail(event.data.messageId).logged.push(index)
    }
    if (event.type === "steering/message") {
      trail(event.data.messageId).logged.push(index)
      trail(event.data.messageId).steeringLogged.push(index)
    }
  })
  events.forEach((event, index) => {
    if (event.type === "agent/inbox/enqueue") trail(event.message.id).placement ??= event.placement
    else if (event.type === "agent/inbox/dequeue") trail(event.message.id).dequeued.push(index)
    else if (event.type === "agent/inbox/discard") { for (const m of event.messages) trail(m.id).discarded.push(index) }
  })
  return all
}

const fatesOf = (trail: Trail | undefined): ReadonlyArray<Fate> => {
  if (trail === undefined) return []
  const fates: Array<Fate> = []
  if (trail.logged.length > 0) fates.push("logged")
  if (trail.discarded.length > 0) fates.push("discarded")
  if (trail.dequeued.length > 0 && trail.logged.length === 0) fates.push("dropped")
  return fates
}

/**
 * The fate of each id in `ids`, from the live events and the log: the first of its fates (see {@link Fate});
 * `pending` when it has none. {@link messageFates} reports ids with more than one.
 *
 * @since 0.0.0
 * @category invariants
 */
export const fates = (events: Events, log: Log, ids: Iterable<string>): ReadonlyMap<string, Fate> => {
  const all = trails(events, log)
  const out = new Map<string, Fate>()
  for (const id of ids) out.set(id, fatesOf(all.get(id))[0] ?? "pending")
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
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const all = trails(events, log)
  for (const id of new Set(options.accepted)) {
    const trail = all.get(id)
    const fates = fatesOf(trail)
    if (trail === undefined || fates.length === 0) {
      if (options.final === true) {
        out.push(violation("message-fate", "events", events.length, `message ${id} has no fate at the end of the run`))
      }
      continue
    }
    if (trail.logged.length > 1) {
      out.push(
        violation("message-fate", "log", trail.logged[1]!, `message ${id} was logged ${trail.logged.length} times`)
      )
    }
    if (trail.discarded.length > 1) {
      out.push(
        violation(
          "message-fate",
          "events",
          trail.discarded[1]!,
          `message ${id} was discarded ${trail.discarded.length} times`
        )
      )
    }
    if (trail.dequeued.length > 1) {
      out.push(
        violation(
          "message-fate",
          "events",
          trail.dequeued[1]!,
          `message ${id} was dequeued ${trail.dequeued.length} times`
        )
      )
    }
    if (fates.length > 1) {
      const index = trail.discarded[0] ?? trail.dequeued[0] ?? events.length
      out.push(
        violation("message-fate", "events", index, `message ${id} has more than one fate: ${fates.join(" and ")}`)
      )
    }
    if (fates.includes("dropped") && trail.placement !== "queued") {
      out.push(violation(
        "message-fate",
        "events",
        trail.dequeued[0]!,
        trail.placement === undefined
          ? `message ${id} was dequeued but never enqueued or logged`
          : `${trail.placement} message ${id} was dequeued but never logged (only a queued prompt can be dropped)`
      ))
    }
    if (fates.includes("logged") && trail.placement !== undefined && trail.dequeued.length === 0) {
      out.push(violation(
        "message-fate",
        "log",
        trail.logged[0]!,
        `${trail.placement} message ${id} was logged without being dequeued`
      ))
    }
    if (trail.placement === "queued" && trail.steeringLogged.length > 0) {
      out.push(
        violation("message-fate", "log", trail.steeringLogged[0]!, `queued message ${id} was logged as steering`)
      )
    }
  }
  return out
}

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
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const users = new Map<string, Array<number>>()
  const steering = new Map<string, number>()
  log.forEach((event, index) => {
    if (event.type === "user/message" && event.data.messageId !== undefined) {
      const at = users.get(event.data.messageId) ?? []
      at.push(index)
      users.set(event.data.messageId, at)
    } else if (event.type === "steering/message" && !steering.has(event.data.messageId)) {
      steering.set(event.data.messageId, index)
    }
  })
  for (const id of new Set(options.injected)) {
    const at = users.get(id) ?? []
    const asSteering = steering.get(id)
    if (asSteering !== undefined) {
      out.push(violation("injected-context", "log", asSteering, `injected context ${id} was logged as steering`))
    }
    if (at.length > 1) {
      out.push(violation("injected-context", "log", at[1]!, `injected context ${id} was logged ${at.length} times`))
    }
    if (at.length === 0 && asSteering === undefined && options.final === true) {
      out.push(
        violation("injected-context", "log", log.length, `injected context ${id} was lost: it is not in the log`)
      )
    }
  }
  return out
}

/**
 * One send, one turn (R32): a message enqueued as `queued` that is logged is logged inside a turn (as a
 * `user/message`), and no turn logs two of them — queued prompts are never merged.
 *
 * @since 0.0.0
 * @category invariants
 */
export const oneSendOneTurn = (events: Events, log: Log): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const queued = new Set<string>()
  for (const event of events) {
    if (event.type === "agent/inbox/enqueue" && event.placement === "queued") queued.add(event.message.id)
  }
  let openTurn: number | undefined
  let prompt: string | undefined
  log.forEach((event, index) => {
    if (event.type === "turn/start") {
      openTurn = event.data.turn
      prompt = undefined
    } else if (event.type === "turn/end") {
      openTurn = undefined
    } else if (
      event.type === "user/message" && event.data.messageId !== undefined && queued.has(event.data.messageId)
    ) {
      const id = event.data.messageId
      if (openTurn === undefined) {
        out.push(violation("one-send-one-turn", "log", index, `queued prompt ${id} was logged outside any turn`))
      } else if (prompt !== undefined) {
        out.push(
          violation("one-send-one-turn", "log", index, `queued prompts ${prompt} and ${id} share turn ${openTurn}`)
        )
      } else {
        prompt = id
      }
    }
  })
  return out
}

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
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const ended = new Set<number>()
  const settled = new Set<number>()
  // A turn that ended and has not settled yet, until the next turn starts.
  let unsettled: { readonly turn: number; readonly index: number } | undefined
  const expectSettled = (index: number, retryFollows: boolean) => {
    if (unsettled !== undefined && !retryFollows && !settled.has(unsettled.turn)) {
      out.push(
        violation(
          "settled-once",
          "events",
          index,
          `turn ${unsettled.turn} ended (event ${unsettled.index}) but never settled`
        )
      )
    }
    unsettled = undefined
  }
  events.forEach((event, index) => {
    if (event.type === "agent/settled") {
      if (!ended.has(event.turn)) {
        out.push(violation("settled-once", "events", index, `turn ${event.turn} settled before it ended`))
      } else if (settled.has(event.turn)) {
        out.push(violation("settled-once", "events", index, `turn ${event.turn} settled twice`))
      }
      settled.add(event.turn)
    } else if (event.type === "session/event") {
      const durable = event.event
      if (durable.type === "turn/start") expectSettled(index, durable.data.trigger.kind === "retry")
      else if (durable.type === "turn/end") {
        ended.add(durable.data.turn)
        unsettled = { turn: durable.data.turn, index }
      }
    }
  })
  if (options.final === true) expectSettled(events.length, false)
  return out
}

/**
 * A cancel during admission drops the prompt (R80): when `agent/cancel-requested` is published after a prompt's
 * `dequeue` and before the next `turn/start`, that turn must not be the prompt's (no turn opens for it, no
 * `turn/end`, no `agent/settled`). Reads only the live events (`session/event` republications included).
 *
 * @since 0.0.0
 * @category invariants
 */
export const admissionCancel = (events: Events): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const queued = new Set<string>()
  // The prompt being admitted (dequeued, no turn/start since), and whether a cancel was requested meanwhile.
  let admitting: { readonly id: string; cancelled: number | undefined } | undefined
  // A turn opened after a cancel during its admission: the prompt it must not log.
  let opened: { readonly id: string; readonly cancelled: number; readonly turn: number } | undefined
  events.forEach((event, index) => {
    if (event.type === "agent/inbox/enqueue") {
      if (event.placement === "queued") queued.add(event.message.id)
    } else if (event.type === "agent/inbox/dequeue") {
      if (queued.has(event.message.id)) admitting = { id: event.message.id, cancelled: undefined }
    } else if (event.type === "agent/cancel-requested") {
      if (admitting !== undefined) admitting.cancelled ??= index
    } else if (event.type === "session/event") {
      const durable = event.event
      if (durable.type === "turn/start") {
        opened = admitting?.cancelled === undefined
          ? undefined
          : { id: admitting.id, cancelled: admitting.cancelled, turn: durable.data.turn }
        admitting = undefined
      } else if (durable.type === "turn/end") {
        opened = undefined
      } else if (opened !== undefined && durable.type === "user/message" && durable.data.messageId === opened.id) {
        out.push(violation(
          "admission-cancel",
          "events",
          index,
          `prompt ${opened.id} was logged in turn ${opened.turn} although a cancel was requested during its admission ` +
            `(event ${opened.cancelled})`
        ))
        opened = undefined
      }
    }
  })
  return out
}

/**
 * The order of a turn's opening (R45): among the `steering/message`s logged between a prompted turn's `turn/start`
 * and its first `step/start`, those logged before the prompt were enqueued before the prompt was claimed (its
 * `dequeue`: retained from earlier), and those logged after it were enqueued after the claim (accepted during the
 * admission). Reads only the live events (`session/event` republications included).
 *
 * @since 0.0.0
 * @category invariants
 */
export const admissionOrder = (events: Events): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const enqueued = new Map<string, { readonly index: number; readonly placement: string }>()
  const claimed = new Map<string, number>()
  // The opening of the current prompted turn: steering logged so far, and the prompt once logged.
  let opening:
    | { before: Array<{ readonly id: string; readonly index: number }>; prompt: string | undefined }
    | undefined
  events.forEach((event, index) => {
    if (event.type === "agent/inbox/enqueue") {
      if (!enqueued.has(event.message.id)) enqueued.set(event.message.id, { index, placement: event.placement })
      return
    }
    if (event.type === "agent/inbox/dequeue") {
      if (enqueued.get(event.message.id)?.placement === "queued") claimed.set(event.message.id, index)
      return
    }
    if (event.type !== "session/event") return
    const durable = event.event
    if (durable.type === "turn/start") {
      opening = durable.data.trigger.kind === "message" ? { before: [], prompt: undefined } : undefined
    } else if (durable.type === "step/start" || durable.type === "turn/end") {
      opening = undefined
    } else if (opening !== undefined && durable.type === "user/message" && opening.prompt === undefined) {
      const id = durable.data.messageId
      const claim = id === undefined ? undefined : claimed.get(id)
      if (id === undefined || claim === undefined) return
      opening.prompt = id
      for (const steering of opening.before) {
        const at = enqueued.get(steering.id)?.index
        if (at !== undefined && at > claim) {
          out.push(violation(
            "admission-order",
            "events",
            steering.index,
            `steering ${steering.id}, accepted during the admission of ${id}, was logged before that prompt`
          ))
        }
      }
    } else if (opening !== undefined && durable.type === "steering/message") {
      const id = durable.data.messageId
      if (opening.prompt === undefined) {
        opening.before.push({ id, index })
      } else {
        const at = enqueued.get(id)?.index
        const claim = claimed.get(opening.prompt)!
        if (at !== undefined && at < claim) {
          out.push(violation(
            "admission-order",
            "events",
            index,
            `steering ${id}, staged before ${opening.prompt} was claimed, was logged after that prompt`
          ))
        }
      }
    }
  })
  return out
}

/**
 * Nothing is discarded but by `withdraw`: for a run whose cancels all had `keepInbox` (pass the events recorded
 * before disposal, which discards whatever is pending).
 *
 * @since 0.0.0
 * @category invariants
 */
export const noDiscard = (events: Events): ReadonlyArray<Violation> =>
  events.flatMap((event, index) =>
    event.type === "agent/inbox/discard" && event.reason !== "withdraw"
      ? [violation("no-discard", "events", index, `discarded ${event.messages.map((m) => m.id).join(", ")}`)]
      : []
  )

/**
 * `agent/disposed` is published at most once, and nothing after it. When `required` is set it must be there.
 *
 * @since 0.0.0
 * @category invariants
 */
export const disposedLast = (
  events: Events,
  options: { readonly required?: boolean | undefined } = {}
): ReadonlyArray<Violation> => {
  const out: Array<Violation> = []
  const at = events.findIndex((event) => event.type === "agent/disposed")
  if (at === -1) {
    if (options.required === true) {
      out.push(violation("disposed-last", "events", events.length, "agent/disposed was never published"))
    }
  } else if (at !== events.length - 1) {
    out.push(
      violation("disposed-last", "events", at + 1, `${events.length - at - 1} event(s) published after agent/disposed`)
    )
  }
  return out
}

/**
 * The log's own rules: `LogCheck.checkLog` (gap-free seq, turn numbering, enclosure, steps nested in turns, every
 * tool call answered once, every turn closed), as violations of `log` at the offending event.
 *
 * @since 0.0.0
 * @category invariants
 */
export const logWellFormed = (log: Log): ReadonlyArray<Violation> =>
  LogCheck.checkLog(log).map((v) => {
    const index = log.findIndex((event) => event.seq === v.seq)
    return violation("log", "log", index === -1 ? v.seq : index, `${v.rule}: ${v.message}`)
  })

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
 * @since 0.0.0
 * @category invariants
 */
export const check = (run: Run): ReadonlyArray<Violation> => {
  const final = run.final === true
  const injected = [...(run.injected ?? [])]
  return [
    ...fifoConservation(run.events, { injected, outstanding: final ? 0 : undefined }),
    ...statusTrace(run.events, { end: final ? "idle" : undefined }),
    ...steeringInOpenTurn(run.log),
    ...steeringJoinsTurn(run.events),
    ...messageFates(run.events, run.log, { accepted: run.accepted ?? [], final }),
    ...oneSendOneTurn(run.events, run.log),
    ...settledOnce(run.events, { final }),
    ...admissionCancel(run.events),
    ...admissionOrder(run.events),
    ...injectedContext(run.log, { injected, final }),
    ...(run.keepInboxOnly === undefined ? [] : noDiscard(run.events.slice(0, run.keepInboxOnly))),
    ...disposedLast(run.events, { required: final }),
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
  violations.map((v) => `${v.invariant} @ ${v.in}[${v.index}]: ${v.message}`).join("\n")
