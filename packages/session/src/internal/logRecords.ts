/**
 * The records a session log is made of, and what a log holds after them: decoding stored records and validating
 * new events at the boundary, stamping typed inputs with `seq` and `time`, the fold of an event into the log's data
 * (`LogData`: events, enclosure state, history, last checkpoint), and the errors that name a refused record.
 */
import { Ids, SessionEvent, Store as StoreRecords } from "@harness/domain"
import { Effect, Either, ParseResult, Schema } from "effect"
import type { History } from "../History.js"
import type { LogState } from "../LogCheck.js"
import type { InboxRecordInput } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import * as history from "./history.js"
import * as logCheck from "./logCheck.js"

// Compiled once. `validate` checks an event and copies it (excess keys refused); a stored record is decoded from its
// JSON text by `decodeJson`. The encoded form of `SessionEvent` is its type form (the schema has no
// transformations: a test walks its AST to keep it so), so the store JSON-encodes the validated copy directly.
const validate = Schema.validateEither(SessionEvent.SessionEvent, { onExcessProperty: "error" })
export const validateInbox = Schema.validateEither(StoreRecords.InboxRecord, { onExcessProperty: "error" })
// An inbox record is checked with `is` first (no allocation; the agent hands over messages it already decoded and
// froze), and validated in full only to name what is wrong.
export const isInboxRecord = Schema.is(StoreRecords.InboxRecord, { onExcessProperty: "error" })
const StoredRecordSchema = Schema.Union(SessionEvent.SessionEvent, StoreRecords.InboxRecord)
const decodeJson = Schema.decodeEither(Schema.parseJson(StoredRecordSchema))
// The fast path of a load: `JSON.parse` and an exact type check (no excess keys), which allocates nothing but the
// parsed value; only a record that fails it is decoded in full (stripping excess keys, or naming what is wrong).
const isExactRecord = Schema.is(StoredRecordSchema, { onExcessProperty: "error" })

/** Decodes one stored record's text; the problem as a sentence when it is not a record. */
export const decodeRecord = (
  text: string
): Either.Either<SessionEvent.SessionEvent | StoreRecords.InboxRecord, string> => {
  try {
    const parsed: unknown = JSON.parse(text)
    if (isExactRecord(parsed)) return Either.right(parsed)
  } catch {
    // Not JSON: the full decode below names the problem.
  }
  return Either.mapLeft(decodeJson(text), formatIssue)
}

export const formatIssue = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)

/**
 * The pending inbox, one stored value at a time: an acceptance adds its item, a settlement removes it, a logged
 * message carrying its id claims it (ADR 0017). `open`'s scan and the snapshot writer keep it the same way.
 */
export const trackPending = (
  pending: Map<string, StoreRecords.InboxAccepted>,
  value: StoreRecords.InboxRecord | SessionEvent.SessionEvent
): void => {
  if (StoreRecords.isInboxRecord(value)) return StoreRecords.foldPending(pending, value)
  const logged = StoreRecords.messageIdOf(value)
  if (logged !== undefined) pending.delete(logged)
}

/**
 * Checks an event at the boundary: a copy that shares nothing with the caller's value. Returns the problem as a
 * sentence when the event does not match its schema or is not JSON-lossless.
 */
export const encode = (candidate: unknown): Either.Either<SessionEvent.SessionEvent, string> =>
  Either.mapLeft(validate(candidate), formatIssue)

export const storeError = (what: string) => (error: SessionStoreError) =>
  error.reason === "Busy"
    ? busyError(`${what}: ${error.message}`, error)
    : new SessionLogError({ reason: "store", message: `${what}: ${error.message} (${error.reason})` })

/** Another writer holds the session (or took it over from this log): `busy`, naming the holder when known. */
export const busyError = (message: string, error: SessionStoreError) =>
  new SessionLogError({
    reason: "busy",
    message,
    ...(error.id === undefined ? {} : { session: error.id }),
    ...(error.holder === undefined ? {} : { holder: error.holder })
  })
/** The log's error for the store's refusal of a commit of these events (its message made only on a refusal). */
export const refusedCommit = (events: ReadonlyArray<SessionEvent.SessionEvent>) => (error: SessionStoreError) =>
  storeError(`the store refused ${describeBatch(events)}`)(error)

export const invalidSeed = (message: string, seq?: number) =>
  new SessionLogError(
    seq === undefined ? { reason: "invalid-seed", message } : { reason: "invalid-seed", message, seq }
  )

/**
 * A typed input stamped with `seq` and `time`: that variant's event, built as one object literal in the schema's key
 * order. Not `{ ...input, seq, time }`: in V8 a spread followed by keys the source lacks gives every object a hidden
 * class of its own (a map, its descriptors and a property array, ~200 bytes the log would keep per event), and makes
 * every site that reads events megamorphic (ADR 0030).
 */
export const stamp = (input: SessionEvent.SessionEventInput, seq: number, time: number): SessionEvent.SessionEvent =>
  // One variant's input plus `seq` and `time` is that variant's event; TypeScript cannot follow the union.
  (input.sourceEventSeqs === undefined
    ? { seq, time, type: input.type, data: input.data }
    : {
      seq,
      time,
      type: input.type,
      data: input.data,
      sourceEventSeqs: input.sourceEventSeqs
    }) as SessionEvent.SessionEvent

