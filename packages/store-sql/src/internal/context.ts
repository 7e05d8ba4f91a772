/**
 * What every part of the SQL store shares: the client and its writer, the store's failures, and the writer lease's
 * fence — every write checks its token in the condition of its first statement and, when that statement matches no
 * row, tells `NotFound`, `Busy` and `Conflict` apart (ADR 0044).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlClient as SqlClientTag } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type Ids, Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Duration, Effect, Schema } from "effect"
import * as os from "node:os"
import type { Dialect, Options, Run } from "../SqlStore.js"
import { closedConnection, sqlMessage } from "./writer.js"

/** Integer columns as drivers return them: PostgreSQL's BIGINT arrives as a string (pg's default for int8). */
export type Int = number | string

/** Ids are stored as their JSON text: lossless for every JavaScript string. */
export const keyText = (id: string): string => JSON.stringify(id)

const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(Store.SessionHeader))

export interface LeaseRow {
  readonly lease_token: Int | null
  readonly lease_pid: number | null
  readonly lease_host: string | null
  readonly lease_since: Int | null
  readonly lease_renewed: Int | null
}

/** The lease columns of `sessions`, as every statement that judges a lease selects them. */
export const leaseColumns = "lease_token, lease_pid, lease_host, lease_since, lease_renewed"

/** The default lease time: a holder not renewed for this long is gone (ADR 0044). */
const defaultLeaseTime: Duration.DurationInput = "30 seconds"

/** Whether process `pid` runs on this host (`ESRCH`: it does not; `EPERM`: it does, as another user). */
const pidRuns = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return !(e instanceof Error && "code" in e && e.code === "ESRCH")
  }
}

/** {@link make}'s record: the store's shared client, writer, failures and fence. */
export type Context = Effect.Effect.Success<ReturnType<typeof make>>

