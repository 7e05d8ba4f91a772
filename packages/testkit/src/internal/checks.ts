/**
 * The invariants of `Invariants` as checks over the shared scanner (`scan.ts`): each a pair of folds (live events,
 * log) with its own bookkeeping, and what it found once both lists were scanned. The turn and step context comes
 * from the scanner; nothing here tracks turns or steps on its own.
 */
import type { AgentEvent } from "@harness/domain"
import type { Fate, Invariant } from "../Invariants.js"
import type { Check, Found, Where } from "./scan.js"

type Placement = AgentEvent.AgentEventOf<"agent/inbox/enqueue">["placement"]

/** A check's findings so far, and how it adds one. */
const findings = (rule: Invariant) => {
  const out: Array<Found<Invariant>> = []
  const add = (where: Where, index: number, message: string) => out.push({ rule, in: where, index, message })
  return { out, add }
}

export const fifoConservation = (options: {
  readonly injected?: Iterable<string> | undefined
  readonly outstanding?: number | undefined
}): Check<Invariant> => {
  const { add, out } = findings("fifo-conservation")
  const injected = new Set(options.injected ?? [])
  const open = new Set<string>()
  const closed = new Map<string, string>()
  let count = 0
  const terminate = (index: number, id: string, how: string) => {
    if (injected.has(id)) add("events", index, `injected message ${id} was ${how} (injection never enters a FIFO)`)
    if (open.delete(id)) {
      closed.set(id, how)
    } else if (closed.has(id)) {
      add("events", index, `message ${id} was ${how} after it was already ${closed.get(id)}`)
    } else {
      add("events", index, `message ${id} was ${how} but never enqueued`)
    }
  }
  return {
    events: {
      live: (event, { index }) => {
        switch (event.type) {
          case "agent/inbox/enqueue": {
            const id = event.message.id
            if (injected.has(id)) {
              add("events", index, `injected message ${id} was enqueued (injection never enters a FIFO)`)
            }
            if (open.has(id) || closed.has(id)) add("events", index, `message ${id} was enqueued twice`)
            else open.add(id)
            count += 1
            return
          }
          case "agent/inbox/dequeue": {
            terminate(index, event.message.id, "dequeued")
            count -= 1
            if (count < 0) add("events", index, `the outstanding count went negative (${count}) at a dequeue`)
            return
          }
          case "agent/inbox/discard": {
            const seen = new Set<string>()
            for (const message of event.messages) {
              if (seen.has(message.id)) add("events", index, `message ${message.id} appears twice in one discard`)
              seen.add(message.id)
              terminate(index, message.id, "discarded")
            }
            count -= event.messages.length
            if (count < 0) add("events", index, `the outstanding count went negative (${count}) at a discard`)
            return
          }
        }
      }
    },
    finish: (ends) => {
      if (options.outstanding !== undefined && count !== options.outstanding) {
        const ids = [...open]
        add(
          "events",
          ends.events,
          `the outstanding count is ${count} at the end, expected ${options.outstanding}` +
            (ids.length === 0 ? "" : ` (still outstanding: ${ids.join(", ")})`)
        )
      }
      return out
    }
  }
}

export const statusTrace = (options: { readonly end?: AgentEvent.AgentStatus | undefined }): Check<Invariant> => {
  const { add, out } = findings("status-trace")
  let status: AgentEvent.AgentStatus = "idle"
  return {
    events: {
      live: (event, { index, turn }) => {
        if (event.type === "agent/status") {
          if (event.status === status) add("events", index, `status "${status}" published twice in a row`)
          if (event.status === "idle" && turn !== undefined) {
            add("events", index, `status "idle" while turn ${turn.turn} is open`)
          }
          status = event.status
        } else if (event.type === "agent/settled" && status === "idle") {
          add("events", index, `turn ${event.turn} settled while the status is "idle"`)
        }
      },
      durable: (event, { index }) => {
        if (event.type === "turn/start" && status === "idle") {
          add("events", index, `turn ${event.data.turn} started while the status is "idle"`)
        }
      }
    },
    finish: (ends) => {
      if (options.end !== undefined && status !== options.end) {
        add("events", ends.events, `the status is "${status}" at the end, expected "${options.end}"`)
      }
      return out
    }
  }
}

