/**
 * A fresh database per test on the throwaway PostgreSQL server that `@harness/store-postgres`'s global setup starts
 * for this project (`vitest.config.ts`); dropped when the scope closes.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { inject } from "@effect/vitest"
import { Effect, Random, Redacted } from "effect"

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

const admin = () => PgClient.layer({ url: Redacted.make(inject("postgresUrl")) })

/** The URL of a new database, dropped (with its connections) when the scope closes. */
export const database = Effect.acquireRelease(
  Effect.gen(function*() {
    const name = `cluster_${(yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)}`
    yield* Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`CREATE DATABASE ${name}`)).pipe(
      Effect.provide(admin())
    )
    return { name, url: inject("postgresUrl").replace(/\/postgres$/, `/${name}`) }
  }).pipe(Effect.orDie),
  ({ name }) =>
    Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)).pipe(
      Effect.provide(admin()),
      Effect.orDie
    )
).pipe(Effect.map(({ url }) => url))
