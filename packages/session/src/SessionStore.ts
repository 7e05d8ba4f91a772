/**
 * The storage driver behind every session log. A driver stores encoded rows — one per event, the envelope as
 * JSON text plus `seq`, `type` and `time` columns — never domain classes, so JSONL lines, SQLite rows and
 * PostgreSQL rows all fit the same contract. This module is the contract, the memory backend, and a fault
 * injector for tests that must prove a refused append leaves everything consistent.
 *
 * Every backend runs the exported conformance suite (`@harness/session/test/conformance`).
 *
 * @since 0.0.0
 */
import type { Ids } from "@harness/domain"
import { Context, Effect, Layer } from "effect"
import * as internal from "./internal/memoryStore.js"
import type { SessionStoreError } from "./SessionStoreError.js"

/**
 * One stored event. `json` is the JSON text of the encoded envelope (it includes `seq`, `type` and `time`, which
 * are repeated as columns for backends that index them).
 *
 * @since 0.0.0
 */
export interface StoredEvent {
  readonly seq: number
  readonly type: string
  readonly time: number
  readonly json: string
}

/**
 * A driver failure (defined in its own module so backends can construct it without importing this one).
 *
 * @since 0.0.0
 */
export { SessionStoreError } from "./SessionStoreError.js"

/**
 * The driver contract.
 *
 * @since 0.0.0
 */
export interface Service {
  /**
   * Registers a new, empty session.
   *
   * Contract: fails with `AlreadyExists` if the id is already stored.
   */
  readonly create: (id: Ids.SessionId) => Effect.Effect<void, SessionStoreError>
  /**
   * Appends rows to a session, all or nothing.
   *
   * Contract: rows are contiguous with what is stored (the first row's `seq` equals the stored count, each next
   * row's is one more), else `Conflict` and nothing is stored; an unknown id is `NotFound`. When the effect
   * succeeds the rows are durable as far as the backend can make them.
   */
  readonly append: (id: Ids.SessionId, rows: ReadonlyArray<StoredEvent>) => Effect.Effect<void, SessionStoreError>
  /**
   * Every stored row of a session, in `seq` order. An unknown id is `NotFound`.
   */
  readonly load: (id: Ids.SessionId) => Effect.Effect<ReadonlyArray<StoredEvent>, SessionStoreError>
  /**
   * The stored session ids, in creation order.
   */
  readonly list: Effect.Effect<ReadonlyArray<Ids.SessionId>, SessionStoreError>
}

/**
 * The driver tag.
 *
 * @since 0.0.0
 */
export class SessionStore extends Context.Tag("@harness/session/SessionStore")<SessionStore, Service>() {}

/**
 * Makes a chosen append fail, for tests.
 *
 * @since 0.0.0
 */
export interface Faults {
  /**
   * From now on, every append whose rows contain a row matching `predicate` fails with `Injected` and stores
   * nothing. Replaces any earlier predicate.
   */
  readonly failWhen: (predicate: (row: StoredEvent) => boolean) => Effect.Effect<void>
  /** Stops injecting failures. */
  readonly clear: Effect.Effect<void>
}

/**
 * The fault-injector tag, provided by {@link layerMemoryWithFaults} and {@link withFaults}.
 *
 * @since 0.0.0
 */
export class StoreFaults extends Context.Tag("@harness/session/StoreFaults")<StoreFaults, Faults>() {}

/**
 * A memory backend: one fresh, empty store. Contract: every operation is atomic; an append costs O(log n) in the
 * session's size and copies no stored row; `load` returns the rows in `seq` order.
 *
 * @since 0.0.0
 */
export const makeMemory: Effect.Effect<Service> = internal.makeMemory

/**
 * The memory backend as a layer (a fresh store each time the layer is built).
 *
 * @since 0.0.0
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.effect(SessionStore, makeMemory)

/**
 * Wraps any driver so tests can make chosen appends fail. Contract: a failing append fails with `Injected` before
 * the wrapped driver is called, so nothing is stored; every other operation is the wrapped driver's.
 *
 * @since 0.0.0
 */
export const withFaults: (store: Service) => Effect.Effect<readonly [Service, Faults]> = internal.withFaults

/**
 * The memory backend with a fault injector.
 *
 * @since 0.0.0
 */
export const layerMemoryWithFaults: Layer.Layer<SessionStore | StoreFaults> = Layer.effectContext(
  Effect.gen(function*() {
    const [store, faults] = yield* withFaults(yield* makeMemory)
    return Context.make(SessionStore, store).pipe(Context.add(StoreFaults, faults))
  })
)
