/**
 * Opening a stored session (R106): the writer lease first (ADR 0044), then a streamed scan of its records — from the
 * latest snapshot that agrees with the log (ADR 0022, ADR 0027), else from the start — that tells corruption from a
 * torn tail, truncates the tail, closes a turn a crash left open, folds the pending inbox (ADR 0017), saves a
 * snapshot after a long replay, and continues the log.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store as StoreRecords } from "@harness/domain"
import { Effect, Either, Option, Stream } from "effect"
import type { OpenOptions } from "../SessionLog.js"
import type { SessionLogError } from "../SessionLogError.js"
import { type Lease, type Service as Store, SessionStore, type StoredRecord } from "../SessionStore.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import * as AppendOnly from "./appendOnly.js"
import * as closers from "./closers.js"
import * as history from "./history.js"
import { leaseOf, writerStore } from "./leasedStore.js"
import * as logCheck from "./logCheck.js"
import { storedEvents } from "./logReads.js"
import {
  advance,
  corrupt,
  decodeRecord,
  emptyData,
  type LogData,
  stamp,
  storeError,
  trackPending
} from "./logRecords.js"
import type { Approvals } from "./pendingApprovals.js"
import { makeService } from "./sessionLog.js"
import * as snapshot from "./snapshot.js"
import { freshSnapshots, type Prefix, snapshotDue, snapshotEveryOf, type SnapshotStart } from "./snapshotKeeper.js"
import { settingsOf } from "./writeBehind.js"

/** The first bad record of a scan: a record that does not decode, or an event out of `seq` order. */
interface BadRecord {
  readonly position: number
  readonly what: string
}

/** What the load scan found. */
interface Scan {
  /** The log up to the first bad record (or the whole log). */
  readonly data: LogData
  /** Records before the first bad record. */
  readonly kept: number
  readonly bad: BadRecord | undefined
  /** Whether a valid `turn/end` follows the first bad record: then the bad record is corruption, not a torn tail. */
  readonly committedAfterBad: boolean
  /** A rule violation among the kept records: always corruption. */
  readonly violation: SessionLogError | undefined
  /**
   * The kept `inbox/accepted` records still pending, by message id in acceptance order (a `Map` keeps insertion
   * order): one is removed by its `inbox/settled` or by the event that logged its id. Mutated by the fold.
   */
  readonly inbox: Map<string, StoreRecords.InboxAccepted>
  /** The stored text of the last kept record. */
  readonly lastText: string | undefined
  /**
   * The approvals still pending among the kept records (ADR 0054), by call id; a scan from a snapshot starts from
   * those its head lists (ADR 0075), or from none when it lists none (then only those after it are seen: a pending
   * approval of the open turn always is). Mutated by the fold.
   */
  readonly approvals: Map<string, StoreRecords.ApprovalRequested>
  /** Whether `approvals` holds every pending approval: false from a snapshot whose head does not list them. */
  readonly approvalsKnown: boolean
  /** The last kept `turn/start` (ADR 0068): from the snapshot's head until the scan meets one. */
  readonly turnStart: snapshot.TurnStart
}

/** A scan from a snapshot (ADR 0022): the log at the snapshot, and the record the store must hold where it ends. */
interface ScanFrom {
  readonly data: LogData
  readonly kept: number
  readonly inbox: Map<string, StoreRecords.InboxAccepted>
  readonly approvals: Approvals
  readonly position: number
  readonly text: string
  readonly turnStart: snapshot.TurnStart
}

/** A snapshot that does not agree with the stored records: `open` ignores it. */
class Disagrees {
  readonly _tag = "Disagrees"
  constructor(readonly what: string) {}
}

const fromSnapshot = (start: snapshot.Start): ScanFrom => ({
  data: { ...emptyData, base: start.seq + 1, state: start.state },
  kept: start.position + 1,
  inbox: new Map(start.inbox.map((r) => [r.message.id as string, r])),
  approvals: start.approvals,
  position: start.position,
  text: start.last,
  turnStart: start.turnStart
})

/**
 * Scans a stored session (R106): folds the records into the log until the first bad one, then only looks for a
 * later valid `turn/end` (which makes the bad record corruption instead of a torn tail). From a snapshot, it starts
 * at the snapshot's last record, which must be exactly the one the snapshot names (else `Disagrees`).
 */
