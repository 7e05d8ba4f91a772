/**
 * The log's append path: validation and the enclosure check in one synchronous step from the log's state, the two
 * commit models (write-through, inline for a store that declares an inline append; write-behind, handing the events
 * to the writer), publication, transactions (ADR 0051), inbox records and the durability barrier (`flush`).
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Store as StoreRecords } from "@harness/domain"
import { Chunk, Clock, Effect, Either, PubSub, Ref } from "effect"
import type { InboxRecordInput, Transaction } from "../SessionLog.js"
import { SessionLogError } from "../SessionLogError.js"
import type { Service as Store } from "../SessionStore.js"
import * as AppendOnly from "./appendOnly.js"
import type { CommitNow } from "./leasedStore.js"
import * as logCheck from "./logCheck.js"
import {
  advance,
  encode,
  formatIssue,
  isInboxRecord,
  type LogData,
  refusedCommit,
  stamp,
  stampInbox,
  storeError,
  validateInbox
} from "./logRecords.js"
import { isApprovalRecord, type Tracker } from "./pendingApprovals.js"
import { slowPath } from "./slowPath.js"
import { noSnapshots } from "./snapshotKeeper.js"
import { type AppendIn, holding, type LogTransaction, transaction } from "./transaction.js"
import { type AfterCommit, brokenError, type Shared, type WriterControl } from "./writeBehind.js"

/**
 * What the append path of one log works with: one record per log, which every function below takes (module-level
 * functions, not closures made per log: an idle log holds none of them, ADR 0076).
 */
export interface AppendParts {
  readonly id: Ids.SessionId
  /** The store as the log writes it (under its lease). */
  readonly store: Store
  readonly shared: Ref.Ref<Shared>
  /** The writer section (ADR 0051). */
  readonly lock: Effect.Semaphore
  /**
   * The subscribers' PubSub, made by the first of them (events published before anyone subscribes reach nobody
   * anyway): an agent never subscribes, and the PubSub with its scope was ≈ 0.7 KB of every idle agent and a step of
   * every append. Set once, in one synchronous step.
   */
  observers: PubSub.PubSub<SessionEvent.SessionEvent> | undefined
  /** The store's inline append, when it declares one (ADR 0037). */
  readonly commitNow: CommitNow | undefined
  readonly afterCommit: AfterCommit
  /** The writer of a write-behind log; none on a write-through log. */
  readonly background: WriterControl | undefined
  /** The log's pending approvals: recorded inbox records, approval records among them, are folded in (ADR 0075). */
  readonly approvals: Tracker
  /** {@link appendIn} bound to these parts: what a transaction's handle appends through. */
  readonly appendIn: AppendIn
}

/**
 * The parts of a log's append path (`appendIn` bound to them), built as one literal: a spread (`{ ...parts }`) gave
 * each log's record a hidden class of its own (≈ 0.3 KB).
 */
export const appendParts = (parts: Omit<AppendParts, "appendIn" | "observers">): AppendParts => {
  const made: AppendParts = {
    id: parts.id,
    store: parts.store,
    shared: parts.shared,
    lock: parts.lock,
    observers: undefined,
    commitNow: parts.commitNow,
    afterCommit: parts.afterCommit,
    background: parts.background,
    approvals: parts.approvals,
    appendIn: (inputs, trusted, tx) => appendIn(made, inputs, trusted, tx)
  }
  return made
}

/** The subscribers' PubSub, made now if nobody subscribed before. */
export const observed = (p: AppendParts): Effect.Effect<PubSub.PubSub<SessionEvent.SessionEvent>> =>
  Effect.suspend(() =>
    p.observers !== undefined ? Effect.succeed(p.observers) : Effect.map(
      PubSub.unbounded<SessionEvent.SessionEvent>(),
      // A concurrent first subscriber may have made one meanwhile: its PubSub wins, this one is dropped.
      (made) => (p.observers ??= made)
    )
  )