export const steeringInOpenTurn = (): Check<Invariant> => {
  const { add, out } = findings("steering-in-open-turn")
  return {
    log: {
      durable: (event, { index, turn }) => {
        if (event.type !== "steering/message" || event.data.turn === turn?.turn) return
        add(
          "log",
          index,
          turn === undefined
            ? `steering ${event.data.messageId} was logged for turn ${event.data.turn} while no turn is open`
            : `steering ${event.data.messageId} was logged for turn ${event.data.turn} while turn ${turn.turn} is open`
        )
      }
    },
    finish: () => out
  }
}

export const steeringJoinsTurn = (): Check<Invariant> => {
  const { add, out } = findings("steering-joins-turn")
  const staged = new Map<string, number>()
  return {
    events: {
      live: (event, { index }) => {
        if (event.type === "agent/inbox/enqueue" && event.placement === "steering") staged.set(event.message.id, index)
        else if (event.type === "agent/inbox/place") {
          // A promoted item is steering from now on; a demoted one is a queued turn.
          if (event.placement === "steering") staged.set(event.message.id, index)
          else staged.delete(event.message.id)
        } else if (event.type === "agent/inbox/discard") { for (const m of event.messages) staged.delete(m.id) }
      },
      durable: (event, { index }) => {
        if (event.type === "steering/message") staged.delete(event.data.messageId)
        else if (
          event.type === "turn/end" &&
          (event.data.reason.kind === "completed" || event.data.reason.kind === "max-tokens")
        ) {
          for (const [id, at] of staged) {
            add(
              "events",
              index,
              `steering ${id} (enqueued at event ${at}) is still staged when turn ${event.data.turn} ends ${event.data.reason.kind}`
            )
          }
          staged.clear()
        }
      }
    },
    finish: () => out
  }
}

/** Where an id appears: the log positions that log it, the live positions that dequeue or discard it. */
export interface Trail {
  readonly logged: Array<number>
  readonly steeringLogged: Array<number>
  readonly dequeued: Array<number>
  readonly discarded: Array<number>
  placement: Placement | undefined
}

/** The trails of every id, as folds (read them once both lists were scanned). */
export const trails = () => {
  const all = new Map<string, Trail>()
  const trail = (id: string): Trail => {
    let found = all.get(id)
    if (found === undefined) {
      found = { logged: [], steeringLogged: [], dequeued: [], discarded: [], placement: undefined }
      all.set(id, found)
    }
    return found
  }
  const check: Check<never> = {
    log: {
      durable: (event, { index }) => {
        if (event.type === "user/message" && event.data.messageId !== undefined) {
          trail(event.data.messageId).logged.push(index)
        } else if (event.type === "steering/message") {
          trail(event.data.messageId).logged.push(index)
          trail(event.data.messageId).steeringLogged.push(index)
        }
      }
    },
    events: {
      live: (event, { index }) => {
        if (event.type === "agent/inbox/enqueue") trail(event.message.id).placement ??= event.placement
        else if (event.type === "agent/inbox/place") trail(event.message.id).placement = event.placement
        else if (event.type === "agent/inbox/dequeue") trail(event.message.id).dequeued.push(index)
        else if (event.type === "agent/inbox/discard") {
          for (const m of event.messages) trail(m.id).discarded.push(index)
        }
      }
    },
    finish: () => []
  }
  return { all, check }
}

