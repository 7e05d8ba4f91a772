/**
 * What the parent checks after a child died: it reopens the store and holds it against what the child reported.
 * Every check is a plain comparison whose failure is a sentence in `problems`; a verdict with no problems is a
 * store that survived the kill.
 *
 * Checked, in order (rules of docs/CONTRACT.md §13):
 * 1. every stored record decodes; the stored events are gap-free from seq 0 and break no enclosure rule, except
 *    that the last turn may be open (the crash tail, R106);
 * 2. every event of every commit the store acknowledged (`durable` lines) is stored, identical (R104);
 * 3. `SessionLog.open` loads the session (repairing an open turn, R106): the repaired log passes `checkLog`, keeps
 *    every stored event, adds closers only when the last turn was open (ending with `turn/end { interrupted }`),
 *    and a second open finds the same log (the closers were made durable);
 * 4. no accepted message id is in the log twice; every id in the log was given to a send (which may not have
 *    returned: the kill can land inside its acceptance barrier); every send returned the id it asked for
 *    (idempotent acceptance);
 * 5. the durable inbox (ADR 0017): the inbox `open` gives back (`pendingInbox`) is exactly the stored
 *    `inbox/accepted` records with neither an `inbox/settled` nor a logged event for their id, in acceptance order,
 *    none of them in the log; and no accepted message is lost — every id a send returned (in this run or an earlier
 *    run of the session) is in the log, restored, settled in the store, or was reported discarded (a cancel's
 *    discard is durable at the next barrier; a disposal settles nothing).
 *
 * @since 0.0.0
 */
import { Ids, SessionEvent, Store } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { Chunk, Effect, Either, Option, Schema, Stream } from "effect"
import { isDeepStrictEqual } from "node:util"
import type { RunResult } from "./Parent.js"
import type { Line } from "./Protocol.js"
import * as Scenario from "./Scenario.js"
import * as Stores from "./Stores.js"

const decodeRecord = Schema.decodeEither(Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord)))

/**
 * The outcome of one check.
 *
 * @since 0.0.0
 * @category models
 */
export interface Verdict {
  /** Everything that is wrong; empty when the store survived. */
  readonly problems: ReadonlyArray<string>
  /** Whether the session exists at all (a child killed before its `create` committed leaves none). */
  readonly exists: boolean
  /** Events stored when the child died. */
  readonly stored: number
  /** Events the child saw acknowledged. */
  readonly durable: number
  /** Whether the stored log ended inside a turn. */
  readonly openTurn: boolean
  /** Whether `SessionLog.open` loaded it; its error otherwise. */
  readonly reopened: boolean
  readonly reopenError: string | undefined
  /** Closers the reopen appended. */
  readonly closers: number
  /** The reopened (repaired) log, when it opened. */
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  /** Accepted ids (returned by a send) that are neither in the log nor discarded. */
  readonly pending: ReadonlyArray<string>
  /** The ids of the inbox `SessionLog.open` restores (`pendingInbox`), in order. */
  readonly restored: ReadonlyArray<string>
  /** Accepted ids that are nowhere: not in the log, not restored, not settled, not reported discarded. */
  readonly lost: ReadonlyArray<string>
  /** Inbox records stored. */
  readonly inboxRecords: number
  /** Whether the store held a snapshot of the session when it was reopened (ADR 0022: `open` starts from it). */
  readonly snapshot: boolean
}

const messageIds = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<string> =>
  events.flatMap((event) => {
    const id = Store.messageIdOf(event)
    return id === undefined ? [] : [id]
  })

/** The ids a run's sends were asked to take (its ops, or its seed's scenario). */
const attemptedIds = (run: RunResult): ReadonlyArray<string> =>
  (run.config.ops ?? Scenario.make(run.config.seed, run.config.round).ops).flatMap((op) =>
    op._tag === "send" || op._tag === "resend" ? [op.id] : []
  )

const linesOf = <T extends Line["_tag"]>(lines: ReadonlyArray<Line>, tag: T) =>
  lines.filter((line): line is Extract<Line, { readonly _tag: T }> => line._tag === tag)

/**
 * Checks the store of a finished run. `earlier`: the earlier runs of the same session (a resumed session's log
 * holds their messages, and its inbox their pending ones).
 *
 * @since 0.0.0
 * @category verifying
 */
