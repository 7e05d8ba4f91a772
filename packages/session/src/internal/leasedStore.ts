/**
 * The store as a log writes it: every write carries the log's writer lease (ADR 0044), a log opened read-only
 * writes nothing, and a store that declares an inline append (the memory store, ADR 0037) is committed to by a plain
 * function call.
 */
import type { Ids } from "@harness/domain"
import { Effect } from "effect"
import type { AppendOptions, Commit, Lease, Service as Store, Snapshot } from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"
import { storeError } from "./logRecords.js"

/**
 * The store as a log writes it: every write carries the log's lease (the store's fence refuses it once the lease
 * was taken over, ADR 0044), and a log opened read-only writes nothing at all. Its operations are methods of one
 * prototype, each handing on to the store (a copy of the store with closures of its own was ≈ 0.5 KB of every idle
 * agent, ADR 0076); only the log holds it, and never spreads it.
 */
class LeasedStore implements Store {
  readonly #store: Store
  readonly #lease: Lease | "read-only"
  constructor(store: Store, lease: Lease | "read-only") {
    this.#store = store
    this.#lease = lease
  }
  get commitMode() {
    return this.#store.commitMode
  }
  get volatile() {
    return this.#store.volatile
  }
  get inlineAppend() {
    return this.#store.inlineAppend
  }
  get list() {
    return this.#store.list
  }
  get damaged() {
    return this.#store.damaged
  }
  #refuse(id: Ids.SessionId) {
    return Effect.fail(
      new SessionStoreError({ reason: "Conflict", message: `session ${JSON.stringify(id)} was opened read-only`, id })
    )
  }
  create(...args: Parameters<Store["create"]>) {
    return this.#store.create(...args)
  }
  append(id: Ids.SessionId, commit: Commit, options?: AppendOptions) {
    const lease = this.#lease
    return lease === "read-only" ? this.#refuse(id) : this.#store.append(id, commit, { ...options, lease })
  }
  load(...args: Parameters<Store["load"]>) {
    return this.#store.load(...args)
  }
  header(id: Ids.SessionId) {
    return this.#store.header(id)
  }
  truncate(id: Ids.SessionId, position: number) {
    const lease = this.#lease
    return lease === "read-only" ? this.#refuse(id) : this.#store.truncate(id, position, { lease })
  }
  remove(...args: Parameters<Store["remove"]>) {
    return this.#lease === "read-only" ? this.#refuse(args[0]) : this.#store.remove(...args)
  }
  lease(id: Ids.SessionId) {
    return this.#store.lease(id)
  }
  hasMessage(id: Ids.SessionId, messageId: Ids.AgentMessageId) {
    return this.#store.hasMessage(id, messageId)
  }
  saveSnapshot(id: Ids.SessionId, snapshot: Snapshot) {
    const lease = this.#lease
    return lease === "read-only" ? this.#refuse(id) : this.#store.saveSnapshot(id, snapshot, { lease })
  }
  loadSnapshot(id: Ids.SessionId) {
    return this.#store.loadSnapshot(id)
  }
}

/**
 * The store as a log writes it: every write carries the log's lease (the store's fence refuses it once the lease
 * was taken over, ADR 0044), and a log opened read-only writes nothing at all.
 */
export const writerStore = (store: Store, lease: Lease | "read-only"): Store => new LeasedStore(store, lease)

/** Takes the session's writer lease: `busy` (naming the holder) when another process writes it (ADR 0044). */
export const leaseOf = (store: Store, id: Ids.SessionId) =>
  store.lease(id).pipe(Effect.mapError(storeError(`cannot write session ${JSON.stringify(id)}`)))

/** A commit made by a plain function call: the store's refusal, or `undefined` once committed. */
export type CommitNow = (id: Ids.SessionId, commit: Commit) => SessionStoreError | undefined

/**
 * The store's declared inline append under the log's lease, when the store has one and its `append` is still the
 * one it twins (a wrapper that replaced `append` is always called through it); `undefined` otherwise, and for a log
 * opened read-only.
 */
export const commitNowOf = (store: Store, lease: Lease | "read-only"): CommitNow | undefined => {
  const inline = store.inlineAppend
  if (lease === "read-only" || inline === undefined || inline.twin !== store.append) return undefined
  // One options object for the log's lifetime: the lease never changes.
  const options = { lease }
  return (id, commit) => inline.run(id, commit, options)
}
