/**
 * The log's snapshot bookkeeping (ADR 0022, ADR 0027): when a snapshot is due, where a log's bookkeeping starts
 * (fresh, or from the snapshot `open` started from), and the keeper that takes one after a store commit that holds
 * a `turn/end` — best effort, never under the append lock on write-behind, and trimming memory behind it.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store as StoreRecords } from "@harness/domain"
import { Effect, Option, Ref } from "effect"
import type { CommitOptions } from "../SessionLog.js"
import type { Service as Store } from "../SessionStore.js"
import * as AppendOnly from "./appendOnly.js"
import { storedInbox } from "./logReads.js"
import { type Checkpoint, trackPending } from "./logRecords.js"
import { type Approvals, folded } from "./pendingApprovals.js"
import * as snapshot from "./snapshot.js"
import type { AfterCommit, Shared } from "./writeBehind.js"

/** The default number of events between snapshots on a durable store (ADR 0022). */
const defaultSnapshotEvery = 10_000

/**
 * Whether a snapshot at `seq` is due after one at `lastSeq`: at least `every` events later, and at least an eighth of
 * what the last one covered (each snapshot rewrites the whole history, so a fixed interval would make a long
 * session's snapshots cost more than its appends; this bounds them to about 9 histories in all).
 */
export const snapshotDue = (every: number, lastSeq: number, seq: number): boolean =>
  every > 0 && seq - lastSeq >= Math.max(every, (lastSeq + 1) / 8)

/** Events between snapshots: `snapshotEvery`, else the default on durable stores and never on volatile ones (0). */
export const snapshotEveryOf = (store: Store, options: CommitOptions | undefined): number => {
  const every = options?.snapshotEvery ?? (store.volatile === true ? 0 : defaultSnapshotEvery)
  return Number.isFinite(every) && every > 0 ? Math.ceil(every) : 0
}

/** Where a log's snapshot bookkeeping starts (ADR 0022). */
export interface SnapshotStart {
  /** Events between snapshots; 0: never. */
  readonly every: number
  /** The position the next stored record gets. */
  readonly records: number
  /** The pending inbox after the last stored record. */
  readonly pending: ReadonlyArray<StoreRecords.InboxAccepted>
  /** The pending approvals after the last stored record (ADR 0075). */
  readonly approvals: Approvals
  /** The `seq` the last snapshot covers (-1: none). */
  readonly lastSeq: number
  /**
   * The history events up to `lastSeq`, as a snapshot holds them (comma-separated JSON texts); `undefined` while
   * they are only in the body of the snapshot the log was opened from (read by `prefix.load` when needed).
   */
  readonly historyText: string | undefined
  readonly historyMessages: number
  /** The history prefix of the snapshot the log was opened from: not in the log's `history`, read on demand. */
  readonly prefix: Prefix | undefined
  /** The last stored `turn/start` (ADR 0068). */
  readonly turnStart: snapshot.TurnStart
}

/**
 * Where the log's last `turn/start` is stored (ADR 0068), for `lastTurn` once memory no longer holds it: as `open`
 * found it, then moved by the keeper to each committed `turn/start`. Mutated only by whoever commits (as the keeper's
 * own bookkeeping); a log that takes no snapshots never drops events from memory, so its value from `open` stays
 * right.
 */
export interface TurnStarts {
  latest: snapshot.TurnStart
}

/**
 * The history up to a snapshot the log was opened from (ADR 0027): its body is read and decoded once, on first use
 * (the first `history` read, or the writer's next snapshot, which extends its text).
 */
export interface Prefix {
  readonly seq: number
  /** Its number of messages: as the head says until the body is read, then as read. */
  readonly messages: number
  readonly load: Effect.Effect<snapshot.Body>
}

/** The bookkeeping of a new log whose first `records` records are `seed` (no inbox records: a position is a seq). */
export const freshSnapshots = (
  every: number,
  records: number,
  seed: ReadonlyArray<SessionEvent.SessionEvent> = []
): SnapshotStart => {
  let turnStart: snapshot.TurnStart = undefined
  for (const event of seed) if (event.type === "turn/start") turnStart = { seq: event.seq, position: event.seq }
  return {
    every,
    records,
    pending: [],
    approvals: [],
    lastSeq: -1,
    historyText: "",
    historyMessages: 0,
    prefix: undefined,
    turnStart
  }
}

/** No snapshot bookkeeping: a log that takes no snapshots builds none of it (ADR 0038). */
export const noSnapshots: AfterCommit = () => Effect.void

/**
 * A log's snapshot bookkeeping: takes a snapshot when one is due (best effort). Made only for a log that takes
 * snapshots (none on a volatile store unless asked): a log that never takes one builds none of it (ADR 0038).
 */