const scan = (id: Ids.SessionId, store: Store, from?: ScanFrom): Effect.Effect<Scan, SessionLogError | Disagrees> =>
  Effect.suspend(() => {
    // A plain loop over each loaded chunk with one mutable accumulator: `Stream.runFold` recurses once per element
    // of a chunk (`foldChunkSplit`), which overflows the stack on a backend that loads big chunks (JSONL, W7).
    let acc: Scan = {
      data: from?.data ?? emptyData,
      kept: from?.kept ?? 0,
      bad: undefined,
      committedAfterBad: false,
      violation: undefined,
      inbox: from?.inbox ?? new Map(),
      lastText: from?.text,
      approvals: from === undefined || from.approvals === "unknown"
        ? new Map()
        : new Map(from.approvals.map((r) => [r.callId, r])),
      approvalsKnown: from === undefined || from.approvals !== "unknown",
      turnStart: from?.turnStart
    }
    let check = from
    let disagrees: Disagrees | undefined
    const step = (record: StoredRecord): void => {
      if (check !== undefined) {
        if (record.position !== check.position || record.text !== check.text) {
          disagrees = new Disagrees(
            record.position !== check.position
              ? `the store holds no record at position ${check.position}`
              : `the record at position ${check.position} is not the one the snapshot covers`
          )
        }
        check = undefined
        return
      }
      if (acc.violation !== undefined || acc.committedAfterBad) return
      const decoded = decodeRecord(record.text)
      if (acc.bad !== undefined) {
        if (Either.isRight(decoded) && decoded.right.type === "turn/end") acc = { ...acc, committedAfterBad: true }
        return
      }
      if (Either.isLeft(decoded)) {
        acc = { ...acc, bad: { position: record.position, what: `it is not a record: ${decoded.left}` } }
        return
      }
      const value = decoded.right
      if (StoreRecords.isInboxRecord(value)) {
        trackPending(acc.inbox, value)
        StoreRecords.foldApprovals(acc.approvals, value)
        acc = { ...acc, kept: acc.kept + 1, lastText: record.text }
        return
      }
      const expected = acc.data.state.nextSeq
      if (value.seq !== expected) {
        acc = {
          ...acc,
          bad: { position: record.position, what: `it holds seq ${value.seq} where the log needs seq ${expected}` }
        }
        return
      }
      const checked = logCheck.step(acc.data.state, value)
      if ("violation" in checked) {
        const { message, rule } = checked.violation
        acc = {
          ...acc,
          violation: corrupt(id, record.position, `seq ${value.seq} breaks the rule ${rule}: ${message}`, value.seq)
        }
        return
      }
      trackPending(acc.inbox, value)
      acc = {
        ...acc,
        data: advance(acc.data, value, checked.state),
        kept: acc.kept + 1,
        lastText: record.text,
        turnStart: value.type === "turn/start" ? { seq: value.seq, position: record.position } : acc.turnStart
      }
    }
    return store.load(id, from === undefined ? undefined : { after: from.position - 1 }).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.suspend(() => {
          for (const record of chunk) {
            step(record)
            if (disagrees !== undefined) return Effect.fail(disagrees)
          }
          return Effect.void
        })
      ),
      Effect.mapError((error) =>
        error instanceof Disagrees ? error : storeError(`cannot load session ${JSON.stringify(id)}`)(error)
      ),
      Effect.flatMap(() =>
        check !== undefined
          ? Effect.fail(new Disagrees(`the store holds no record at position ${check.position}`))
          : Effect.succeed(acc)
      )
    )
  })

/** The pending approvals a scan found, when it knows them all. */
const approvalsOf = (found: Scan): Approvals => found.approvalsKnown ? [...found.approvals.values()] : "unknown"

/** A snapshot's decoded head, and the store's reader of its body. */
interface Found {
  readonly start: snapshot.Start
  readonly body: Effect.Effect<Option.Option<string>, SessionStoreError>
}

/**
 * The session's snapshot as a starting point, if its head loads and decodes; otherwise none (the log is replayed).
 * Its body is not read here (ADR 0027).
 */
