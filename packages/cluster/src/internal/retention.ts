/**
 * One cleanup pass over the cluster's SQL message storage (`SqlMessageStorage`'s `<prefix>_messages` and
 * `<prefix>_replies`, on SQLite or PostgreSQL). Ages come from the ids: every message and reply id is a `Snowflake`
 * whose high bits are the time it was made, so "older than" is an id comparison the primary keys answer.
 */
import { MachineId, Snowflake } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect } from "effect"

/** What one pass deleted. */
export interface Purged {
  /** Message rows: requests, and the acknowledgements and interrupts that belong to them. */
  readonly messages: number
  /** Reply rows: those of the deleted requests, and replies older than the cutoff whose request is gone. */
  readonly replies: number
}

/** The smallest snowflake made at `millis` (or later): every id below it was made earlier. */
const snowflakeAt = (millis: number): bigint =>
  Snowflake.make({ machineId: MachineId.make(0), sequence: 0, timestamp: millis })

/**
 * Deletes the requests that were processed (their final reply stored) and made before `now - olderThan`, with every
 * row that belongs to them, and the replies older than that whose request no longer exists (a deleted session's
 * messages can be cleared while a reply is still being written). An unprocessed message is never deleted, however
 * old: it is work the cluster still owes.
 */
export const purge = (options: { readonly olderThan: Duration.DurationInput; readonly prefix?: string | undefined }) =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const prefix = options.prefix ?? "cluster"
    const messages = sql(`${prefix}_messages`)
    const replies = sql(`${prefix}_replies`)
    const now = yield* Clock.currentTimeMillis
    // A computed integer, not input: safe as a literal (and a bigint parameter binds differently per driver).
    const cutoff = sql.literal(snowflakeAt(now - Duration.toMillis(options.olderThan)).toString())
    const processed = sql.onDialectOrElse({
      sqlite: () => sql.literal("1"),
      orElse: () => sql.literal("TRUE")
    })
    const done = sql`
      SELECT id FROM ${messages} WHERE kind = 0 AND processed = ${processed} AND id < ${cutoff}`
    return yield* Effect.gen(function*() {
      const ofRequests = yield* sql`DELETE FROM ${replies} WHERE request_id IN (${done}) RETURNING id`
      const deleted = yield* sql`DELETE FROM ${messages} WHERE request_id IN (${done}) RETURNING id`
      const orphans = yield* sql`
        DELETE FROM ${replies} WHERE id < ${cutoff}
        AND NOT EXISTS (SELECT 1 FROM ${messages} m WHERE m.id = ${replies}.request_id) RETURNING id`
      return { messages: deleted.length, replies: ofRequests.length + orphans.length } satisfies Purged
    }).pipe(sql.withTransaction)
  })
