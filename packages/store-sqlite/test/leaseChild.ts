/** The child of the cross-process lease tests on SQLite: serves commands on the database file given as argument. */
import { runChild } from "@harness/store-sql/test/leaseChild"
import { SqliteStore } from "../src/index.js"

runChild(SqliteStore.layer({ filename: process.argv[2]! }))