const startOf = (id: Ids.SessionId, store: Store): Effect.Effect<Found | undefined> =>
  store.loadSnapshot(id).pipe(
    Effect.map((found) => {
      if (found._tag === "None") return undefined
      const decoded = snapshot.decodeHead(found.value.head, found.value.seq, found.value.position)
      return Either.isRight(decoded) ? { start: decoded.right, body: found.value.body } : undefined
    }),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The history up to the snapshot `open` started from, read once when first needed: its body when it is there and
 * decodes as its head says, else derived from the stored events it covers (a snapshot is never trusted over the log).
 */
const prefixOf = (id: Ids.SessionId, store: Store, found: Found): Effect.Effect<Prefix> =>
  Effect.map(
    Effect.cached(
      found.body.pipe(
        Effect.map((body) =>
          Option.isSome(body) ? snapshot.decodeBody(body.value, found.start) : Either.left("its body is gone")
        ),
        Effect.orElseSucceed(() => Either.left("its body cannot be read")),
        Effect.flatMap((decoded) =>
          Either.isRight(decoded) ? Effect.succeed(decoded.right) : Effect.map(
            storedEvents(id, store, found.start.seq + 1),
            (events): snapshot.Body => {
              let folded = history.empty
              for (const event of events) folded = history.fold(folded, event)
              return { history: folded, historyText: snapshot.appendHistoryText("", events).text }
            }
          )
        )
      )
    ),
    (load): Prefix => ({ seq: found.start.seq, messages: found.start.messages, load })
  )

/** The snapshot bookkeeping an opened log starts with: fresh, or from the snapshot `open` started from. */
const snapshotStart = (
  id: Ids.SessionId,
  store: Store,
  every: number,
  records: number,
  pending: ReadonlyArray<StoreRecords.InboxAccepted>,
  approvals: Approvals,
  used: Found | undefined,
  turnStart: snapshot.TurnStart
): Effect.Effect<SnapshotStart> =>
  used === undefined
    ? Effect.succeed({ ...freshSnapshots(every, records), pending, approvals, turnStart })
    : Effect.map(prefixOf(id, store, used), (prefix): SnapshotStart => ({
      every,
      records,
      pending,
      approvals,
      lastSeq: used.start.seq,
      historyText: undefined,
      historyMessages: used.start.messages,
      prefix,
      turnStart
    }))

export const open = Effect.fn("SessionLog.open")(function*(id: Ids.SessionId, options?: OpenOptions) {
  const reader = yield* SessionStore
  const readOnly = options?.readOnly === true
  // The lease comes first: the scan, the repair and every later write happen under it, so nothing another writer
  // commits is read half or cut (ADR 0044). A read-only log takes none, and repairs nothing.
  const lease = readOnly ? "read-only" : yield* leaseOf(reader, id)
  const opened = openLeased(id, reader, lease, options)
  return yield* lease === "read-only" ? opened : Effect.tapErrorCause(opened, () => lease.release)
})

const openLeased = Effect.fnUntraced(function*(
  id: Ids.SessionId,
  reader: Store,
  lease: Lease | "read-only",
  options: OpenOptions | undefined
) {
  const readOnly = lease === "read-only"
  const store = writerStore(reader, lease)
  const every = snapshotEveryOf(store, options?.commit)
  // From the latest snapshot when it agrees with the log; a snapshot is never trusted over the log, so a snapshot
  // scan that fails in any way (disagreement, corruption, a broken rule) is redone from the start (ADR 0022).
  const start = yield* startOf(id, store)
  const attempt = start === undefined ? undefined : yield* Effect.either(scan(id, store, fromSnapshot(start.start)))
  const fromStart = attempt !== undefined && Either.isRight(attempt) && attempt.right.violation === undefined &&
      !(attempt.right.bad !== undefined && attempt.right.committedAfterBad)
    ? attempt.right
    : undefined
  const used = fromStart === undefined ? undefined : start
  const found = fromStart ?? (yield* Effect.catchIf(
    scan(id, store),
    (error): error is Disagrees => error instanceof Disagrees,
    (error) => Effect.die(error)
  ))
  if (found.violation !== undefined) return yield* found.violation
  if (readOnly) {
    if (found.bad !== undefined && found.committedAfterBad) {
      return yield* corrupt(id, found.bad.position, found.bad.what)
    }
    // As stored, up to a torn tail (not cut: a writer may be committing it right now).
    const pending = [...found.inbox.values()]
    const snapshots = yield* snapshotStart(id, store, 0, found.kept, pending, approvalsOf(found), used, found.turnStart)
    return yield* makeService(id, reader, lease, found.data, settingsOf(store, options?.commit), snapshots, pending)
  }
  if (found.bad !== undefined) {
    // A bad record before a committed turn/end is corruption; after the last one it is a torn tail.
    if (found.committedAfterBad) return yield* corrupt(id, found.bad.position, found.bad.what)
    yield* store.truncate(id, found.bad.position).pipe(
      Effect.mapError(storeError(`cannot truncate the torn tail of session ${JSON.stringify(id)}`))
    )
  } else {
    // Lets a backend cut bytes of a commit a crash tore (JSONL), which its framing already hides from `load`.
    yield* store.truncate(id, found.kept).pipe(
      Effect.mapError(storeError(`cannot truncate the torn tail of session ${JSON.stringify(id)}`))
    )
  }
  let data = found.data
  // A call cut while it waited for approval never started, and its approval stays pending (ADR 0054, R168).
  const approvals = found.approvals
  const repair = closers.close(data.state, {
    reason: { kind: "interrupted" },
    answer: (call) => approvals.has(call.callId) ? closers.approvalPendingAnswer : closers.repairAnswer(call)
  })
  if (repair.length > 0) {
    // The closers continue the log's numbering, stamped with the last real event's time (R106), made durable.
    const time = AppendOnly.last(data.events)?.time ?? 0
    const events: Array<SessionEvent.SessionEvent> = []
    for (const input of repair) {
      // Built here from the log's own state: typed, so the copy is trusted; `step` still checks the rules.
      const event = stamp(input, data.state.nextSeq, time)
      const checked = logCheck.step(data.state, event)
      if ("violation" in checked) return yield* corrupt(id, found.kept, `repair failed: ${checked.violation.message}`)
      events.push(event)
      data = advance(data, event, checked.state)
    }
    yield* store.append(id, { events, inbox: [] }, { sync: true }).pipe(
      Effect.mapError(storeError(`cannot write the repair of session ${JSON.stringify(id)}`))
    )
  }
  const records = found.kept + repair.length
  const lastText = repair.length > 0 ? JSON.stringify(AppendOnly.last(data.events)) : found.lastText
  const pending = [...found.inbox.values()]
  const pendingApprovals = approvalsOf(found)
  let snapshots = yield* snapshotStart(id, store, every, records, pending, pendingApprovals, used, found.turnStart)
  // A long replay is paid once: when `open` folded at least `every` events past the last snapshot, it takes one
  // where the log now ends (no turn is open after repair).
  const end = data.state.nextSeq - 1
  if (
    lastText !== undefined && data.state.openTurn === undefined && snapshotDue(every, snapshots.lastSeq, end) &&
    data.base === snapshots.lastSeq + 1
  ) {
    // From a snapshot, its history is read now: the new snapshot extends it.
    const prefix = snapshots.prefix
    const loaded = prefix === undefined ? undefined : yield* Effect.option(Effect.sandbox(prefix.load))
    const base = loaded === undefined ? undefined : Option.getOrUndefined(loaded)
    const prefixMessages = base?.history.length ?? 0
    const added = snapshot.appendHistoryText(
      base?.historyText ?? snapshots.historyText ?? "",
      AppendOnly.slice(data.events, 0)
    )
    const messages = prefixMessages + added.added
    if ((prefix === undefined || base !== undefined) && messages === prefixMessages + data.history.length) {
      const { body, head } = snapshot.encode({
        seq: end,
        position: records - 1,
        last: lastText,
        state: data.state,
        inbox: pending,
        approvals: pendingApprovals,
        messages,
        historyText: added.text,
        turnStart: found.turnStart
      })
      const saved = yield* Effect.either(store.saveSnapshot(id, { seq: end, position: records - 1, head, body }))
      if (Either.isRight(saved)) {
        snapshots = {
          ...snapshots,
          lastSeq: end,
          historyText: added.text,
          historyMessages: messages,
          prefix: prefix === undefined ? undefined : { ...prefix, messages: prefixMessages }
        }
        if (store.volatile !== true) data = { ...data, events: AppendOnly.empty(), base: end + 1 }
      }
    }
  }
  return yield* makeService(id, reader, lease, data, settingsOf(store, options?.commit), snapshots, pending)
})
