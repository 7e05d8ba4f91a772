/**
 * A session's records: `create` and `append` (a commit as one transaction whose first statement writes the session's
 * row, taking the lock that orders its writers, checking fence and contiguity, and keeping the figures `list` shows
 * current), `truncate`, and the reads `load`, `header` and `hasMessage`.
 */
import { SessionStore } from "@harness/session"
import { Chunk, Effect, Option, Stream } from "effect"
import type { Run } from "../SqlStore.js"
import { type Context, type Int, keyText, leaseColumns, type LeaseRow } from "./context.js"

type Service = SessionStore.Service

/** Record kinds, as stored: what summaries are recomputed from without parsing a record. */
const kindCode = { inbox: 0, event: 1, turn: 2 } as const

/** Rows of one multi-row INSERT: 6 parameters each, far below SQLite's (32 766) and PostgreSQL's (65 535) limits. */
const insertBatch = 500

/** Records per page of a streamed load. */
const pageSize = 1_024

/** The records of the store's sessions over its context. */
export const make = (ctx: Context) => {
  const {
    changedWriter,
    decodeStoredHeader,
    dialect,
    error,
    fail,
    fence,
    fenceRefusal,
    io,
    keyOf,
    lockRow,
    notFound,
    refuse,
    sql,
    write
  } = ctx

  const insertRecords = (
    run: Run,
    key: number,
    base: number,
    records: ReadonlyArray<SessionStore.EncodedRecord>
  ) =>
    Effect.forEach(
      Array.from(
        { length: Math.ceil(records.length / insertBatch) },
        (_, i) => records.slice(i * insertBatch, (i + 1) * insertBatch)
      ),
      (batch) =>
        run(sql`INSERT INTO records ${
          sql.insert(batch.map((r) => ({
            session: key,
            position: base + r.position,
            kind: kindCode[r.kind],
            time: r.time,
            message_id: r.messageId === undefined ? null : keyText(r.messageId),
            text: r.text
          })))
        }`),
      { discard: true }
    )

  const create: Service["create"] = (header, commit) => {
    const id = header.id
    const empty = { events: [], inbox: [] }
    const issue = SessionStore.contiguityIssue(0, commit ?? empty)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    const headerText = JSON.stringify(header)
    const records = SessionStore.encodeCommit(commit ?? empty, 0)
    const figures = SessionStore.figuresOf(records)
    const summary = SessionStore.summaryOf(header, figures)
    return write((run) =>
      Effect.gen(function*() {
        const inserted = yield* run(sql<{ readonly key: number }>`INSERT INTO sessions ${
          sql.insert({
            id: keyText(id),
            header: headerText,
            created_at: header.createdAt,
            records: figures.records,
            events: figures.events,
            turns: figures.turns,
            last_activity: summary.lastActivity,
            bytes: summary.bytes,
            first_prompt: figures.firstPrompt === undefined ? null : JSON.stringify(figures.firstPrompt.text),
            first_prompt_position: figures.firstPrompt?.position ?? null
          })
        } ON CONFLICT (id) DO NOTHING RETURNING key`)
        if (inserted.length === 0) {
          return yield* fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`)
        }
        yield* insertRecords(run, inserted[0]!.key, 0, records)
      })
    ).pipe(io("create the session", id))
  }

  const append: Service["append"] = (id, commit, options) => {
    const firstSeq = commit.events[0]?.seq
    if (firstSeq !== undefined) {
      const issue = SessionStore.contiguityIssue(firstSeq, commit)
      if (issue !== undefined) return fail(id, "Conflict", issue)
    }
    const lease = options?.lease
    const records = SessionStore.encodeCommit(commit, 0)
    if (records.length === 0) {
      if (options?.sync !== true) {
        return Effect.flatMap(
          sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}`,
          (rows) => {
            if (rows.length === 0) return notFound(id)
            const refusal = fenceRefusal(id, rows[0]!, lease)
            return refusal === undefined ? Effect.void : Effect.fail(refusal)
          }
        ).pipe(io("read the session", id))
      }
      // A barrier over commits already written unsynced: a synced transaction that rewrites the session's row
      // waits for the engine's log to reach the disk up to its commit, which covers every earlier commit too.
      return write(
        (run) =>
          Effect.gen(function*() {
            const touched = yield* run(
              sql`UPDATE sessions SET records = records WHERE id = ${keyText(id)}${fence(id, lease)} RETURNING key`
            )
            if (touched.length === 0) return yield* refuse(id, run, lease, () => changedWriter(id))
          }),
        true
      ).pipe(io("sync the session", id))
    }
    const figures = SessionStore.figuresOf(records)
    const prompt = figures.firstPrompt
    return write(
      (run) =>
        Effect.gen(function*() {
          // The write comes first: it takes the write lock, updates the figures and checks the fence and
          // contiguity in one step.
          const updated = yield* run(sql<{ readonly key: number; readonly records: number }>`UPDATE sessions SET
          records = records + ${figures.records},
          events = events + ${figures.events},
          turns = turns + ${figures.turns},
          bytes = bytes + ${figures.bytes},
          last_activity = ${figures.lastActivity!},
          first_prompt_position = CASE WHEN first_prompt IS NULL AND ${prompt === undefined ? 0 : 1} = 1
            THEN records + ${prompt?.position ?? 0} ELSE first_prompt_position END,
          first_prompt = CASE WHEN first_prompt IS NULL THEN ${
            prompt === undefined ? null : JSON.stringify(prompt.text)
          } ELSE first_prompt END
        WHERE id = ${keyText(id)}${fence(id, lease)}${firstSeq === undefined ? sql`` : sql` AND events = ${firstSeq}`}
        RETURNING key, records`)
          if (updated.length === 0) {
            return yield* refuse(id, run, lease, (row) =>
              error(
                id,
                "Conflict",
                SessionStore.contiguityIssue(row.events, commit) ?? "the commit does not continue the session"
              ))
          }
          const { key, records: total } = updated[0]!
          yield* insertRecords(run, key, total - figures.records, records)
        }),
      options?.sync === true
    ).pipe(io("append to the session", id))
  }

  const load: Service["load"] = (id, options) =>
    Stream.unwrap(
      keyOf(id).pipe(
        io("read the session", id),
        Effect.map((key) =>
          Stream.paginateChunkEffect(options?.after ?? -1, (after) =>
            sql<SessionStore.StoredRecord>`SELECT position, text FROM records
            WHERE session = ${key} AND position > ${after} ORDER BY position LIMIT ${pageSize}`.pipe(
              io("load the session", id),
              Effect.map((rows) =>
                [
                  Chunk.unsafeFromArray(rows),
                  rows.length < pageSize ? Option.none() : Option.some(rows[rows.length - 1]!.position)
                ] as const
              )
            ))
        )
      )
    )

  const header: Service["header"] = (id) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ readonly header: string }>`SELECT header FROM sessions WHERE id = ${keyText(id)}`
      if (rows.length === 0) return yield* notFound(id)
      return yield* decodeStoredHeader(id, rows[0]!.header)
    }).pipe(io("read the session's header", id))

  const truncate: Service["truncate"] = (id, position, options) => {
    const issue = SessionStore.positionIssue(position)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    const lease = options?.lease
    return write((run) =>
      Effect.gen(function*() {
        const rows = yield* run(sql<{ readonly key: number; readonly records: number; readonly created_at: Int }>`
      SELECT key, records, created_at FROM sessions WHERE id = ${keyText(id)}${fence(id, lease)}${lockRow}`)
        if (rows.length === 0) return yield* refuse(id, run, lease, () => changedWriter(id))
        const { created_at, key, records } = rows[0]!
        if (position >= records) return
        const [dropped] = yield* run(sql<{ readonly events: Int; readonly turns: Int; readonly bytes: Int }>`
      SELECT ${sql.literal(dialect.droppedFigures)}
      FROM records WHERE session = ${key} AND position >= ${position}`)
        const last = position === 0
          ? []
          : yield* run(
            sql<{ readonly time: Int }>`SELECT time FROM records WHERE session = ${key} AND position = ${position - 1}`
          )
        yield* run(sql`DELETE FROM records WHERE session = ${key} AND position >= ${position}`)
        yield* run(sql`DELETE FROM snapshot_heads WHERE session = ${key} AND position >= ${position}`)
        yield* run(sql`DELETE FROM snapshot_bodies WHERE session = ${key} AND position >= ${position}`)
        yield* run(sql`UPDATE sessions SET
        records = ${position},
        events = events - ${Number(dropped!.events)},
        turns = turns - ${Number(dropped!.turns)},
        bytes = bytes - ${Number(dropped!.bytes)},
        last_activity = ${Number(last[0]?.time ?? created_at)},
        first_prompt = CASE WHEN first_prompt_position >= ${position} THEN NULL ELSE first_prompt END,
        first_prompt_position = CASE WHEN first_prompt_position >= ${position} THEN NULL ELSE first_prompt_position END
      WHERE key = ${key}`)
      })
    ).pipe(io("truncate the session", id))
  }

  const hasMessage: Service["hasMessage"] = (id, messageId) =>
    Effect.gen(function*() {
      const key = yield* keyOf(id)
      const rows = yield* sql`SELECT 1 AS found FROM records
      WHERE session = ${key} AND message_id = ${keyText(messageId)} LIMIT 1`
      return rows.length > 0
    }).pipe(io("look up a message id", id))

  return { create, append, load, header, truncate, hasMessage }
}
