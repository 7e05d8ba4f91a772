/**
 * The log snapshot's text (ADR 0022): one JSON head line, a newline, then a JSON array of the events the history is
 * derived from. The head is small and decoded at `open`; the array is decoded only when the history is first read.
 * Disk is untrusted: every part is checked with the same schemas as a stored record, and a snapshot that does not
 * decode is reported as a sentence so `open` can ignore it and replay the log.
 */
import { SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Either, ParseResult, Schema } from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"

export const format = "harness/snapshot"
export const version = 1

const Head = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Literal(version),
  /** The `seq` of the last event the snapshot covers. */
  seq: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** The position of the last record it covers. */
  position: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** `JSON.stringify` of that record: what the store holds at `position` when the snapshot agrees with the log. */
  last: Schema.String,
  lastTurn: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  lastStep: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  header: Schema.optional(SessionEvent.RequestHeader.fields.header),
  /** The pending inbox at `position`, in acceptance order. */
  inbox: Schema.Array(StoreRecords.InboxAccepted),
  /** The number of history messages (the array's events each give one). */
  messages: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))
})
type Head = typeof Head.Type

const decodeHead = Schema.decodeUnknownEither(Head, { onExcessProperty: "error" })
// One exact check per event type (the union's own check tries its members in turn: about twice the cost).
const isEventOfType = new Map<string, (u: unknown) => boolean>(
  SessionEvent.SessionEvent.members.map((member): readonly [string, (u: unknown) => boolean] => [
    member.fields.type.literals[0],
    Schema.is(member as Schema.Schema<SessionEvent.SessionEvent>, { onExcessProperty: "error" })
  ])
)
const isHistoryEvent = (u: unknown): u is SessionEvent.SessionEvent => {
  const type = typeof u === "object" && u !== null && "type" in u ? u.type : undefined
  const is = typeof type === "string" ? isEventOfType.get(type) : undefined
  return is !== undefined && is(u)
}

/** What `open` starts from: the state at the snapshot, its pending inbox, and the history prefix still as text. */
export interface Start {
  readonly seq: number
  readonly position: number
  readonly last: string
  readonly state: LogState
  readonly inbox: ReadonlyArray<StoreRecords.InboxAccepted>
  readonly messages: number
  /** The history events, comma-separated JSON texts without the enclosing brackets ("" for none). */
  readonly historyText: string
}

/** What the log knows when it takes a snapshot: what a later `open` starts from. */
export type Input = Start

/** The snapshot text. Contract: only where no turn is open (the state's other fields are then empty). */
export const encode = (input: Input): string => {
  const head: Head = {
    format,
    version,
    seq: input.seq,
    position: input.position,
    last: input.last,
    lastTurn: input.state.lastTurn,
    lastStep: input.state.lastStep,
    ...(input.state.header === undefined ? {} : { header: input.state.header }),
    inbox: input.inbox,
    messages: input.messages
  }
  return `${JSON.stringify(head)}\n[${input.historyText}]`
}

/** Decodes a snapshot's head; the history stays text. Left: what is wrong, as a sentence. */
export const decode = (text: string, seq: number, position: number): Either.Either<Start, string> => {
  const newline = text.indexOf("\n")
  if (newline < 0) return Either.left("it has no head line")
  let parsed: unknown
  try {
    parsed = JSON.parse(text.slice(0, newline))
  } catch (error) {
    return Either.left(`its head is not JSON: ${String(error)}`)
  }
  const decoded = decodeHead(parsed)
  if (Either.isLeft(decoded)) {
    return Either.left(`its head is invalid: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  }
  const head = decoded.right
  if (head.seq !== seq || head.position !== position) {
    return Either.left(
      `its head covers seq ${head.seq} at position ${head.position}, the store says seq ${seq} at position ${position}`
    )
  }
  if (head.position < head.seq) return Either.left(`position ${head.position} cannot hold seq ${head.seq}`)
  const body = text.slice(newline + 1)
  if (!body.startsWith("[") || !body.endsWith("]")) return Either.left("its history is not a JSON array")
  return Either.right({
    seq: head.seq,
    position: head.position,
    last: head.last,
    state: {
      ...logCheck.initial,
      nextSeq: head.seq + 1,
      lastTurn: head.lastTurn,
      lastStep: head.lastStep,
      header: head.header
    },
    inbox: head.inbox,
    messages: head.messages,
    historyText: body.slice(1, -1)
  })
}

/** The history a snapshot's history text holds, checked event by event and against the expected message count. */
export const decodeHistory = (historyText: string, messages: number): Either.Either<History, string> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(`[${historyText}]`)
  } catch (error) {
    return Either.left(`its history is not JSON: ${String(error)}`)
  }
  if (!Array.isArray(parsed)) return Either.left("its history is not an array")
  let folded = history.empty
  for (const [index, event] of parsed.entries()) {
    if (!isHistoryEvent(event) || !history.contributes(event)) {
      return Either.left(`its history entry ${index} is not an event the history is derived from`)
    }
    folded = history.fold(folded, event)
  }
  if (folded.length !== messages) {
    return Either.left(`its history holds ${folded.length} messages, its head says ${messages}`)
  }
  return Either.right(folded)
}

/** Appends the history events among `events` to a history text; returns the text and how many were added. */
export const appendHistoryText = (
  text: string,
  events: Iterable<SessionEvent.SessionEvent>
): { readonly text: string; readonly added: number } => {
  const parts: Array<string> = text === "" ? [] : [text]
  let added = 0
  for (const event of events) {
    if (!history.contributes(event)) continue
    parts.push(JSON.stringify(event))
    added++
  }
  return { text: parts.join(","), added }
}
