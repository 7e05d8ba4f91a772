/**
 * The enclosure fold behind `LogCheck`: one transition function that both the append-time check (`step`) and the
 * whole-log checker (`checkLog`) run, so the two can never disagree.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import type { LogState, LogViolation, OwedCall, Rule, StepCall } from "../LogCheck.js"
import { contributes } from "./history.js"

/** Crash repair's code for a tool result whose call was never recorded (R106); exempt from `unknown-tool-call`. */
const TOOL_NOT_STARTED: SessionEvent.ToolErrorCode = "TOOL_NOT_STARTED"

const noCalls: ReadonlyArray<never> = Object.freeze([])

export const initial: LogState = Object.freeze({
  nextSeq: 0,
  lastTurn: 0,
  openTurn: undefined,
  lastStep: 0,
  openStep: undefined,
  header: undefined,
  compaction: undefined,
  dropped: undefined,
  calls: noCalls,
  owed: noCalls
})

interface StateChanges {
  readonly lastTurn?: number
  readonly open?: { readonly turn: number | undefined; readonly step: number | undefined }
  readonly lastStep?: number
  readonly header?: LogState["header"]
  readonly compaction?: LogState["compaction"]
  /** `null` clears them (a compaction covers every earlier range). */
  readonly dropped?: LogState["dropped"] | null
  readonly calls?: ReadonlyArray<StepCall>
}

const noChanges: StateChanges = Object.freeze({})

/**
 * A state as one object literal in the interface's key order. Every transition builds its next state with it rather
 * than with a spread (`{ ...state, nextSeq }`): V8 builds a literal many times faster than it copies a spread, and a
 * transition runs for every appended event (ADR 0040).
 */
const stateOf = (state: LogState, nextSeq: number, changes: StateChanges = noChanges): LogState => {
  const calls = changes.calls ?? state.calls
  return {
    nextSeq,
    lastTurn: changes.lastTurn ?? state.lastTurn,
    openTurn: changes.open === undefined ? state.openTurn : changes.open.turn,
    lastStep: changes.lastStep ?? state.lastStep,
    openStep: changes.open === undefined ? state.openStep : changes.open.step,
    header: changes.header ?? state.header,
    compaction: changes.compaction ?? state.compaction,
    dropped: changes.dropped === undefined ? state.dropped : changes.dropped ?? undefined,
    calls,
    owed: changes.calls === undefined ? state.owed : calls.length === 0 ? noCalls : owedOf(calls)
  }
}

/** The result of one transition: the next state (lenient: what the log would be if the event were let in) and the
 * append-time rule the event breaks, if any. */
interface Transition {
  readonly next: LogState
  readonly violation: LogViolation | undefined
}

/** A violation at the event with `seq`; its index is `seq` (the event's position in a gap-free log from 0) until
 * `checkLog` places it at the event's actual position. */
const violation = (seq: number, rule: Rule, message: string): LogViolation => ({
  rule,
  in: "log",
  index: seq,
  seq,
  message
})

const owedOf = (calls: ReadonlyArray<StepCall>): ReadonlyArray<OwedCall> => {
  const owed: Array<OwedCall> = []
  for (const call of calls) {
    if (call.resultSeq === undefined) {
      owed.push({
        callId: call.callId,
        name: call.name,
        arguments: call.arguments,
        callSeq: call.callSeq,
        ...(call.replay === undefined ? {} : { replay: call.replay })
      })
    }
  }
  return owed.length === 0 ? noCalls : owed
}

const withCalls = (state: LogState, nextSeq: number, calls: ReadonlyArray<StepCall>): LogState =>
  stateOf(state, nextSeq, { calls })

/**
 * Merges the tool-call blocks of an assistant message into the step's calls: message calls first (earlier
 * messages, then this one, in content order), then calls known only from `tool/call` events, in log order.
 * O(calls of the step).
 */
