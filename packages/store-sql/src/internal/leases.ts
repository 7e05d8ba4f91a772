/**
 * The writer lease (ADR 0044): taken in one write transaction, renewed every third of the lease time while held,
 * released by clearing the session row's lease columns.
 */
import { type Ids, Store } from "@harness/domain"
import type { SessionStore } from "@harness/session"
import { Clock, Effect, Fiber } from "effect"
import { type Context, type Int, keyText, leaseColumns, type LeaseRow } from "./context.js"
import { closedConnection } from "./writer.js"

type Service = SessionStore.Service

/** `lease` over the store's context. */
export const make = (ctx: Context) => {
  const { error, heldHere, holderGone, holderOf, io, lockRow, notFound, renewEvery, self, sql, write } = ctx

  /** Renews a held lease every third of the lease time until it is released or found taken over. */
  const keepAlive = (id: Ids.SessionId, token: number) =>
    Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(renewEvery)
        const now = yield* Clock.currentTimeMillis
        const renewed = yield* Effect.either(
          sql`UPDATE sessions SET lease_renewed = ${now} WHERE id = ${keyText(id)} AND lease_token = ${token}
          RETURNING key`
        )
        // Taken over or removed: nothing left to keep. Closed: nothing can be kept. Other failures: next time.
        if (renewed._tag === "Right" ? renewed.right.length === 0 : closedConnection(renewed.left)) {
          return
        }
      }
    })

  /** `Busy` naming the row's holder when another live process holds its lease. */
  const heldElsewhere = (id: Ids.SessionId, row: LeaseRow, now: number) =>
    Effect.gen(function*() {
      const holder = holderOf(row)
      if (holder === undefined || heldHere(row) || (yield* holderGone(row, now))) {
        return
      }
      return yield* Effect.fail(
        error(id, "Busy", `session ${JSON.stringify(id)} is being written by ${Store.describeHolder(holder)}`, holder)
      )
    })

  const lease: Service["lease"] = (id) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // First a plain read, which never waits for a writer: a session held by a live process is refused at once,
      // even while its holder is inside a write transaction (which would make a write here wait, then fail).
      const seen = yield* sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}`
        .pipe(io("read the session's lease", id))
      if (seen.length === 0) {
        return yield* notFound(id)
      }
      yield* heldElsewhere(id, seen[0]!, now)
      const token = yield* write((run) =>
        Effect.gen(function*() {
          const rows = yield* run(
            sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}${lockRow}`
          )
          if (rows.length === 0) {
            return yield* notFound(id)
          }
          yield* heldElsewhere(id, rows[0]!, now)
          const [issued] = yield* run(
            sql<{ readonly last: Int }>`UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last`
          )
          const token = Number(issued!.last)
          yield* run(sql`UPDATE sessions SET lease_token = ${token}, lease_pid = ${self.pid},
          lease_host = ${self.host}, lease_since = ${now}, lease_renewed = ${now} WHERE id = ${keyText(id)}`)
          return token
        })
      ).pipe(io("lease the session", id))
      // Interruptible whatever region `lease` runs in (an `acquireRelease` acquire is uninterruptible), so release
      // can stop it.
      const renewal = yield* Effect.forkDaemon(Effect.interruptible(keepAlive(id, token)))
      const release = Effect.zipRight(
        Fiber.interrupt(renewal),
        Effect.ignore(
          sql`UPDATE sessions SET lease_token = NULL, lease_pid = NULL, lease_host = NULL, lease_since = NULL,
          lease_renewed = NULL WHERE id = ${keyText(id)} AND lease_token = ${token}`
        )
      )
      return { id, token, holder: { pid: self.pid, host: self.host, since: now }, release }
    })

  return lease
}
