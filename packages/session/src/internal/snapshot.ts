/**
 * The log snapshot's encoding (ADR 0022, ADR 0027): a small JSON head, decoded at `open`, and a body, a JSON array of
 * the events the history is derived from, read and decoded only when the history is first read (or when the writer
 * extends it). Disk is untrusted: the head and every body event are checked with the same schemas as a stored
 * record, and a part that does not decode is reported as a sentence so the log can ignore it (replay, or derive the
 * history from the stored events).
 */
import type { Prompt } from "@effect/ai"
import { SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Either, ParseResult, Schema } from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"

export const format = "harness/snapshot"
/** 2: head and body stored apart (ADR 0027). A version-1 snapshot (one text) does not decode: the log replays. */
export const version = 2

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
  /** The number of history messages (the body's events each give one). */
  messages: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** The body's length in UTF-16 code units: a body saved with another head is refused before it is parsed. */
  bodyLength: Schema.Int.pipe(Schema.greaterThanOrEqualTo(2))
})
type Head = typeof Head.Type

const decodeHeadJson = Schema.decodeUnknownEither(Head, { onExcessProperty: "error" })
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

/** What `open` starts from: the state at the snapshot, its pending inbox, and what its body must hold. */
export interface Start {
  readonly seq: number
  readonly position: number
  readonly last: string
  readonly state: LogState
  readonly inbox: ReadonlyArray<StoreRecords.InboxAccepted>
  readonly messages: number
  readonly bodyLength: number
}

/** What the log knows when it takes a snapshot: what a later `open` starts from, and the history events. */
export interface Input {
  readonly seq: number
  readonly position: number
  readonly last: string
  readonly state: LogState
  readonly inbox: ReadonlyArray<StoreRecords.InboxAccepted>
  readonly messages: number
  /** The history events, comma-separated JSON texts without the enclosing brackets ("" for none). */
  readonly historyText: string
}

/** The snapshot's head and body. Contract: only where no turn is open (the state's other fields are then empty). */
export const encode = (input: Input): { readonly head: string; readonly body: string } => {
  const body = `[${input.historyText}]`
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
    messages: input.messages,
    bodyLength: body.length
  }
  return { head: JSON.stringify(head), body }
}

/** Decodes a snapshot's head, checked against where the store says it ends. Left: what is wrong, as a sentence. */
export const decodeHead = (text: string, seq: number, position: number): Either.Either<Start, string> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return Either.left(`its head is not JSON: ${String(error)}`)
  }
  const decoded = decodeHeadJson(parsed)
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
    bodyLength: head.bodyLength
  })
}

/** A decoded body: the history it holds and its events as the log extends them (the text inside the brackets). */
export interface Body {
  readonly history: History
  readonly historyText: string
}

/**
 * The history a snapshot's body holds: its length as the head says, JSON, every entry an event the history is
 * derived from (the exact schema check of a stored record), and as many messages as the head says.
 */
export const decodeBody = (
  body: string,
  start: Pick<Start, "messages" | "bodyLength">
): Either.Either<Body, string> => {
  if (body.length !== start.bodyLength) {
    return Either.left(`its body is ${body.length} characters long, its head says ${start.bodyLength}`)
  }
  if (!body.startsWith("[") || !body.endsWith("]")) return Either.left("its body is not a JSON array")
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch (error) {
    return Either.left(`its body is not JSON: ${String(error)}`)
  }
  if (!Array.isArray(parsed)) return Either.left("its body is not an array")
  // Built as one array, then one persistent sequence: the fold's per-event append is not needed for a prefix.
  const messages: Array<Prompt.Message> = []
  for (let index = 0; index < parsed.length; index++) {
    const event: unknown = parsed[index]
    const message = isHistoryEvent(event) ? history.messageOf(event) : undefined
    if (message === undefined) {
      return Either.left(`its body entry ${index} is not an event the history is derived from`)
    }
    messages.push(message)
  }
  if (messages.length !== start.messages) {
    return Either.left(`its body holds ${messages.length} messages, its head says ${start.messages}`)
  }
  return Either.right({ history: history.unsafeOfMessages(messages), historyText: body.slice(1, -1) })
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