const mergeMessageCalls = (
  calls: ReadonlyArray<StepCall>,
  content: SessionEvent.SessionEventOf<"assistant/message">["data"]["content"]
): ReadonlyArray<StepCall> => {
  const byId = new Map<Ids.ToolCallId, StepCall>()
  for (const call of calls) byId.set(call.callId, call)
  const fromMessages: Array<StepCall> = []
  const placed = new Set<Ids.ToolCallId>()
  for (const call of calls) {
    if (call.inMessage) {
      fromMessages.push(call)
      placed.add(call.callId)
    }
  }
  let added = false
  for (const block of content) {
    if (block.type !== "tool-call" || placed.has(block.id)) continue
    const known = byId.get(block.id)
    fromMessages.push({
      callId: block.id,
      name: block.name,
      arguments: block.arguments,
      callSeq: known?.callSeq,
      resultSeq: known?.resultSeq,
      inMessage: true
    })
    placed.add(block.id)
    added = true
  }
  if (!added) return calls
  for (const call of calls) if (!placed.has(call.callId)) fromMessages.push(call)
  return fromMessages
}

const replaceCall = (calls: ReadonlyArray<StepCall>, index: number, call: StepCall): ReadonlyArray<StepCall> => {
  const copy = calls.slice()
  copy[index] = call
  return copy
}

const findCall = (calls: ReadonlyArray<StepCall>, callId: Ids.ToolCallId): number => {
  for (let i = 0; i < calls.length; i++) if (calls[i]!.callId === callId) return i
  return -1
}

/** The state after an event that changes nothing but `seq`. */
const same = (state: LogState, event: SessionEvent.SessionEvent): LogState => stateOf(state, event.seq + 1)

/** An accepted event's transition. */
const accept = (next: LogState): Transition => ({ next, violation: undefined })

/** A refused event's transition: nothing changes but `seq`. */
const refuse = (state: LogState, event: SessionEvent.SessionEvent, rule: Rule, message: string): Transition => ({
  next: same(state, event),
  violation: violation(event.seq, rule, message)
})

/** The shared check of events that name their turn (and step): the refusal, if the event is out of place. */
const enclosure = (
  state: LogState,
  event: SessionEvent.SessionEvent,
  turn: number,
  step: number | undefined
): Transition | undefined => {
  const { openStep, openTurn } = state
  if (openTurn === undefined) {
    return refuse(state, event, "outside-turn", `${event.type} names turn ${turn} but no turn is open`)
  }
  if (turn !== openTurn) {
    return refuse(state, event, "wrong-turn", `${event.type} names turn ${turn} but the open turn is ${openTurn}`)
  }
  if (step === undefined) return undefined
  if (openStep === undefined) {
    return refuse(state, event, "outside-step", `${event.type} names step ${step} of turn ${turn} but no step is open`)
  }
  if (step !== openStep) {
    return refuse(state, event, "outside-step", `${event.type} names step ${step} but the open step is ${openStep}`)
  }
  return undefined
}

/**
 * Checks the event against the enclosure rules (not `seq`: see {@link checkSeq}) and computes the next state.
 * When the event breaks a rule, `next` is a best-effort state so that a whole-log check can go on without one bad
 * event hiding later ones: opening events (`turn/start`, `step/start`) resynchronise the numbering, a matching
 * `turn/end` closes its turn even while a step is open, and every other refused event changes nothing but `seq`.
 * Runs for every append: its helpers are module-level, so a call allocates only the states and results it returns.
 */
const transition = (state: LogState, event: SessionEvent.SessionEvent): Transition => {
  const result = transitionOf(state, event)
  // An open rollback range (ADR 0061) takes in every message its turn folds until its `turn/end`, as `History` does.
  if (state.dropped?.open !== true || !contributes(event)) return result
  const ranges = state.dropped.ranges.slice()
  const [from, to] = ranges[ranges.length - 1]!
  ranges[ranges.length - 1] = [from, to + 1]
  return { next: { ...result.next, dropped: { ranges, open: true } }, violation: result.violation }
}