/** Republishes committed events to the log's subscribers, if it has any; succeeds with the events. */
const notify = (
  p: AppendParts,
  events: Array<SessionEvent.SessionEvent>
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
  p.observers === undefined ? Effect.succeed(events) : Effect.as(PubSub.publishAll(p.observers, events), events)

/**
 * Validates (unless `trusted`) and checks inputs against the current state: the events and the data after them,
 * or the refusal. A trusted input is the caller's own typed construction from values validated where they entered
 * (ADR 0023): it is stamped with `seq` and `time` by a shallow copy instead of being validated and deep-copied.
 * The enclosure rules (`LogCheck.step`) are checked either way.
 */
const prepare = (
  current: LogData,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  time: number,
  trusted: boolean
): Either.Either<
  { readonly events: Array<SessionEvent.SessionEvent>; readonly next: LogData },
  SessionLogError
> => {
  let next = current
  const events: Array<SessionEvent.SessionEvent> = []
  for (const input of inputs) {
    const seq = next.state.nextSeq
    let event: SessionEvent.SessionEvent
    if (trusted && !slowPath) {
      event = stamp(input, seq, time)
    } else {
      const encoded = encode({ ...input, seq, time })
      if (Either.isLeft(encoded)) {
        return Either.left(
          new SessionLogError({
            reason: "invalid-event",
            message: `the ${input.type} event is invalid: ${encoded.left}`,
            seq
          })
        )
      }
      event = encoded.right
    }
    const checked = logCheck.step(next.state, event)
    if ("violation" in checked) {
      const { message, rule } = checked.violation
      return Either.left(new SessionLogError({ reason: rule, message, seq }))
    }
    events.push(event)
    next = advance(next, event, checked.state)
  }
  return Either.right({ events, next })
}

// Untraced on purpose: the agent appends every stream chunk, and a span (with its stack capture) would cost
// more than the append itself; turns and steps carry the spans. Written as a flat chain (one state read, the
// clock read synchronously, one synchronous preparation, then the commit): every interpreter step here is paid
// a dozen times per turn (ADR 0023).
const appendLocked = (
  p: AppendParts,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  trusted: boolean,
  tx?: LogTransaction
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError> =>
  Effect.clockWith((clock) =>
    Effect.flatten(Ref.modify(p.shared, (s) =>
      tx === undefined || tx.open
        ? appendTo(p, s, inputs, clock.unsafeCurrentTimeMillis(), trusted)
        : [usedAfterItsTransaction, s]))
  )

/** A transaction's append: inside its section the caller holds the lock already; the writer may make it wait. */
const appendIn = (
  p: AppendParts,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  trusted: boolean,
  tx: LogTransaction
) => {
  const held = appendLocked(p, inputs, trusted, tx)
  return p.background === undefined ? held : Effect.zipRight(p.background.awaitRoom, held)
}

/** One append decided in one synchronous step from the log's state: what runs next, and the state after it. */
const appendTo = (
  p: AppendParts,
  s: Shared,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  time: number,
  trusted: boolean
): readonly [Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError>, Shared] => {
  const { data: current, writer } = s
  if (writer.broken !== undefined) return [Effect.fail(brokenError(p.id, writer.broken)), s]
  const prepared = prepare(current, inputs, time, trusted)
  if (Either.isLeft(prepared)) return [Effect.fail(prepared.left), s]
  const { events, next } = prepared.right
  if (events.length === 0) return [Effect.succeed(events), s]
  // Write-behind: accepted in memory now; the writer makes it durable (in order, in batches).
  if (p.background !== undefined) {
    return [Effect.zipLeft(notify(p, events), p.background.kick), { ...s, data: next }]
  }
  // Write-through: the commit point is the store write; memory and observers follow it, then the snapshot
  // bookkeeping (none without snapshots). Inbox records recorded since the last commit ride with it (before its
  // events). A memory store commits right here, in this synchronous step (ADR 0037).
  const inbox = Chunk.toReadonlyArray(writer.inbox)
  const commit = { events, inbox }
  if (p.commitNow === undefined) {
    const written = Effect.mapError(p.store.append(p.id, commit), refusedCommit(events))
    return [Effect.flatMap(written, () => committed(p, next, inbox, events)), s]
  }
  const refusal = p.commitNow(p.id, commit)
  if (refusal !== undefined) return [Effect.fail(refusedCommit(events)(refusal)), s]
  return [announce(p, next, inbox, events), committedState(s, next, inbox)]
}

/**
 * The log's state once the store took a write-through commit of `next`'s events and `inbox`. One object literal,
 * not a spread of the writer: V8 builds a literal many times faster than it copies a spread (ADR 0040).
 */
const committedState = (s: Shared, next: LogData, inbox: ReadonlyArray<StoreRecords.InboxRecord>): Shared => {
  const w = s.writer
  return {
    data: next,
    writer: {
      durable: next.state.nextSeq,
      synced: w.synced,
      syncTo: w.syncTo,
      inbox: inbox.length === 0 ? w.inbox : Chunk.drop(w.inbox, inbox.length),
      inboxWritten: w.inboxWritten + inbox.length,
      inboxSynced: w.inboxSynced,
      inboxSyncTo: w.inboxSyncTo,
      running: w.running,
      broken: w.broken,
      progress: w.progress
    }
  }
}

/** After a write-through commit is in the log's state: observers, then the snapshot bookkeeping. */
const announce = (
  p: AppendParts,
  next: LogData,
  inbox: ReadonlyArray<StoreRecords.InboxRecord>,
  events: Array<SessionEvent.SessionEvent>
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
  p.afterCommit === noSnapshots
    ? notify(p, events)
    : Effect.zipLeft(notify(p, events), p.afterCommit(inbox, events, next.checkpoint))

/** Write-through, after an effectful store took the commit: the log's state, then `announce`. */
const committed = (
  p: AppendParts,
  next: LogData,
  inbox: ReadonlyArray<StoreRecords.InboxRecord>,
  events: Array<SessionEvent.SessionEvent>
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> =>
  Effect.flatMap(Ref.update(p.shared, (s) => committedState(s, next, inbox)), () => announce(p, next, inbox, events))

/** `SessionLog.recordInbox`. */
export const recordInbox = (
  p: AppendParts,
  inputs: ReadonlyArray<InboxRecordInput>,
  options?: { readonly trusted?: boolean }
): Effect.Effect<void, SessionLogError> =>
  inputs.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (time) => {
    const records: Array<StoreRecords.InboxRecord> = []
    for (const input of inputs) {
      const candidate = stampInbox(input, time)
      if (!slowPath && (options?.trusted === true || isInboxRecord(candidate))) {
        records.push(candidate)
        continue
      }
      const checked = validateInbox(candidate)
      if (Either.isLeft(checked)) {
        return Effect.fail(
          new SessionLogError({
            reason: "invalid-event",
            message: `the ${input.type} record is invalid: ${formatIssue(checked.left)}`
          })
        )
      }
      records.push(checked.right)
    }
    // No lock: every commit drops from the front exactly the records it wrote, so records added while a commit
    // is in flight stay pending for the next one.
    const update = Ref.update(p.shared, (s) => ({
      ...s,
      writer: { ...s.writer, inbox: Chunk.appendAll(s.writer.inbox, Chunk.unsafeFromArray(records)) }
    }))
    const add = records.some(isApprovalRecord) ? Effect.zipRight(update, p.approvals.record(records)) : update
    return p.background === undefined ? add : Effect.zipRight(add, p.background.kick)
  })

/** `SessionLog.hasMessage`. */
export const hasMessage = (p: AppendParts, messageId: Ids.AgentMessageId): Effect.Effect<boolean, SessionLogError> =>
  Effect.flatMap(Ref.get(p.shared), (s) => {
    const unwritten = Chunk.some(s.writer.inbox, (r) => StoreRecords.messageIdOf(r) === messageId) ||
      (s.writer.durable < s.data.state.nextSeq &&
        AppendOnly.someFrom(
          s.data.events,
          s.writer.durable - s.data.base,
          (e) => StoreRecords.messageIdOf(e) === messageId
        ))
    return unwritten ? Effect.succeed(true) : p.store.hasMessage(p.id, messageId).pipe(
      Effect.mapError(storeError(`cannot look up message ${JSON.stringify(messageId)}`))
    )
  })

/**
 * An append outside a transaction. Under the lock it waits on nothing but the store (write-through) or on nothing at
 * all (write-behind).
 */
export const appendBatch = (
  p: AppendParts,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  trusted: boolean
) => {
  const locked = holding(p.lock, appendLocked(p, inputs, trusted))
  return p.background === undefined ? locked : Effect.zipRight(p.background.awaitRoom, locked)
}

/** `SessionLog.transaction`. */
export const inTransaction = <A, E, R>(
  p: AppendParts,
  body: (tx: Transaction) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => transaction(p.lock, p.appendIn, body)

/** `SessionLog.flush`: the durability barrier. */
export const flush = (p: AppendParts): Effect.Effect<void, SessionLogError> =>
  Effect.suspend(() => {
    const { background, id, lock, shared, store } = p
    if (background === undefined) {
      // Every event is written already; recorded inbox records are written now, and a durable store still
      // needs its sync. Held like an append (`holding`): an interruption landing while the store writes must not
      // leave the records it wrote pending, to be written (and restored) a second time.
      return Effect.flatMap(
        Ref.get(shared),
        (s) =>
          s.writer.synced >= s.data.state.nextSeq && Chunk.isEmpty(s.writer.inbox)
            ? Effect.void
            : holding(
              lock,
              Effect.flatMap(Ref.get(shared), (now) => {
                const inbox = Chunk.toReadonlyArray(now.writer.inbox)
                return store.append(id, { events: [], inbox }, { sync: true }).pipe(
                  Effect.mapError(storeError("the store refused to sync")),
                  Effect.tap(() => p.afterCommit(inbox, [], undefined)),
                  Effect.zipRight(Ref.update(shared, (x) => ({
                    ...x,
                    writer: {
                      ...x.writer,
                      synced: Math.max(x.writer.synced, now.data.state.nextSeq),
                      inbox: Chunk.drop(x.writer.inbox, inbox.length),
                      inboxWritten: x.writer.inboxWritten + inbox.length,
                      inboxSynced: x.writer.inboxWritten + inbox.length
                    }
                  })))
                )
              })
            )
      )
    }
    return Effect.flatMap(
      Ref.modify(shared, (s): readonly [readonly [number, number], Shared] => {
        const target = s.data.state.nextSeq
        const inboxTarget = s.writer.inboxWritten + Chunk.size(s.writer.inbox)
        return [[target, inboxTarget], {
          ...s,
          writer: {
            ...s.writer,
            syncTo: Math.max(s.writer.syncTo, target),
            inboxSyncTo: Math.max(s.writer.inboxSyncTo, inboxTarget)
          }
        }]
      }),
      ([target, inboxTarget]) =>
        Effect.zipRight(
          Effect.zipRight(Effect.annotateCurrentSpan("harness.log.seq", target), background.kick),
          background.awaitWriter((w) => w.synced >= target && w.inboxSynced >= inboxTarget)
        )
    )
  }).pipe(Effect.withSpan("SessionLog.flush", { attributes: { "harness.session.id": p.id }, captureStackTrace: false }))

/** A transaction's handle used after its transaction ended: a bug of the caller's, so a defect. */
const usedAfterItsTransaction = Effect.dieMessage(
  "SessionLog: a transaction's append ran after the transaction ended (use the handle only inside `transaction`)"
)
