/**
 * The log snapshot's encoding (ADR 0022, ADR 0027, ADR 0080): a small JSON head, decoded at `open`, and a body of one
 * entry per history message — just what the message is built from — read and decoded only when the history is first
 * read (or when the writer extends it). A version-3 body is length-prefixed entries read in one pass
 * (`snapshotBody.ts`); a version-2 body, a JSON array of entries, still opens, and the next snapshot rewrites it.
 * Disk is untrusted: the head and every entry are checked exactly against the events' own schemas, and a part that
 * does not decode is reported as a sentence so the log can ignore it (replay, or derive the history from the stored
 * events).
 */
import type { Prompt } from "@effect/ai"
import { Content, SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Either, ParseResult, Schema } from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"
import type { Approvals } from "./pendingApprovals.js"
import { slowPath } from "./slowPath.js"
import * as snapshotBody from "./snapshotBody.js"

const format = "harness/snapshot"
/**
 * 3: the body's entries length-prefixed (ADR 0080); 2: head and body stored apart, the body a JSON array (ADR 0027),
 * still read. A version-1 snapshot (one text) does not decode: the log replays.
 */
const version = 3

const Head = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Literal(2, version),
  /** The `seq` of the last event the snapshot covers. */
  seq: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** The position of the last record it covers. */
  position: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** `JSON.stringify` of that record: what the store holds at `position` when the snapshot agrees with the log. */
  last: Schema.String,
  lastTurn: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  lastStep: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  header: Schema.optional(SessionEvent.RequestHeader.fields.header),
  /** The latest compaction before `seq` (ADR 0052): absent in snapshots of logs that have none. */
  compaction: Schema.optional(Schema.Struct({
    messages: SessionEvent.Compaction.fields.messages,
    summary: SessionEvent.Compaction.fields.summary
  })),
  /** The ranges rollbacks left out since that compaction (ADR 0061): absent when there are none. */
  dropped: Schema.optional(
    Schema.Array(Schema.Tuple(SessionEvent.TurnRollback.fields.from, SessionEvent.TurnRollback.fields.through))
  ),
  /**
   * The last `turn/start` at or before `seq`, and its record's position (ADR 0068): where a resumed agent reads the
   * last turn from. Absent in a snapshot of a log without turns, and in heads written before it (then unknown).
   */
  turnStart: Schema.optional(Schema.Struct({
    seq: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
    position: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))
  })),
  /** The pending inbox at `position`, in acceptance order. */
  inbox: Schema.Array(StoreRecords.InboxAccepted),
  /**
   * The pending approvals at `position`, in request order (ADR 0075, R237): always written, absent only in heads
   * written before it (then unknown).
   */
  approvals: Schema.optional(Schema.Array(StoreRecords.ApprovalRequested)),
  /** The number of history messages (the body's events each give one). */
  messages: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** The body's length in UTF-16 code units: a body saved with another head is refused before it is parsed. */
  bodyLength: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))
})
type Head = typeof Head.Type

const decodeHeadJson = Schema.decodeUnknownEither(Head, { onExcessProperty: "error" })
/**
 * A version-2 body entry: the message of a `user/message` or `steering/message` (`u`: its texts), of an `assistant/message`
 * with content (`a`: its blocks and provenance), or of a `tool/result` (`t`: call id, tool name, whether it failed,
 * and its text blocks joined). Each field is the event's own schema, so an entry holds nothing an event could not.
 */
const entries = {
  u: Schema.Struct({ k: Schema.Literal("u"), t: Schema.NonEmptyArray(Content.TextBlock.fields.text) }),
  a: Schema.Struct({
    k: Schema.Literal("a"),
    c: Schema.NonEmptyArray(Content.AssistantBlock),
    p: SessionEvent.AssistantMessage.fields.provenance
  }),
  t: Schema.Struct({
    k: Schema.Literal("t"),
    i: SessionEvent.ToolResult.fields.callId,
    n: SessionEvent.ToolResult.fields.name,
    e: SessionEvent.ToolResult.fields.isError,
    r: Schema.String
  })
}
type Entry = { readonly [K in keyof typeof entries]: typeof entries[K]["Type"] }[keyof typeof entries]

// One exact check per kind (a union's own check tries its members in turn).
const isEntryOfKind = new Map<string, (u: unknown) => boolean>([
  ["u", Schema.is(entries.u, { onExcessProperty: "error" })],
  ["a", Schema.is(entries.a, { onExcessProperty: "error" })],
  ["t", Schema.is(entries.t, { onExcessProperty: "error" })]
])