const transitionOf = (state: LogState, event: SessionEvent.SessionEvent): Transition => {
  const seq = event.seq
  const nextSeq = seq + 1
  const { openStep, openTurn } = state

  switch (event.type) {
    case "user/message":
      return accept(same(state, event))
    case "turn/start": {
      const { turn } = event.data
      const opened = stateOf(state, nextSeq, {
        lastTurn: turn,
        open: { turn, step: undefined },
        lastStep: 0,
        calls: noCalls
      })
      if (openTurn !== undefined) {
        return {
          next: opened,
          violation: violation(seq, "nested-turn", `turn/start ${turn} while turn ${openTurn} is open`)
        }
      }
      if (turn !== state.lastTurn + 1) {
        return {
          next: opened,
          violation: violation(seq, "turn-number", `turn/start ${turn} but the next turn is ${state.lastTurn + 1}`)
        }
      }
      return accept(opened)
    }
    case "turn/end": {
      const { turn } = event.data
      if (openTurn === undefined) {
        return refuse(state, event, "turn-end-mismatch", `turn/end ${turn} but no turn is open`)
      }
      if (turn !== openTurn) {
        return refuse(state, event, "turn-end-mismatch", `turn/end ${turn} but the open turn is ${openTurn}`)
      }
      const closed = stateOf(state, nextSeq, {
        open: { turn: undefined, step: undefined },
        calls: noCalls,
        ...(state.dropped?.open === true ? { dropped: { ranges: state.dropped.ranges, open: false } } : {})
      })
      if (openStep !== undefined) {
        return {
          next: closed,
          violation: violation(seq, "turn-end-step-open", `turn/end ${turn} while step ${openStep} is open`)
        }
      }
      return accept(closed)
    }
    case "step/start": {
      const { step, turn } = event.data
      const misplaced = enclosure(state, event, turn, undefined)
      if (misplaced !== undefined) return misplaced
      const opened = stateOf(state, nextSeq, { open: { turn: openTurn, step }, lastStep: step, calls: noCalls })
      if (openStep !== undefined) {
        return {
          next: opened,
          violation: violation(seq, "nested-step", `step/start ${step} while step ${openStep} is open`)
        }
      }
      if (step !== state.lastStep + 1) {
        return {
          next: opened,
          violation: violation(
            seq,
            "step-number",
            `step/start ${step} but the next step of turn ${turn} is ${state.lastStep + 1}`
          )
        }
      }
      return accept(opened)
    }
    case "step/end": {
      const { step, turn } = event.data
      const misplaced = enclosure(state, event, turn, undefined)
      if (misplaced !== undefined) return misplaced
      if (openStep === undefined) {
        return refuse(state, event, "step-end-mismatch", `step/end ${step} but no step is open`)
      }
      if (step !== openStep) {
        return refuse(state, event, "step-end-mismatch", `step/end ${step} but the open step is ${openStep}`)
      }
      return accept(stateOf(state, nextSeq, { open: { turn: openTurn, step: undefined }, calls: noCalls }))
    }
    case "steering/message":
      return enclosure(state, event, event.data.turn, undefined) ?? accept(same(state, event))
    case "request/header": {
      if (openTurn === undefined) return refuse(state, event, "outside-turn", "request/header outside a turn")
      return accept(stateOf(state, nextSeq, { header: event.data.header }))
    }
    case "assistant/chunk":
      return enclosure(state, event, event.data.turn, event.data.step) ?? accept(same(state, event))
    case "compaction": {
      const { messages, summary } = event.data
      const dropped = state.dropped?.open === true ? { ranges: [[messages, messages] as const], open: true } : null
      return enclosure(state, event, event.data.turn, event.data.step) ??
        accept(stateOf(state, nextSeq, { compaction: { messages, summary }, dropped }))
    }
    case "turn/rollback": {
      const misplaced = enclosure(state, event, event.data.turn, undefined)
      if (misplaced !== undefined) return misplaced
      const start = Math.max(event.data.from, state.compaction?.messages ?? 0)
      const range = [start, Math.max(start, event.data.through)] as const
      const ranges = state.dropped === undefined ? [range] : state.dropped.ranges.concat([range])
      return accept(stateOf(state, nextSeq, { dropped: { ranges, open: true } }))
    }
    case "assistant/message": {
      const misplaced = enclosure(state, event, event.data.turn, event.data.step)
      if (misplaced !== undefined) return misplaced
      const calls = mergeMessageCalls(state.calls, event.data.content)
      return accept(calls === state.calls ? same(state, event) : withCalls(state, nextSeq, calls))
    }
    case "tool/call": {
      const { arguments: args, callId, name, step, turn } = event.data
      const misplaced = enclosure(state, event, turn, step)
      if (misplaced !== undefined) return misplaced
      const index = findCall(state.calls, callId)
      if (index === -1) {
        return accept(
          withCalls(state, nextSeq, [...state.calls, {
            callId,
            name,
            arguments: args,
            callSeq: seq,
            ...(event.data.replay === undefined ? {} : { replay: event.data.replay }),
            resultSeq: undefined,
            inMessage: false
          }])
        )
      }
      const known = state.calls[index]!
      if (known.callSeq !== undefined) {
        return refuse(
          state,
          event,
          "duplicate-tool-call",
          `tool/call ${callId} was already called at seq ${known.callSeq}`
        )
      }
      return accept(withCalls(
        state,
        nextSeq,
        replaceCall(state.calls, index, {
          ...known,
          callSeq: seq,
          ...(event.data.replay === undefined ? {} : { replay: event.data.replay })
        })
      ))
    }
    case "tool/result": {
      const { callId, error, name, step, turn } = event.data
      const misplaced = enclosure(state, event, turn, step)
      if (misplaced !== undefined) return misplaced
      const notStarted = error?.code === TOOL_NOT_STARTED
      const index = findCall(state.calls, callId)
      const known = index === -1 ? undefined : state.calls[index]!
      if (known?.resultSeq !== undefined) {
        return refuse(
          state,
          event,
          "duplicate-tool-result",
          `tool/result ${callId} was already answered at seq ${known.resultSeq}`
        )
      }
      if (known?.callSeq === undefined && !notStarted) {
        return refuse(state, event, "unknown-tool-call", `tool/result ${callId} answers no tool/call of step ${step}`)
      }
      const calls = known === undefined
        ? [...state.calls, { callId, name, arguments: "", callSeq: undefined, resultSeq: seq, inMessage: false }]
        : replaceCall(state.calls, index, { ...known, resultSeq: seq })
      return accept(withCalls(state, nextSeq, calls))
    }
  }
}