/** Every fate of a trail, in the order of {@link Fate} (more than one is a violation). */
export const fatesOf = (trail: Trail | undefined): ReadonlyArray<Fate> => {
  if (trail === undefined) return []
  const fates: Array<Fate> = []
  if (trail.logged.length > 0) fates.push("logged")
  if (trail.discarded.length > 0) fates.push("discarded")
  if (trail.dequeued.length > 0 && trail.logged.length === 0) fates.push("dropped")
  return fates
}

export const messageFates = (options: {
  readonly accepted: Iterable<string>
  readonly final?: boolean | undefined
}): Check<Invariant> => {
  const { add, out } = findings("message-fate")
  const { all, check } = trails()
  return {
    ...check,
    finish: (ends) => {
      for (const id of new Set(options.accepted)) {
        const trail = all.get(id)
        const fates = fatesOf(trail)
        if (trail === undefined || fates.length === 0) {
          if (options.final === true) add("events", ends.events, `message ${id} has no fate at the end of the run`)
          continue
        }
        if (trail.logged.length > 1) {
          add("log", trail.logged[1]!, `message ${id} was logged ${trail.logged.length} times`)
        }
        if (trail.discarded.length > 1) {
          add("events", trail.discarded[1]!, `message ${id} was discarded ${trail.discarded.length} times`)
        }
        if (trail.dequeued.length > 1) {
          add("events", trail.dequeued[1]!, `message ${id} was dequeued ${trail.dequeued.length} times`)
        }
        if (fates.length > 1) {
          add(
            "events",
            trail.discarded[0] ?? trail.dequeued[0] ?? ends.events,
            `message ${id} has more than one fate: ${fates.join(" and ")}`
          )
        }
        if (fates.includes("dropped") && trail.placement !== "queued") {
          add(
            "events",
            trail.dequeued[0]!,
            trail.placement === undefined
              ? `message ${id} was dequeued but never enqueued or logged`
              : `${trail.placement} message ${id} was dequeued but never logged (only a queued prompt can be dropped)`
          )
        }
        if (fates.includes("logged") && trail.placement !== undefined && trail.dequeued.length === 0) {
          add("log", trail.logged[0]!, `${trail.placement} message ${id} was logged without being dequeued`)
        }
        if (trail.placement === "queued" && trail.steeringLogged.length > 0) {
          add("log", trail.steeringLogged[0]!, `queued message ${id} was logged as steering`)
        }
      }
      return out
    }
  }
}

export const injectedContext = (options: {
  readonly injected: Iterable<string>
  readonly final?: boolean | undefined
}): Check<Invariant> => {
  const { add, out } = findings("injected-context")
  const users = new Map<string, Array<number>>()
  const steering = new Map<string, number>()
  return {
    log: {
      durable: (event, { index }) => {
        if (event.type === "user/message" && event.data.messageId !== undefined) {
          const at = users.get(event.data.messageId) ?? []
          at.push(index)
          users.set(event.data.messageId, at)
        } else if (event.type === "steering/message" && !steering.has(event.data.messageId)) {
          steering.set(event.data.messageId, index)
        }
      }
    },
    finish: (ends) => {
      for (const id of new Set(options.injected)) {
        const at = users.get(id) ?? []
        const asSteering = steering.get(id)
        if (asSteering !== undefined) add("log", asSteering, `injected context ${id} was logged as steering`)
        if (at.length > 1) add("log", at[1]!, `injected context ${id} was logged ${at.length} times`)
        if (at.length === 0 && asSteering === undefined && options.final === true) {
          add("log", ends.log, `injected context ${id} was lost: it is not in the log`)
        }
      }
      return out
    }
  }
}

