/**
 * The file stores a crash test runs on, as the parent opens them after a kill: plain `SessionStore` layers, with
 * nothing of the child's instrumentation.
 *
 * @since 0.0.0
 */
import { NodeFileSystem } from "@effect/platform-node"
import type { SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import { SqliteStore } from "@harness/store-sqlite"
import { Layer } from "effect"
import type { Backend } from "./Protocol.js"

/**
 * The store of `backend` at `location` (the SQLite database file, or the JSONL directory).
 *
 * Contract: a fresh layer each call (the SQLite client is opened when it is built and closed with its scope).
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (
  backend: Backend,
  location: string
): Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError> =>
  backend === "sqlite"
    ? SqliteStore.layer({ filename: location })
    : JsonlStore.layer({ directory: location }).pipe(Layer.provide(NodeFileSystem.layer))

/**
 * Where a store lives inside a run's directory.
 *
 * @since 0.0.0
 * @category constructors
 */
export const locationIn = (backend: Backend, directory: string): string =>
  backend === "sqlite" ? `${directory}/sessions.db` : `${directory}/sessions`