/** Whether `u` holds exactly `keys`, own and enumerable, in that order (JSON keeps the order it was written in). */
const keysAre = (u: object, keys: ReadonlyArray<string>): boolean => {
  const own = Object.keys(u)
  if (own.length !== keys.length) return false
  for (let i = 0; i < keys.length; i++) if (own[i] !== keys[i]) return false
  return true
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const isTexts = (u: unknown): boolean => {
  if (!Array.isArray(u) || u.length === 0) return false
  for (const text of u) if (typeof text !== "string") return false
  return true
}

/** A text, reasoning or tool-call block as `entryOf` writes it (a tool call's id non-empty, as `ToolCallId` asks). */
const isCommonBlock = (u: unknown): boolean => {
  if (!isObject(u)) return false
  switch (u.type) {
    case "text":
    case "reasoning":
      return keysAre(u, ["type", "text"]) && typeof u.text === "string"
    case "tool-call":
      return keysAre(u, ["type", "id", "name", "arguments"]) && typeof u.id === "string" && u.id.length > 0 &&
        typeof u.name === "string" && typeof u.arguments === "string"
    default:
      return false
  }
}

/** A provenance of strings only (`model`, and `provider` / `reportedModel` when given): no provider replay state. */
const isPlainProvenance = (u: unknown): boolean => {
  if (!isObject(u) || typeof u.model !== "string") return false
  for (const key of Object.keys(u)) {
    if ((key !== "model" && key !== "provider" && key !== "reportedModel") || typeof u[key] !== "string") return false
  }
  return true
}

/**
 * The common forms of a body entry, checked by hand (ADR 0068): the keys in the order `entryOf` writes them and the
 * types the entry's schema asks, with no provider replay state (whose JSON the schema checks). Sound, not complete:
 * every entry it accepts the schema accepts (a property test), and an entry it does not accept goes to the schema.
 * Measured (W7): the schema's walk was most of decoding a long session's history.
 */
export const isCommonEntry = (u: unknown): boolean => {
  if (!isObject(u)) return false
  switch (u.k) {
    case "u":
      return keysAre(u, ["k", "t"]) && isTexts(u.t)
    case "a": {
      if (!keysAre(u, ["k", "c", "p"]) || !Array.isArray(u.c) || u.c.length === 0) return false
      for (const block of u.c) if (!isCommonBlock(block)) return false
      return isPlainProvenance(u.p)
    }
    case "t":
      return keysAre(u, ["k", "i", "n", "e", "r"]) && typeof u.i === "string" && u.i.length > 0 &&
        typeof u.n === "string" && typeof u.e === "boolean" && typeof u.r === "string"
    default:
      return false
  }
}

/** Whether `u` is a body entry by its schema (exact: no missing, wrong or extra key). */
export const isEntryBySchema = (u: unknown): boolean => {
  const kind = typeof u === "object" && u !== null && "k" in u ? u.k : undefined
  const is = typeof kind === "string" ? isEntryOfKind.get(kind) : undefined
  return is !== undefined && is(u)
}

/** Whether `u` is a body entry: its common form by hand, anything else by the schema (only the schema on the slow path). */
const isEntry: (u: unknown) => boolean = slowPath ? isEntryBySchema : (u) => isCommonEntry(u) || isEntryBySchema(u)

/** The version-2 body entry of an event the history is derived from (`undefined` for any other). */
export const entryOf = (event: SessionEvent.SessionEvent): Entry | undefined => {
  switch (event.type) {
    case "user/message":
    case "steering/message":
      return { k: "u", t: event.data.content.map((b) => b.text) as [string, ...Array<string>] }
    case "assistant/message":
      return event.data.content.length === 0
        ? undefined
        : {
          k: "a",
          c: event.data.content as [Content.AssistantBlock, ...Array<Content.AssistantBlock>],
          p: event.data.provenance
        }
    case "tool/result":
      return {
        k: "t",
        i: event.data.callId,
        n: event.data.name,
        e: event.data.isError,
        r: Content.joinText(event.data.content)
      }
    default:
      return undefined
  }
}

/**
 * Where the last `turn/start` of a log is stored: its `seq` and its record's position; `undefined` when the log has no
 * turn, `"unknown"` when a snapshot written before heads named it is all there is to go by.
 */
export type TurnStart = { readonly seq: number; readonly position: number } | undefined | "unknown"

/** The log at a snapshot: the state there, its pending inbox, and how many history messages it covers. */
interface Point {
  readonly seq: number
  readonly position: number
  readonly last: string
  readonly state: LogState
  readonly inbox: ReadonlyArray<StoreRecords.InboxAccepted>
  /** The pending approvals at `position`. */
  readonly approvals: Approvals
  readonly messages: number
  /** The last `turn/start` at or before `seq`. */
  readonly turnStart: TurnStart
}

/** What `open` starts from: the point, its head's version, and the length its body must have. */
export interface Start extends Point {
  readonly version: 2 | 3
  readonly bodyLength: number
}

/** What the log knows when it takes a snapshot: what a later `open` starts from, and the history's entries. */
export interface Input extends Point {
  /** The history's entries as a version-3 body holds them ("" for none). */
  readonly historyText: string
}

/** The snapshot's head and body. Contract: only where no turn is open (the state's other fields are then empty). */
export const encode = (input: Input): { readonly head: string; readonly body: string } => {
  const body = input.historyText
  const head: Head = {
    format,
    version,
    seq: input.seq,
    position: input.position,
    last: input.last,
    lastTurn: input.state.lastTurn,
    lastStep: input.state.lastStep,
    ...(input.state.header === undefined ? {} : { header: input.state.header }),
    ...(input.state.compaction === undefined ? {} : { compaction: input.state.compaction }),
    ...(input.state.dropped === undefined ? {} : { dropped: input.state.dropped.ranges }),
    ...(input.turnStart === undefined || input.turnStart === "unknown" ? {} : { turnStart: input.turnStart }),
    inbox: input.inbox,
    ...(input.approvals === "unknown" ? {} : { approvals: input.approvals }),
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
      header: head.header,
      compaction: head.compaction,
      dropped: head.dropped === undefined ? undefined : { ranges: head.dropped, open: false }
    },
    inbox: head.inbox,
    approvals: head.approvals ?? "unknown",
    messages: head.messages,
    turnStart: head.turnStart ?? (head.lastTurn === 0 ? undefined : "unknown"),
    version: head.version,
    bodyLength: head.bodyLength
  })
}

