/** The child of the cross-process lease tests on PostgreSQL: serves commands on the database URL given as argument. */
import { runChild } from "@harness/store-sql/test/leaseChild"
import { Redacted } from "effect"
import { PostgresStore } from "../src/index.js"

runChild(PostgresStore.layer({ url: Redacted.make(process.argv[2]!) }))