export const oneSendOneTurn = (): Check<Invariant> => {
  const { add, out } = findings("one-send-one-turn")
  const queued = new Set<string>()
  // Log events are checked once the live events (which say what was queued) were scanned.
  const prompts: Array<
    {
      readonly index: number
      readonly id: string
      readonly turn: number | undefined
      readonly opened: number | undefined
    }
  > = []
  return {
    events: {
      live: (event) => {
        if (
          (event.type === "agent/inbox/enqueue" || event.type === "agent/inbox/place") && event.placement === "queued"
        ) queued.add(event.message.id)
        else if (event.type === "agent/inbox/place") queued.delete(event.message.id)
      }
    },
    log: {
      durable: (event, { index, turn }) => {
        if (event.type === "user/message" && event.data.messageId !== undefined) {
          prompts.push({ index, id: event.data.messageId, turn: turn?.turn, opened: turn?.index })
        }
      }
    },
    finish: () => {
      // The queued prompt logged so far in each turn (by the index of its turn/start).
      const first = new Map<number, string>()
      for (const { id, index, opened, turn } of prompts) {
        if (!queued.has(id)) continue
        if (turn === undefined || opened === undefined) {
          add("log", index, `queued prompt ${id} was logged outside any turn`)
          continue
        }
        const prompt = first.get(opened)
        if (prompt === undefined) first.set(opened, id)
        else add("log", index, `queued prompts ${prompt} and ${id} share turn ${turn}`)
      }
      return out
    }
  }
}

export const settledOnce = (options: { readonly final?: boolean | undefined }): Check<Invariant> => {
  const { add, out } = findings("settled-once")
  const ended = new Set<number>()
  const settled = new Set<number>()
  // A turn that ended and has not settled yet, until the next turn starts.
  let unsettled: { readonly turn: number; readonly index: number } | undefined
  const expectSettled = (index: number, retryFollows: boolean) => {
    if (unsettled !== undefined && !retryFollows && !settled.has(unsettled.turn)) {
      add("events", index, `turn ${unsettled.turn} ended (event ${unsettled.index}) but never settled`)
    }
    unsettled = undefined
  }
  return {
    events: {
      live: (event, { index }) => {
        if (event.type !== "agent/settled") return
        if (!ended.has(event.turn)) add("events", index, `turn ${event.turn} settled before it ended`)
        else if (settled.has(event.turn)) add("events", index, `turn ${event.turn} settled twice`)
        settled.add(event.turn)
      },
      durable: (event, { index }) => {
        if (event.type === "turn/start") expectSettled(index, event.data.trigger.kind === "retry")
        else if (event.type === "turn/end") {
          ended.add(event.data.turn)
          unsettled = { turn: event.data.turn, index }
        }
      }
    },
    finish: (ends) => {
      if (options.final === true) expectSettled(ends.events, false)
      return out
    }
  }
}

export const admissionCancel = (): Check<Invariant> => {
  const { add, out } = findings("admission-cancel")
  const queued = new Set<string>()
  // The prompt being admitted (dequeued, no turn/start since), and whether a cancel was requested meanwhile.
  let admitting: { readonly id: string; cancelled: number | undefined } | undefined
  // A turn opened after a cancel during its admission: the prompt it must not log.
  let opened: { readonly id: string; readonly cancelled: number; readonly turn: number } | undefined
  return {
    events: {
      live: (event, { index }) => {
        if (event.type === "agent/inbox/enqueue" || event.type === "agent/inbox/place") {
          if (event.placement === "queued") queued.add(event.message.id)
          else queued.delete(event.message.id)
        } else if (event.type === "agent/inbox/dequeue") {
          if (queued.has(event.message.id)) admitting = { id: event.message.id, cancelled: undefined }
        } else if (event.type === "agent/cancel-requested") {
          if (admitting !== undefined) admitting.cancelled ??= index
        }
      },
      durable: (event, { index }) => {
        if (event.type === "turn/start") {
          opened = admitting?.cancelled === undefined
            ? undefined
            : { id: admitting.id, cancelled: admitting.cancelled, turn: event.data.turn }
          admitting = undefined
        } else if (event.type === "turn/end") {
          opened = undefined
        } else if (opened !== undefined && event.type === "user/message" && event.data.messageId === opened.id) {
          add(
            "events",
            index,
            `prompt ${opened.id} was logged in turn ${opened.turn} although a cancel was requested during its admission ` +
              `(event ${opened.cancelled})`
          )
          opened = undefined
        }
      }
    },
    finish: () => out
  }
}