/** A decoded body: the history it holds and its entries as the log extends them (a version-3 body's text). */
export interface Body {
  readonly history: History
  readonly historyText: string
}

/** The version-3 text of a version-2 entry. */
const textOfEntry = (entry: Entry): string => {
  switch (entry.k) {
    case "u":
      return snapshotBody.userEntry(entry.t)
    case "a":
      return snapshotBody.assistantEntry(entry.c, entry.p)
    case "t":
      return snapshotBody.toolEntry(entry.i, entry.n, entry.e, entry.r)
  }
}

/**
 * A version-2 body (a JSON array, every entry exact) rewritten as version 3 (ADR 0080), and its messages read from that
 * text as a version-3 body's are.
 */
const readVersion2 = (
  body: string
): Either.Either<{ readonly messages: Array<Prompt.Message>; readonly historyText: string }, string> => {
  if (!body.startsWith("[") || !body.endsWith("]")) return Either.left("its body is not a JSON array")
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch (error) {
    return Either.left(`its body is not JSON: ${String(error)}`)
  }
  if (!Array.isArray(parsed)) return Either.left("its body is not an array")
  const texts: Array<string> = []
  for (let index = 0; index < parsed.length; index++) {
    if (!isEntry(parsed[index])) return Either.left(`its body entry ${index} is not a history entry`)
    texts.push(textOfEntry(parsed[index] as Entry))
  }
  const historyText = texts.join("")
  return Either.map(snapshotBody.readEntries(historyText), (messages) => ({ messages, historyText }))
}

/**
 * The history a snapshot's body holds: its length as the head says, in its version's form, every entry exact, and
 * as many messages as the head says.
 */
export const decodeBody = (
  body: string,
  start: Pick<Start, "version" | "messages" | "bodyLength"> & {
    readonly state?: Pick<LogState, "compaction" | "dropped">
  }
): Either.Either<Body, string> => {
  if (body.length !== start.bodyLength) {
    return Either.left(`its body is ${body.length} characters long, its head says ${start.bodyLength}`)
  }
  const read = start.version === 2
    ? readVersion2(body)
    : Either.map(snapshotBody.readEntries(body), (messages) => ({ messages, historyText: body }))
  if (Either.isLeft(read)) return Either.left(read.left)
  const { historyText, messages } = read.right
  if (messages.length !== start.messages) {
    return Either.left(`its body holds ${messages.length} messages, its head says ${start.messages}`)
  }
  // Built as one array, then one persistent sequence: the fold's per-event append is not needed for a prefix.
  const folded = history.unsafeOfMessages(messages)
  const compaction = start.state?.compaction
  const dropped = start.state?.dropped
  const replaced = compaction === undefined ? folded : history.replacePrefix(folded, {
    count: compaction.messages,
    messages: [history.userMessageOf([compaction.summary])]
  })
  return Either.right({
    history: dropped === undefined ? replaced : history.withDropped(replaced, dropped),
    historyText
  })
}

/** Appends the entries of the history events among `events` to a history text; returns the text and the count. */
export const appendHistoryText = (
  text: string,
  events: Iterable<SessionEvent.SessionEvent>
): { readonly text: string; readonly added: number } => {
  const parts: Array<string> = [text]
  for (const event of events) {
    const entry = entryOf(event)
    if (entry !== undefined) parts.push(textOfEntry(entry))
  }
  return { text: parts.join(""), added: parts.length - 1 }
}
