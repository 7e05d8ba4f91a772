/**
 * The writer lease across real processes on the test PostgreSQL server (ADR 0044, R107): the shared suite
 * of `@harness/store-sql/test/crossProcess`, each test on a fresh database.
 */
import { crossProcess } from "@harness/store-sql/test/crossProcess"
import { Effect, Redacted } from "effect"
import { fileURLToPath } from "node:url"
import { PostgresStore } from "../src/index.js"
import { freshDatabase, urlOf } from "./database.js"

crossProcess("postgres", {
  child: fileURLToPath(new URL("./leaseChild.ts", import.meta.url)),
  fresh: Effect.map(freshDatabase, (name) => {
    const url = urlOf(name)
    return { args: [url], layer: (leaseTime) => PostgresStore.layer({ url: Redacted.make(url), leaseTime }) }
  })
})