export const admissionOrder = (): Check<Invariant> => {
  const { add, out } = findings("admission-order")
  const enqueued = new Map<string, { readonly index: number; readonly placement: Placement }>()
  const claimed = new Map<string, number>()
  // The opening of the current prompted turn (by the index of its turn/start): steering logged before its prompt,
  // and the prompt once logged.
  let opening:
    | {
      readonly turn: number
      readonly before: Array<{ readonly id: string; readonly index: number }>
      prompt: string | undefined
    }
    | undefined
  return {
    events: {
      live: (event, { index }) => {
        if (event.type === "agent/inbox/enqueue") {
          if (!enqueued.has(event.message.id)) enqueued.set(event.message.id, { index, placement: event.placement })
        } else if (event.type === "agent/inbox/place") {
          // A changed placement counts from the change, as an acceptance would.
          enqueued.set(event.message.id, { index, placement: event.placement })
        } else if (event.type === "agent/inbox/dequeue") {
          if (enqueued.get(event.message.id)?.placement === "queued") claimed.set(event.message.id, index)
        }
      },
      durable: (event, { index, lastStep, turn }) => {
        // A turn's opening: a prompted turn, before its first step/start.
        if (turn === undefined || turn.trigger.kind !== "message" || lastStep > 0 || event.type === "turn/end") return
        if (opening?.turn !== turn.index) opening = { turn: turn.index, before: [], prompt: undefined }
        if (event.type === "user/message" && opening.prompt === undefined) {
          const id = event.data.messageId
          const claim = id === undefined ? undefined : claimed.get(id)
          if (id === undefined || claim === undefined) return
          opening.prompt = id
          for (const steering of opening.before) {
            const at = enqueued.get(steering.id)?.index
            if (at !== undefined && at > claim) {
              add(
                "events",
                steering.index,
                `steering ${steering.id}, accepted during the admission of ${id}, was logged before that prompt`
              )
            }
          }
        } else if (event.type === "steering/message") {
          const id = event.data.messageId
          if (opening.prompt === undefined) {
            opening.before.push({ id, index })
          } else {
            const at = enqueued.get(id)?.index
            if (at !== undefined && at < claimed.get(opening.prompt)!) {
              add(
                "events",
                index,
                `steering ${id}, staged before ${opening.prompt} was claimed, was logged after that prompt`
              )
            }
          }
        }
      }
    },
    finish: () => out
  }
}

export const noDiscard = (options: { readonly before: number }): Check<Invariant> => {
  const { add, out } = findings("no-discard")
  return {
    events: {
      live: (event, { index }) => {
        // Only a cancel's discard (no reason) counts: a withdrawal, a bounded inbox's drop and stale input's
        // (`expired`, `superseded`, ADR 0059) are asked for by their senders, not by a cancel.
        if (index < options.before && event.type === "agent/inbox/discard" && event.reason === undefined) {
          add("events", index, `discarded ${event.messages.map((m) => m.id).join(", ")}`)
        }
      }
    },
    finish: () => out
  }
}

export const disposedLast = (options: { readonly required?: boolean | undefined }): Check<Invariant> => {
  const { add, out } = findings("disposed-last")
  let at: number | undefined
  return {
    events: {
      live: (event, { index }) => {
        if (event.type === "agent/disposed") at ??= index
      }
    },
    finish: (ends) => {
      if (at === undefined) {
        if (options.required === true) add("events", ends.events, "agent/disposed was never published")
      } else if (at !== ends.events - 1) {
        add("events", at + 1, `${ends.events - at - 1} event(s) published after agent/disposed`)
      }
      return out
    }
  }
}
