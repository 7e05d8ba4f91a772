/**
 * The store's sessions as a whole: `list` (from the figures in each session's row), `damaged` (rows whose header
 * does not decode) and `remove`.
 */
import { Ids, type Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Clock, Effect } from "effect"
import { type Context, type Int, keyText, leaseColumns, type LeaseRow } from "./context.js"

type Service = SessionStore.Service

/** Free text (a prompt preview, a snapshot) is stored as its JSON text, lossless for any JavaScript string. */
const decodeText = (stored: string): string => {
  const parsed: unknown = JSON.parse(stored)
  return typeof parsed === "string" ? parsed : stored
}

/**
 * A session's id from its stored column (its JSON text; a column that is not is taken as the id itself), unchecked:
 * it names the row as stored, so `remove` finds it whatever it is.
 */
const idOfColumn = (stored: string): Ids.SessionId => {
  try {
    const parsed: unknown = JSON.parse(stored)
    return Ids.SessionId.make(typeof parsed === "string" ? parsed : stored, true)
  } catch {
    return Ids.SessionId.make(stored, true)
  }
}

interface SessionRow {
  readonly key: number
  readonly header: string
  readonly records: number
  readonly events: number
  readonly turns: number
  readonly last_activity: Int
  readonly bytes: Int
  readonly first_prompt: string | null
  readonly first_prompt_position: number | null
}

/** The listing and removal of sessions over the store's context. */
export const make = (ctx: Context) => {
  const { decodeStoredHeader, fenceRefusal, heldHere, holderGone, io, lockRow, notFound, sql, write } = ctx

  /** Every session's row, each with its header decoded or what is wrong with it. */
  const rowsOfAll = Effect.flatMap(
    sql<SessionRow & { readonly id: string }>`SELECT key, id, header, records, events, turns, last_activity, bytes,
    first_prompt, first_prompt_position FROM sessions ORDER BY key`,
    (rows) =>
      Effect.forEach(
        rows,
        (row) => Effect.either(Effect.map(decodeStoredHeader(undefined, row.header), (header) => ({ row, header })))
      ).pipe(
        Effect.map((decoded) => decoded.map((result, i) => ({ row: rows[i]!, result })))
      )
  )

  const list: Service["list"] = Effect.map(
    rowsOfAll,
    (rows) =>
      rows.flatMap(({ result }): Array<Store.SessionSummary> => {
        if (result._tag === "Left") return []
        const { header, row } = result.right
        const firstPrompt = row.first_prompt === null
          ? undefined
          : { text: decodeText(row.first_prompt), position: row.first_prompt_position ?? 0 }
        const figures = { ...row, lastActivity: Number(row.last_activity), bytes: Number(row.bytes), firstPrompt }
        return [SessionStore.summaryOf(header, figures, figures.bytes)]
      })
  ).pipe(io("list the sessions"))

  const damaged: Service["damaged"] = Effect.map(
    rowsOfAll,
    (rows) =>
      rows.flatMap(({ result, row }): Array<Store.DamagedSession> =>
        result._tag === "Right" ? [] : [{ id: idOfColumn(row.id), problem: result.left.message }]
      )
  ).pipe(io("list the damaged sessions"))

  const remove: Service["remove"] = (id, options) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      write((run) =>
        Effect.gen(function*() {
          const rows = yield* run(
            sql<LeaseRow & { readonly key: number }>`SELECT key, ${
              sql.literal(leaseColumns)
            } FROM sessions WHERE id = ${keyText(id)}${lockRow}`
          )
          if (rows.length === 0) {
            return yield* notFound(id)
          }
          const row = rows[0]!
          // Another live process's lease fences the remove; this process's, or a gone holder's, does not.
          const refusal = fenceRefusal(id, row, options?.lease)
          if (refusal !== undefined && row.lease_token !== null && !heldHere(row) && !(yield* holderGone(row, now))) {
            return yield* Effect.fail(refusal)
          }
          const key = row.key
          yield* run(sql`DELETE FROM records WHERE session = ${key}`)
          yield* run(sql`DELETE FROM snapshot_heads WHERE session = ${key}`)
          yield* run(sql`DELETE FROM snapshot_bodies WHERE session = ${key}`)
          yield* run(sql`DELETE FROM sessions WHERE key = ${key}`)
        })
      )).pipe(io("remove the session", id))

  return { list, damaged, remove }
}
