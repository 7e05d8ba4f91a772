/**
 * The store property (`@harness/session/test/storeProperty`) and the history snapshot property
 * (`@harness/session/test/historyResume`) on SQLite: a database file in a fresh temporary directory per run; "reopen"
 * (a fresh instance) opens a new store on the same file.
 */
import { historyResumeProperty } from "@harness/session/test/historyResume"
import { storeProperty } from "@harness/session/test/storeProperty"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

/** A fresh temporary directory, deleted when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-prop-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const place = Effect.map(tempDir, (dir) => SqliteStore.layer({ filename: path.join(dir, "sessions.db") }))

storeProperty("sqlite (file, WAL)", place)

historyResumeProperty("sqlite (file, WAL)", place)
