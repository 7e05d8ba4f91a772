/**
 * The log's pending approvals (ADR 0054, ADR 0075): every `approval/requested` with no `approval/answered`, kept as
 * the log opens (from its snapshot's head and the records after it) and as it records, so a resumed agent restores
 * them (R167) without reading every stored record back (R237).
 */
import { Store as StoreRecords } from "@harness/domain"
import { Effect } from "effect"
import type { SessionLogError } from "../SessionLogError.js"

/**
 * The pending approvals at a point of the log, in request order; `"unknown"` when the log was opened from a snapshot
 * whose head does not list them (written before heads did).
 */
export type Approvals = ReadonlyArray<StoreRecords.ApprovalRequested> | "unknown"

/** Whether a record can change the pending approvals. */
export const isApprovalRecord = (record: StoreRecords.InboxRecord): boolean =>
  record.type === "approval/requested" || record.type === "approval/answered"

/** The pending approvals after `records`, from `pending` (a copy: `pending` is not changed). */
export const folded = (
  pending: ReadonlyMap<string, StoreRecords.ApprovalRequested>,
  records: Iterable<StoreRecords.InboxRecord>
): Map<string, StoreRecords.ApprovalRequested> => {
  const next = new Map(pending)
  for (const record of records) StoreRecords.foldApprovals(next, record)
  return next
}

/** No pending approval: one empty map shared by every log (`folded` makes a new map, ADR 0079). */
const none: ReadonlyMap<string, StoreRecords.ApprovalRequested> = new Map()

/**
 * A log's pending approvals: what it records is folded in; read as `pending`. Its operations are methods of one
 * prototype and its value a field replaced in one synchronous step, so atomic without a `Ref` (as the memory store's
 * sessions are, ADR 0076): a `Ref` and two closures were ≈ 0.4 KB of every idle agent (ADR 0079).
 */
export class Tracker {
  #now: ReadonlyMap<string, StoreRecords.ApprovalRequested> | "unknown"
  constructor(opened: Approvals) {
    this.#now = opened === "unknown" ? opened : opened.length === 0 ? none : new Map(opened.map((r) => [r.callId, r]))
  }
  /** Folds in inbox records the log just recorded (stamped, in order; called only when some is an approval record). */
  record(records: ReadonlyArray<StoreRecords.InboxRecord>): Effect.Effect<void> {
    return Effect.sync(() => {
      const now = this.#now
      if (now !== "unknown") this.#now = folded(now, records)
    })
  }
  /** The pending approvals now; `everyRecord` is read only when they were unknown at open. */
  pending(
    everyRecord: Effect.Effect<ReadonlyArray<StoreRecords.InboxRecord>, SessionLogError>
  ): Effect.Effect<ReadonlyArray<StoreRecords.ApprovalRequested>, SessionLogError> {
    return Effect.suspend(() => {
      const now = this.#now
      return now === "unknown"
        ? Effect.map(everyRecord, (records) => [...folded(new Map(), records).values()])
        : Effect.succeed([...now.values()])
    })
  }
}