export const verify = (
  run: RunResult,
  earlier: ReadonlyArray<RunResult> = []
): Effect.Effect<Verdict> =>
  Effect.scoped(Effect.gen(function*() {
    const { config } = run
    const lines = run.lines
    const allLines = [...earlier.flatMap((r) => r.lines), ...lines]
    const knownIds = new Set(earlier.flatMap((r) => linesOf(r.lines, "sent").map((line) => line.id)))
    const problems: Array<string> = []
    // The second writer at the kill point (ADR 0044): refused, naming the child; the reader read.
    const intruder = run.intruder
    if (intruder !== undefined) {
      if (intruder.writer._tag === "other") {
        problems.push(`a second writer was not refused busy: ${intruder.writer.what}`)
      }
      if (intruder.writer._tag === "busy" && intruder.writer.pid !== run.pid) {
        problems.push(`a second writer was refused naming process ${intruder.writer.pid}, not the child ${run.pid}`)
      }
      if (intruder.readerError !== undefined) problems.push(`a reader beside the child failed: ${intruder.readerError}`)
    }
    const store = yield* SessionStore.SessionStore
    const id = Ids.SessionId.make(config.sessionId)
    const durableTexts = linesOf(lines, "durable").flatMap((line) => line.events)
    const header = yield* Effect.either(store.header(id))
    if (Either.isLeft(header)) {
      if (header.left.reason !== "NotFound" || durableTexts.length > 0 || config.mode === "resume") {
        problems.push(`the session cannot be read: ${header.left.message} (${header.left.reason})`)
      }
      return emptyVerdict(problems)
    }

    // 1. The stored records, as they are.
    const records = yield* store.load(id).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray), Effect.either)
    if (Either.isLeft(records)) {
      problems.push(`the records cannot be loaded: ${records.left.message}`)
      return emptyVerdict(problems)
    }
    const stored: Array<SessionEvent.SessionEvent> = []
    const storedTexts: Array<string> = []
    // The stored inbox: accepted ids still pending (in acceptance order), and every id settled.
    const inbox = new Map<string, true>()
    const settled = new Set<string>()
    let inboxRecords = 0
    for (const record of records.right) {
      const decoded = decodeRecord(record.text)
      if (Either.isLeft(decoded)) {
        problems.push(`stored record ${record.position} does not decode: ${decoded.left.message.slice(0, 300)}`)
        continue
      }
      const value = decoded.right
      if (Store.isInboxRecord(value)) {
        inboxRecords++
        if (value.type === "inbox/accepted") inbox.set(value.message.id, true)
        else if (value.type === "approval/requested" || value.type === "approval/answered") continue
        else {
          settled.add(value.id)
          inbox.delete(value.id)
        }
        continue
      }
      const logged = Store.messageIdOf(value)
      if (logged !== undefined) inbox.delete(logged)
      stored.push(value)
      storedTexts.push(record.text)
    }
    const violations = LogCheck.checkLog(stored).filter((v) => v.rule !== "unclosed-turn")
    for (const v of violations.slice(0, 5)) problems.push(`stored log: seq ${v.seq}: ${v.rule}: ${v.message}`)
    const openTurn = LogCheck.checkLog(stored).some((v) => v.rule === "unclosed-turn")

    // 2. Every acknowledged event is stored, identical.
    for (const text of durableTexts) {
      const event: { readonly seq: number } = JSON.parse(text)
      const at = storedTexts[event.seq]
      if (at === undefined) problems.push(`durable event seq ${event.seq} is not in the store`)
      else if (!isDeepStrictEqual(JSON.parse(at), JSON.parse(text))) {
        problems.push(`durable event seq ${event.seq} differs in the store: ${at} vs ${text}`)
      }
    }

    // 3. The log opens (with repair), is well-formed, keeps everything, and its repair is durable.
    const snapshot = Option.isSome(yield* Effect.orElseSucceed(store.loadSnapshot(id), () => Option.none()))
    const opened = yield* Effect.either(
      Effect.flatMap(SessionLog.open(id), (log) => Effect.map(log.events, (events) => ({ events, log })))
    )
    let events: ReadonlyArray<SessionEvent.SessionEvent> = stored
    let closers = 0
    let reopenError: string | undefined
    let restored: ReadonlyArray<string> = []
    if (Either.isLeft(opened)) {
      reopenError = `${opened.left.reason}: ${opened.left.message}`
    } else {
      events = opened.right.events
      restored = opened.right.log.pendingInbox.map((record) => record.message.id)
      const expected = [...inbox.keys()]
      if (!isDeepStrictEqual(restored, expected)) {
        problems.push(
          `open restores the inbox ${JSON.stringify(restored)}, the stored records say ${JSON.stringify(expected)}`
        )
      }
      closers = events.length - stored.length
      for (const v of LogCheck.checkLog(events).slice(0, 5)) {
        problems.push(`reopened log: seq ${v.seq}: ${v.rule}: ${v.message}`)
      }
      if (!isDeepStrictEqual(events.slice(0, stored.length), stored)) {
        problems.push("the reopened log does not start with the stored events")
      }
      if (openTurn) {
        const last = events.at(-1)
        if (closers <= 0 || last?.type !== "turn/end" || last.data.reason.kind !== "interrupted") {
          problems.push(`the open turn was not closed with turn/end { interrupted } (last: ${last?.type})`)
        }
      } else if (closers !== 0) {
        problems.push(`a balanced log got ${closers} closer(s)`)
      }
      const again = yield* Effect.either(Effect.flatMap(SessionLog.open(id), (log) => log.events))
      if (Either.isLeft(again)) problems.push(`a second open failed: ${again.left.message}`)
      else if (!isDeepStrictEqual(again.right, events)) problems.push("a second open found a different log")
    }

    // 4. Messages: none twice, none unknown, ids as asked.
    const sent = linesOf(lines, "sent")
    const sentIds = new Set([...knownIds, ...sent.map((line) => line.id)])
    // Every id a send of this session was asked to take, returned or not: with the acceptance barrier a send may be
    // durable (logged, or restored) although the kill came before it returned — the client would resend that id.
    const attempted = new Set([...sentIds, ...[...earlier, run].flatMap(attemptedIds)])
    for (const line of sent) {
      if (line.id !== line.requested) problems.push(`send asked for id ${line.requested} and got ${line.id}`)
    }
    const inLog = messageIds(events)
    const seen = new Set<string>()
    for (const messageId of inLog) {
      if (seen.has(messageId)) problems.push(`message ${messageId} is in the log twice`)
      if (!attempted.has(messageId)) problems.push(`message ${messageId} is in the log but was never sent`)
      seen.add(messageId)
    }
    // 5. The durable inbox: nothing restored is in the log; no accepted message is lost.
    for (const messageId of restored) {
      if (seen.has(messageId)) problems.push(`message ${messageId} is restored to the inbox but is in the log`)
    }
    const discarded = new Set(linesOf(allLines, "discarded").flatMap((line) => line.ids))
    const pending = [...new Set(sent.map((line) => line.id))].filter((m) => !seen.has(m) && !discarded.has(m))
    const restoredIds = new Set(restored)
    const lost = [...sentIds].filter((m) => !seen.has(m) && !restoredIds.has(m) && !settled.has(m) && !discarded.has(m))
    for (const messageId of lost) {
      problems.push(`accepted message ${messageId} is lost: not in the log, not restored, not settled, not discarded`)
    }
    return {
      problems,
      exists: true,
      stored: stored.length,
      durable: durableTexts.length,
      openTurn,
      reopened: Either.isRight(opened),
      reopenError,
      closers,
      events,
      pending,
      restored,
      lost,
      inboxRecords,
      snapshot
    }
  })).pipe(
    Effect.provide(Stores.layer(run.config.backend, run.config.location)),
    Effect.catchAll((error) => Effect.succeed(emptyVerdict([`the store cannot be opened: ${error.message}`])))
  )

const emptyVerdict = (problems: ReadonlyArray<string>): Verdict => ({
  problems,
  exists: false,
  stored: 0,
  durable: 0,
  openTurn: false,
  reopened: false,
  reopenError: undefined,
  closers: 0,
  events: [],
  pending: [],
  restored: [],
  lost: [],
  inboxRecords: 0,
  snapshot: false
})
