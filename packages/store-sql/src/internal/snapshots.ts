/**
 * A session's snapshot (ADR 0027): its head and its body in two tables, written in one transaction, the body read
 * only when asked for and only while the head it was saved with is still the session's.
 */
import type { Ids } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Effect, Option } from "effect"
import { type Context, keyText } from "./context.js"

type Service = SessionStore.Service

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether a string is well-formed UTF-16 (`String.prototype.isWellFormed` where the runtime has it). */
const isWellFormed = (text: string): boolean => {
  const native = (text as unknown as { readonly isWellFormed?: () => boolean }).isWellFormed
  return native === undefined ? !loneSurrogate.test(text) : native.call(text)
}

/**
 * A snapshot part's stored form (head or body): the text itself when every engine keeps it exactly (well-formed, no NUL — every text
 * `JSON.stringify` makes, so every snapshot the log writes) and it cannot be taken for a JSON string (it does not
 * start with `"`); otherwise its JSON text, as free text is stored. A log's snapshot holds its whole history, so
 * skipping a second encoding (and its decode on every open) matters (ADR 0022). Rows written as JSON text before
 * stay readable: `loadSnapshot` tells the two apart by the first character.
 */
const fromSnapshotColumn = (stored: string): string | undefined => {
  if (!stored.startsWith("\"")) return stored
  try {
    const parsed: unknown = JSON.parse(stored)
    return typeof parsed === "string" ? parsed : undefined
  } catch {
    return undefined
  }
}

const snapshotColumn = (text: string): string =>
  text.length > 0 && !text.startsWith("\"") && !text.includes("\u0000") && isWellFormed(text)
    ? text
    : JSON.stringify(text)

/** Saves and loads snapshots over the store's context. */
export const make = (ctx: Context) => {
  const { changedWriter, fail, fence, io, keyOf, lockRow, refuse, sql, write } = ctx

  const saveSnapshot: Service["saveSnapshot"] = (id, snapshot, options) => {
    const issue = SessionStore.snapshotIssue(snapshot)
    if (issue !== undefined) {
      return fail(id, "Conflict", issue)
    }
    const lease = options?.lease
    return write((run) =>
      Effect.gen(function*() {
        const rows = yield* run(sql<{ readonly key: number; readonly records: number }>`
      SELECT key, records FROM sessions WHERE id = ${keyText(id)}${fence(id, lease)}${lockRow}`)
        if (rows.length === 0) {
          return yield* refuse(id, run, lease, () => changedWriter(id))
        }
        const { key, records } = rows[0]!
        if (snapshot.position >= records) {
          return yield* fail(
            id,
            "Conflict",
            `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${records})`
          )
        }
        /** Writes the snapshot's head or body into its table, in place of the session's previous one. */
        const upsert = (table: "snapshot_heads" | "snapshot_bodies", column: "head" | "body") =>
          run(sql`INSERT INTO ${sql.literal(table)} ${
            sql.insert({
              session: key,
              seq: snapshot.seq,
              position: snapshot.position,
              [column]: snapshotColumn(snapshot[column])
            })
          } ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, position = excluded.position, ${
            sql.literal(column)
          } = excluded.${sql.literal(column)}`)
        // Head and body in one transaction: a crash leaves the previous snapshot or this one.
        yield* upsert("snapshot_heads", "head")
        yield* upsert("snapshot_bodies", "body")
      })
    ).pipe(io("save the snapshot", id))
  }

  /**
   * The body saved with this head (`stored`: the head's column as loaded): none once the session's snapshot is
   * another one. Head and body are written in one transaction, so the head still being there means its body is.
   */
  const bodyOf = (id: Ids.SessionId, key: number, seq: number, position: number, stored: string) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ readonly body: string }>`
      SELECT b.body AS body FROM snapshot_bodies b JOIN snapshot_heads h ON h.session = b.session
      WHERE b.session = ${key} AND h.seq = ${seq} AND h.position = ${position} AND h.head = ${stored}`
      if (rows.length === 0) {
        return Option.none<string>()
      }
      const body = fromSnapshotColumn(rows[0]!.body)
      if (body === undefined) {
        return yield* fail(id, "Corrupt", "the stored snapshot body is not a JSON string")
      }
      return Option.some(body)
    }).pipe(io("read the snapshot's body", id))

  const loadSnapshot: Service["loadSnapshot"] = (id) =>
    Effect.gen(function*() {
      const key = yield* keyOf(id)
      const rows = yield* sql<{ readonly seq: number; readonly position: number; readonly head: string }>`
      SELECT seq, position, head FROM snapshot_heads WHERE session = ${key}`
      if (rows.length === 0) {
        return Option.none()
      }
      const { position, seq } = rows[0]!
      const head = fromSnapshotColumn(rows[0]!.head)
      if (head === undefined) {
        return yield* fail(id, "Corrupt", "the stored snapshot head is not a JSON string")
      }
      return Option.some<SessionStore.SnapshotHead>({
        seq: Number(seq),
        position: Number(position),
        head,
        body: bodyOf(id, key, Number(seq), Number(position), rows[0]!.head)
      })
    }).pipe(io("load the snapshot", id))

  return { saveSnapshot, loadSnapshot }
}
