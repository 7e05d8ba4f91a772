/**
 * The store property (`@harness/session/test/storeProperty`) and the history snapshot property
 * (`@harness/session/test/historyResume`) on JSONL: a fresh temporary directory per run; "reopen" (a fresh instance)
 * opens a new store on the same directory (nothing cached from the earlier one).
 */
import { NodeFileSystem } from "@effect/platform-node"
import { historyResumeProperty } from "@harness/session/test/historyResume"
import { storeProperty } from "@harness/session/test/storeProperty"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { JsonlStore } from "../src/index.js"

/** A fresh temporary directory, deleted when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-jsonl-prop-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const place = Effect.map(
  tempDir,
  (dir) => JsonlStore.layer({ directory: path.join(dir, "sessions") }).pipe(Layer.provide(NodeFileSystem.layer))
)

storeProperty("jsonl", place)

historyResumeProperty("jsonl", place)