/** An inbox record stamped with `time`, one object literal in the schema's key order (see {@link stamp}). */
export const stampInbox = (input: InboxRecordInput, time: number): StoreRecords.InboxRecord =>
  input.type === "inbox/accepted"
    ? input.expiresAt === undefined && input.supersedes === undefined
      ? { type: input.type, time, message: input.message, placement: input.placement, wakeup: input.wakeup }
      : staleAccepted(input, time)
    : input.type === "inbox/settled"
    ? input.cause === undefined
      ? { type: input.type, time, id: input.id, fate: input.fate }
      : input.by === undefined
      ? { type: input.type, time, id: input.id, fate: input.fate, cause: input.cause }
      : { type: input.type, time, id: input.id, fate: input.fate, cause: input.cause, by: input.by }
    : input.type === "inbox/revised"
    ? { type: input.type, time, id: input.id, change: input.change }
    : input.type === "approval/requested"
    ? {
      type: input.type,
      time,
      callId: input.callId,
      turn: input.turn,
      step: input.step,
      name: input.name,
      arguments: input.arguments,
      ...(input.deadline === undefined ? {} : { deadline: input.deadline })
    }
    : {
      type: input.type,
      time,
      callId: input.callId,
      decision: input.decision,
      ...(input.reason === undefined ? {} : { reason: input.reason }),
      by: input.by
    }

/** An `inbox/accepted` of a send that said `ttl`, `expiresAt` or `supersedes` (ADR 0059): rare, so built by spreads. */
const staleAccepted = (
  input: Extract<InboxRecordInput, { readonly type: "inbox/accepted" }>,
  time: number
): StoreRecords.InboxAccepted => ({
  type: input.type,
  time,
  message: input.message,
  placement: input.placement,
  wakeup: input.wakeup,
  ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
  ...(input.supersedes === undefined ? {} : { supersedes: input.supersedes })
})

/** The log right after its latest `turn/end`: where the writer may take a snapshot (ADR 0022). */
export interface Checkpoint {
  readonly seq: number
  readonly state: LogState
  /** The history held in memory at that point (without a snapshot's prefix not yet decoded). */
  readonly history: History
}

/** What a log holds after its last event. */
export interface LogData {
  /** The events from `base` on (older ones are in the store: ADR 0022). */
  readonly events: AppendOnly.AppendOnly<SessionEvent.SessionEvent>
  /** The `seq` of the first event in `events`. */
  readonly base: number
  readonly state: LogState
  readonly history: History
  readonly checkpoint: Checkpoint | undefined
}

export const emptyData: LogData = {
  events: AppendOnly.empty(),
  base: 0,
  state: logCheck.initial,
  history: history.empty,
  checkpoint: undefined
}

/** Folds one event that passed `LogCheck.step` into the log's data. */
export const advance = (data: LogData, event: SessionEvent.SessionEvent, state: LogState): LogData => {
  const folded = history.fold(data.history, event)
  return {
    events: AppendOnly.append(data.events, event),
    base: data.base,
    state,
    history: folded,
    checkpoint: event.type === "turn/end" ? { seq: event.seq, state, history: folded } : data.checkpoint
  }
}

const describeViolations = (violations: ReadonlyArray<{ seq: number; rule: string; message: string }>) => {
  const shown = violations.slice(0, 5).map((v) => `seq ${v.seq}: ${v.rule}: ${v.message}`).join("; ")
  const more = violations.length > 5 ? ` (and ${violations.length - 5} more)` : ""
  return `${violations.length} rule(s): ${shown}${more}`
}

/**
 * Checks a whole log that is to be continued (a seed): gap-free from 0, no violation, no open turn. Returns what
 * the log holds after it.
 */
export const checkContinuable = (
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<LogData, SessionLogError> => {
  const violations = logCheck.checkLog(events)
  if (violations.length > 0) {
    return Effect.fail(
      invalidSeed(`the log cannot be continued, it breaks ${describeViolations(violations)}`, violations[0]!.seq)
    )
  }
  let data = emptyData
  for (const event of events) {
    const checked = logCheck.step(data.state, event)
    // checkLog found nothing, so every step succeeds; the guard keeps the types honest.
    if ("violation" in checked) return Effect.fail(invalidSeed(checked.violation.message, event.seq))
    data = advance(data, event, checked.state)
  }
  return Effect.succeed(data)
}

/** A random (version 4) UUID from the `Random` service, so seeded tests get stable ids. */
export const randomSessionId: Effect.Effect<Ids.SessionId> = Ids.randomUuid(Ids.SessionId)

const describeBatch = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.length === 1
    ? `${events[0]!.type} at seq ${events[0]!.seq}`
    : `${events.length} events at seqs ${events[0]!.seq}–${events.at(-1)!.seq}`

/** A stored session found damaged: `corrupt`, naming the session and the stored record. */
export const corrupt = (id: Ids.SessionId, position: number, what: string, seq?: number) =>
  new SessionLogError({
    reason: "corrupt",
    message: `session ${JSON.stringify(id)} is corrupt at stored record ${position}: ${what}`,
    session: id,
    position,
    ...(seq === undefined ? {} : { seq })
  })
