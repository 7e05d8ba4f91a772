/**
 * What every storage backend shares: how a commit is ordered and encoded, the figures a summary keeps, and the
 * checks that refuse a bad append — in one module, so the memory, SQLite, JSONL and PostgreSQL backends agree.
 *
 * @since 0.0.0
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store } from "@harness/domain"
import type { Commit } from "./SessionStore.js"

/**
 * A commit predicate for {@link Faults.failWhen}: true when any of the commit's events matches.
 *
 * @since 0.0.0
 * @category utils
 */
export const anyEvent = (predicate: (event: SessionEvent.SessionEvent) => boolean) => (commit: Commit): boolean =>
  commit.events.some(predicate)

/**
 * For backends: the records of a commit in the order they are stored (inbox records first, then events).
 *
 * @since 0.0.0
 * @category utils
 */
export const commitRecords = (commit: Commit): ReadonlyArray<Store.StoreRecord> =>
  commit.inbox.length === 0
    ? commit.events
    : commit.events.length === 0
    ? commit.inbox
    : [...commit.inbox, ...commit.events]

/**
 * For backends: one record of a commit, encoded, with the facts summaries and the message index need.
 *
 * @since 0.0.0
 * @category models
 */
export interface EncodedRecord {
  /** The record's position: the session's record count before the commit plus its index in the commit. */
  readonly position: number
  /** `JSON.stringify` of the record: what the backend stores. */
  readonly text: string
  /** The UTF-8 length of `text`. */
  readonly bytes: number
  readonly time: number
  /** `inbox` for an inbox record, `turn` for a `turn/start` event, `event` for any other event. */
  readonly kind: "inbox" | "event" | "turn"
  /** `Store.messageIdOf` the record. */
  readonly messageId: Ids.AgentMessageId | undefined
  /** `Store.promptPreviewOf` the record. */
  readonly preview: string | undefined
}

/** One record at `position`, encoded. */
const encodeRecord = (
  record: Store.StoreRecord,
  position: number
): EncodedRecord => {
  const text = JSON.stringify(record)
  return {
    position,
    text,
    bytes: utf8Length(text),
    time: record.time,
    kind: Store.isInboxRecord(record) ? "inbox" : record.type === "turn/start" ? "turn" : "event",
    messageId: Store.messageIdOf(record),
    preview: Store.promptPreviewOf(record)
  }
}

/**
 * For backends: the records of `commit` in stored order, encoded, with positions from `from`.
 *
 * @since 0.0.0
 * @category utils
 */
export const encodeCommit = (commit: Commit, from: number): ReadonlyArray<EncodedRecord> =>
  commitRecords(commit).map((record, i) => encodeRecord(record, from + i))

/**
 * For backends: what a commit adds to a session's figures (see `Store.SessionSummary`).
 *
 * @since 0.0.0
 * @category models
 */
export interface CommitFigures {
  readonly records: number
  readonly events: number
  readonly turns: number
  readonly bytes: number
  /** The time of the commit's last record (absent for an empty commit). */
  readonly lastActivity: number | undefined
  /** The commit's first prompt preview and its position, if it has one. */
  readonly firstPrompt: { readonly text: string; readonly position: number } | undefined
}

/**
 * For backends: the figures of encoded records.
 *
 * @since 0.0.0
 * @category utils
 */
export const figuresOf = (records: ReadonlyArray<EncodedRecord>): CommitFigures => {
  let events = 0
  let turns = 0
  let bytes = 0
  let firstPrompt: CommitFigures["firstPrompt"] = undefined
  for (const record of records) {
    bytes += record.bytes
    if (record.kind !== "inbox") events++
    if (record.kind === "turn") turns++
    if (firstPrompt === undefined && record.preview !== undefined) {
      firstPrompt = { text: record.preview, position: record.position }
    }
  }
  return { records: records.length, events, turns, bytes, lastActivity: records.at(-1)?.time, firstPrompt }
}

/**
 * For backends: the figures of a session's records followed by a commit's (`commit`'s positions are the session's).
 * A backend keeps its sessions' figures by adding each commit's at the append that stores it.
 *
 * @since 0.0.0
 * @category utils
 */
export const addFigures = (session: CommitFigures, commit: CommitFigures): CommitFigures => ({
  records: session.records + commit.records,
  events: session.events + commit.events,
  turns: session.turns + commit.turns,
  bytes: session.bytes + commit.bytes,
  lastActivity: commit.lastActivity ?? session.lastActivity,
  firstPrompt: session.firstPrompt ?? commit.firstPrompt
})

/**
 * For backends: what `list` shows of a session from its header and figures; `bytes` defaults to the figures' (the
 * UTF-8 length of the header's and records' JSON texts, which a backend that counts its stored size passes instead).
 *
 * @since 0.0.0
 * @category utils
 */
export const summaryOf = (
  header: Store.SessionHeader,
  figures: CommitFigures,
  bytes: number = utf8Length(JSON.stringify(header)) + figures.bytes
): Store.SessionSummary => ({
  header,
  events: figures.events,
  turns: figures.turns,
  lastActivity: figures.lastActivity ?? header.createdAt,
  bytes,
  ...(figures.firstPrompt === undefined ? {} : { firstPrompt: figures.firstPrompt.text })
})

/**
 * For backends: the UTF-8 length of a string (what `bytes` counts).
 *
 * @since 0.0.0
 * @category utils
 */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next < 0xe000) {
        bytes += 4
        i++
      } else bytes += 3 // a lone surrogate is written as U+FFFD
    } else bytes += 3
  }
  return bytes
}

/**
 * For backends: why `commit` does not continue a session that stores `storedEvents` events (the `Conflict`
 * message), or `undefined` when it does.
 *
 * @since 0.0.0
 * @category utils
 */
export const contiguityIssue = (storedEvents: number, commit: Commit): string | undefined => {
  const events = commit.events
  for (let i = 0; i < events.length; i++) {
    const expected = storedEvents + i
    if (events[i]!.seq !== expected) {
      return `event ${i} of the commit has seq ${
        events[i]!.seq
      } but the session needs seq ${expected} (it stores ${storedEvents} events)`
    }
  }
  return undefined
}

/**
 * For backends: the `Conflict` message for a position that is not a whole number, or `undefined`.
 *
 * @since 0.0.0
 * @category utils
 */
export const positionIssue = (position: number): string | undefined =>
  Number.isSafeInteger(position) && position >= 0
    ? undefined
    : `${position} is not a record position (a whole number from 0)`

/**
 * For backends: the `Conflict` message for a snapshot whose `position` is not a record position or whose `seq` is
 * not an event's (a whole number from 0), or `undefined`. Checked before anything is stored, so a snapshot that
 * could not be loaded back is refused when it is saved.
 *
 * @since 0.0.0
 * @category utils
 */
export const snapshotIssue = (snapshot: { readonly seq: number; readonly position: number }): string | undefined =>
  positionIssue(snapshot.position) ??
    (Number.isSafeInteger(snapshot.seq) && snapshot.seq >= 0
      ? undefined
      : `${snapshot.seq} is not a snapshot's seq (a whole number from 0)`)
