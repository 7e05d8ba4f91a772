/**
 * The writer lease across real processes on a SQLite file (ADR 0044, R107): the shared suite of
 * `@harness/store-sql/test/crossProcess`.
 */
import { crossProcess } from "@harness/store-sql/test/crossProcess"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteStore } from "../src/index.js"

crossProcess("sqlite", {
  child: fileURLToPath(new URL("./leaseChild.ts", import.meta.url)),
  fresh: Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-sqlite-lease-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => {
      const filename = path.join(dir, "sessions.db")
      return { args: [filename], layer: (leaseTime) => SqliteStore.layer({ filename, leaseTime }) }
    }
  )
})
