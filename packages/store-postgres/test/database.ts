/**
 * Fresh databases on the tests' throwaway server (`globalSetup.ts`): each test gets its own, dropped afterwards.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { inject } from "@effect/vitest"
import { Effect, Random, Redacted } from "effect"

const serverUrl = inject("postgresUrl")

/** The URL of database `database` on the test server. */
export const urlOf = (database: string): string => serverUrl.replace(/\/postgres$/, `/${database}`)

/** The server's maintenance connection, to create and drop the test databases. */
const admin = PgClient.layer({ url: Redacted.make(serverUrl) })

/** A fresh database (its name), dropped when the scope closes. */
export const freshDatabase = Effect.acquireRelease(
  Effect.gen(function*() {
    const name = `harness_${(yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)}_${
      (yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)
    }`
    const sql = yield* PgClient.PgClient
    yield* sql.unsafe(`CREATE DATABASE ${name}`)
    return name
  }).pipe(Effect.provide(admin), Effect.orDie),
  (name) =>
    Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)).pipe(
      Effect.provide(admin),
      Effect.orDie
    )
)