/** The shared part of the store over the `SqlClient` of the context, with `dialect`'s writes and SQL. */
export const make = (dialect: Dialect, options?: Options) =>
  Effect.gen(function*() {
    const sql: SqlClient.SqlClient = yield* SqlClientTag
    const write = yield* dialect.writer(sql)
    const leaseTime = Duration.toMillis(Duration.decode(options?.leaseTime ?? defaultLeaseTime))
    const renewEvery = Duration.millis(Math.max(1, Math.floor(leaseTime / 3)))
    /** This process, as a lease names it. */
    const self = yield* Effect.sync(() => ({ pid: process.pid, host: os.hostname() }))

    const error = (
      id: Ids.SessionId | undefined,
      reason: SessionStore.SessionStoreErrorReason,
      message: string,
      holder?: Store.LeaseHolder
    ) =>
      new SessionStore.SessionStoreError({
        reason,
        message,
        ...(id === undefined ? {} : { id }),
        ...(holder === undefined ? {} : { holder })
      })

    const fail = (id: Ids.SessionId, reason: SessionStore.SessionStoreErrorReason, message: string) =>
      Effect.fail(error(id, reason, message))

    const notFound = (id: Ids.SessionId) => fail(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)

    /** Maps SQL failures to `Io` (or `Closed`, for a connection closed for good), naming the operation and engine. */
    const io = (what: string, id?: Ids.SessionId) =>
    <A, R>(
      effect: Effect.Effect<A, SqlError | SessionStore.SessionStoreError, R>
    ): Effect.Effect<A, SessionStore.SessionStoreError, R> =>
      Effect.catchTag(
        effect,
        "SqlError",
        (e) =>
          Effect.fail(
            error(id, closedConnection(e) ? "Closed" : "Io", `${dialect.name} failed to ${what}: ${sqlMessage(e)}`)
          )
      )

    const lockRow = dialect.lockRow === "" ? sql`` : sql` ${sql.literal(dialect.lockRow)}`

    /** Statements outside a write run as themselves. */
    const direct: Run = (statement) => statement

    /** The token a write carries: its lease's, 0 for none (a session nobody leases stores 0), -1 for another id's. */
    const tokenOf = (id: Ids.SessionId, lease: SessionStore.Lease | undefined): number =>
      lease === undefined ? 0 : lease.id === id ? lease.token : -1

    /** The fence, as a condition on the session's row: the write's token is the row's. */
    const fence = (id: Ids.SessionId, lease: SessionStore.Lease | undefined) =>
      sql` AND COALESCE(lease_token, 0) = ${tokenOf(id, lease)}`

    const holderOf = (row: LeaseRow): Store.LeaseHolder | undefined =>
      row.lease_token === null
        ? undefined
        : { pid: row.lease_pid ?? 0, host: row.lease_host ?? "", since: Number(row.lease_since ?? 0) }

    /** The refusal of a write whose token is not the row's (`undefined` when it is). */
    const fenceRefusal = (id: Ids.SessionId, row: LeaseRow, lease: SessionStore.Lease | undefined) => {
      const stored = row.lease_token === null ? 0 : Number(row.lease_token)
      if (stored === tokenOf(id, lease)) return undefined
      const holder = holderOf(row)
      const name = JSON.stringify(id)
      return error(
        id,
        "Busy",
        holder === undefined
          ? `the writer lease of session ${name} was released`
          : lease === undefined
          ? `session ${name} is leased by a writer (${Store.describeHolder(holder)}): a write must carry its lease`
          : `the writer lease of session ${name} was taken over by ${Store.describeHolder(holder)}`,
        holder
      )
    }

    /** Whether the holder of a leased row is gone: not renewed within the lease time, or dead on this host. */
    const holderGone = (row: LeaseRow, now: number) =>
      Effect.sync(() =>
        now - Number(row.lease_renewed ?? 0) > leaseTime ||
        (row.lease_host === self.host && row.lease_pid !== null && !pidRuns(row.lease_pid))
      )

    /** Whether this process holds the row's lease (through this store or another). */
    const heldHere = (row: LeaseRow) => row.lease_host === self.host && row.lease_pid === self.pid

    /**
     * Why a write's first statement matched no row: `NotFound`, the fence's `Busy`, else `otherwise` (the row exists
     * and the write's token is its own, so the statement's other condition failed).
     */
    const refuse = (
      id: Ids.SessionId,
      run: Run,
      lease: SessionStore.Lease | undefined,
      otherwise: (row: LeaseRow & { readonly events: number }) => SessionStore.SessionStoreError
    ) =>
      Effect.flatMap(
        run(
          sql<LeaseRow & { readonly events: number }>`SELECT events, ${
            sql.literal(leaseColumns)
          } FROM sessions WHERE id = ${keyText(id)}`
        ),
        (rows) => {
          if (rows.length === 0) return notFound(id)
          const refusal = fenceRefusal(id, rows[0]!, lease)
          return Effect.fail(refusal ?? otherwise(rows[0]!))
        }
      )

    /** Refusal of a write whose lease changed while it ran (its first statement saw another). */
    const changedWriter = (id: Ids.SessionId) =>
      error(id, "Busy", `the writer lease of session ${JSON.stringify(id)} changed during the write`)

    const keyOf = (id: Ids.SessionId, run: Run = direct) =>
      Effect.flatMap(
        run(sql<{ readonly key: number }>`SELECT key FROM sessions WHERE id = ${keyText(id)}`),
        (rows) => rows.length === 0 ? notFound(id) : Effect.succeed(rows[0]!.key)
      )

    const decodeStoredHeader = (id: Ids.SessionId | undefined, text: string) => {
      const decoded = decodeHeader(text)
      return decoded._tag === "Right"
        ? Effect.succeed(decoded.right)
        : Effect.fail(
          error(
            id,
            "Corrupt",
            `the stored header ${text.slice(0, 200)} is not a session header: ${decoded.left.message}`
          )
        )
    }

    return {
      dialect,
      sql,
      write,
      renewEvery,
      self,
      error,
      fail,
      notFound,
      io,
      lockRow,
      direct,
      fence,
      holderOf,
      fenceRefusal,
      holderGone,
      heldHere,
      refuse,
      changedWriter,
      keyOf,
      decodeStoredHeader
    }
  })