/** The `seq-gap` violation of an event, if its `seq` is not the one the state expects. */
const checkSeq = (state: LogState, event: SessionEvent.SessionEvent): LogViolation | undefined =>
  event.seq === state.nextSeq
    ? undefined
    : {
      ...violation(event.seq, "seq-gap", `seq ${event.seq} but the next seq is ${state.nextSeq}`),
      index: state.nextSeq
    }

export const step = (
  state: LogState,
  event: SessionEvent.SessionEvent
): { readonly state: LogState } | { readonly violation: LogViolation } => {
  const gap = checkSeq(state, event)
  if (gap !== undefined) return { violation: gap }
  const { next, violation } = transition(state, event)
  return violation === undefined ? { state: next } : { violation }
}

export const checkLog = (events: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<LogViolation> => {
  const found: Array<LogViolation> = []
  let state = initial
  events.forEach((event, index) => {
    const at = (broken: LogViolation) => found.push(broken.index === index ? broken : { ...broken, index })
    const gap = checkSeq(state, event)
    if (gap !== undefined) at(gap)
    if (
      event.type === "step/end" && event.data.turn === state.openTurn && event.data.step === state.openStep
    ) {
      for (const call of state.owed) {
        at(violation(
          event.seq,
          "unanswered-tool-call",
          `step/end ${event.data.step} of turn ${event.data.turn} leaves tool call ${call.callId} (${call.name}) unanswered`
        ))
      }
    }
    const { next, violation: broken } = transition(state, event)
    if (broken !== undefined) at(broken)
    state = next
  })
  if (state.openTurn !== undefined) {
    found.push({
      ...violation(state.nextSeq - 1, "unclosed-turn", `the log ends inside turn ${state.openTurn}`),
      index: events.length - 1
    })
  }
  return found
}