export const snapshotKeeper = (
  id: Ids.SessionId,
  store: Store,
  shared: Ref.Ref<Shared>,
  snapshots: SnapshotStart,
  turnStarts: TurnStarts
): AfterCommit => {
  // Mutated only by whoever commits (the writer fiber under write-behind, the lock holder under write-through),
  // one commit at a time, in commit order.
  const snap = {
    records: snapshots.records,
    pending: new Map(snapshots.pending.map((r) => [r.message.id as string, r])),
    approvals: snapshots.approvals === "unknown"
      ? undefined
      : new Map(snapshots.approvals.map((r) => [r.callId as string, r])),
    lastSeq: snapshots.lastSeq,
    historyText: snapshots.historyText,
    historyMessages: snapshots.historyMessages
  }
  /** The number of messages in the opened snapshot's history (as its head says until its body is read). */
  let prefixMessages = snapshots.prefix?.messages ?? 0
  const prefix = snapshots.prefix
  /** The text the next snapshot extends: the opened snapshot's body is read for it the first time. */
  const baseText: Effect.Effect<string> = Effect.suspend(() => {
    const known = snap.historyText
    if (known !== undefined || prefix === undefined) return Effect.succeed(known ?? "")
    return Effect.map(prefix.load, (body) => {
      // The log's own derivation wins over the head's count when the body had to be derived from the log.
      prefixMessages = body.history.length
      snap.historyText = body.historyText
      snap.historyMessages = body.history.length
      return body.historyText
    })
  })
  // Events are dropped from memory only on durable stores (the memory store holds the same events anyway).
  const trim = store.volatile !== true
  /**
   * The pending approvals a snapshot's head lists. Opened from a head that did not list them, the keeper learns them
   * once, at its first snapshot, from the stored records: the keeper runs right after each commit and before the
   * next, and a commit writes its inbox records before its events, so the store then holds exactly the records up
   * to the checkpoint (ADR 0075). Unlearned (the store failed), the head lists none and stays unknown.
   */
  const approvalsAt = (approvals: Approvals): Effect.Effect<Approvals> =>
    approvals !== "unknown" ? Effect.succeed(approvals) : storedInbox(id, store).pipe(
      Effect.map((records): Approvals => {
        const learned = folded(new Map(), records)
        snap.approvals = learned
        return [...learned.values()]
      }),
      Effect.orElseSucceed((): Approvals => "unknown")
    )

  /** Takes a snapshot at the checkpoint (the last event of this commit or an earlier one of it): best effort. */
  const takeSnapshot = (
    checkpoint: Checkpoint,
    position: number,
    pending: ReadonlyArray<StoreRecords.InboxAccepted>,
    approvals: Approvals,
    turnStart: snapshot.TurnStart
  ) =>
    // A base that cannot be read (a store failure while the history is derived from the log is a defect there)
    // skips this snapshot: the writer fiber must go on.
    Effect.flatMap(Effect.zip(Effect.option(Effect.sandbox(baseText)), Ref.get(shared)), ([base, s]) => {
      if (Option.isNone(base)) return Effect.void
      const text = base.value
      const from = snap.lastSeq + 1
      if (from < s.data.base) return Effect.void // cannot happen: memory keeps every event after the last snapshot
      const covered = AppendOnly.slice(s.data.events, from - s.data.base, checkpoint.seq + 1 - s.data.base)
      const last = covered[covered.length - 1]
      if (last === undefined || last.seq !== checkpoint.seq) return Effect.void
      const added = snapshot.appendHistoryText(text, covered)
      const messages = snap.historyMessages + added.added
      // Never write a snapshot that disagrees with the log's own history.
      if (messages !== prefixMessages + checkpoint.history.length) return Effect.void
      return Effect.flatMap(approvalsAt(approvals), (approvals) => {
        const { body, head } = snapshot.encode({
          seq: checkpoint.seq,
          position,
          last: JSON.stringify(last),
          state: checkpoint.state,
          inbox: pending,
          approvals,
          messages,
          historyText: added.text,
          turnStart
        })
        return store.saveSnapshot(id, { seq: checkpoint.seq, position, head, body })
      }).pipe(
        Effect.zipRight(Effect.sync(() => {
          snap.lastSeq = checkpoint.seq
          snap.historyText = added.text
          snap.historyMessages = messages
        })),
        Effect.zipRight(
          trim
            ? Ref.update(shared, (now) => {
              const cut = Math.min(checkpoint.seq + 1, now.writer.durable)
              return cut <= now.data.base ? now : {
                ...now,
                data: { ...now.data, events: AppendOnly.drop(now.data.events, cut - now.data.base), base: cut }
              }
            })
            : Effect.void
        ),
        // A snapshot is an optimisation: the log is correct without it, so a refused save changes nothing.
        Effect.ignore
      )
    })

  return (
    inbox: ReadonlyArray<StoreRecords.InboxRecord>,
    events: ReadonlyArray<SessionEvent.SessionEvent>,
    checkpoint: Checkpoint | undefined
  ): Effect.Effect<void> =>
    Effect.suspend(() => {
      const start = snap.records
      const approvals = snap.approvals
      for (const record of inbox) {
        trackPending(snap.pending, record)
        if (approvals !== undefined) StoreRecords.foldApprovals(approvals, record)
      }
      const due = checkpoint !== undefined && events.length > 0 && checkpoint.seq >= events[0]!.seq &&
        checkpoint.seq <= events.at(-1)!.seq && snapshotDue(snapshots.every, snap.lastSeq, checkpoint.seq)
      let pending: ReadonlyArray<StoreRecords.InboxAccepted> = []
      let turnStart = turnStarts.latest
      for (let index = 0; index < events.length; index++) {
        const event = events[index]!
        trackPending(snap.pending, event)
        if (event.type === "turn/start") turnStarts.latest = { seq: event.seq, position: start + inbox.length + index }
        if (due && event.seq === checkpoint.seq) {
          pending = [...snap.pending.values()]
          turnStart = turnStarts.latest
        }
      }
      snap.records = start + inbox.length + events.length
      if (!due) return Effect.void
      return takeSnapshot(
        checkpoint,
        start + inbox.length + (checkpoint.seq - events[0]!.seq),
        pending,
        // Every inbox record of a commit comes before its events: the approvals at any checkpoint of it are these.
        approvals === undefined ? "unknown" : [...approvals.values()],
        turnStart
      )
    })
}
