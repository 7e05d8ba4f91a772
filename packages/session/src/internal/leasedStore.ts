/**
 * The store as a log writes it: every write carries the log's writer lease (ADR 0044), a log opened read-only
 * writes nothing, and a store that declares an inline append (the memory store, ADR 0037) is committed to by a plain
 * function call.
 */
import type { Ids } from "@harness/domain"
import { Effect } from "effect"
import type { Commit, Lease, Service as Store } from "../SessionStore.js"
import { SessionStoreError } from "../SessionStoreError.js"
import { storeError } from "./logRecords.js"

/**
 * The store as a log writes it: every write carries the log's lease (the store's fence refuses it once the lease
 * was taken over, ADR 0044), and a log opened read-only writes nothing at all.
 */
export const writerStore = (store: Store, lease: Lease | "read-only"): Store => {
  if (lease === "read-only") {
    const refuse = (id: Ids.SessionId) =>
      Effect.fail(
        new SessionStoreError({
          reason: "Conflict",
          message: `session ${JSON.stringify(id)} was opened read-only`,
          id
        })
      )
    return {
      ...store,
      append: (id) => refuse(id),
      truncate: (id) => refuse(id),
      saveSnapshot: (id) => refuse(id),
      remove: (id) => refuse(id)
    }
  }
  return {
    ...store,
    append: (id, commit, options) => store.append(id, commit, { ...options, lease }),
    truncate: (id, position) => store.truncate(id, position, { lease }),
    saveSnapshot: (id, snapshot) => store.saveSnapshot(id, snapshot, { lease })
  }
}

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
