/**
 * The store property (`@harness/session/test/storeProperty`) on PostgreSQL: a fresh database of the test server
 * per run; "reopen" opens a new store (a new connection pool) on the same database.
 */
import { storeProperty } from "@harness/session/test/storeProperty"
import { Effect, Redacted } from "effect"
import { PostgresStore } from "../src/index.js"
import { freshDatabase, urlOf } from "./database.js"

storeProperty(
  "postgres",
  Effect.map(freshDatabase, (name) => PostgresStore.layer({ url: Redacted.make(urlOf(name)) })),
  { numRuns: 10 }
)
