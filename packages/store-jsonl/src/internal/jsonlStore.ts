/**
 * The JSONL backend. One file per session (`<name>.jsonl`, see `framing.ts`) plus, when the session has one, its
 * snapshot: the head in `<name>.snapshot.json`, the body in `<name>.snapshot-body` (ADR 0027), and while a writer
 * holds it, its lock `<name>.lock` (the writer lease, see `lease.ts`, ADR 0044). The file is the only truth: the
 * summary figures, the message-id index and a sparse index of commit offsets are rebuilt lazily, once per process
 * and session, by one scan of the file, then kept up to date by this process's appends; a file whose size or mtime
 * differs from what this process last saw (another process wrote it) is scanned again. A scan starts from the scan
 * cache `<name>.scan-cache.json` (written with each snapshot, see `scanCache.ts`, ADR 0032) when it checks out
 * against the file, and reads only the bytes after it.
 *
 * Every write happens under the session's writer lease: the caller's (checked by the fence), or, for a write made
 * without one, a lease taken for that write alone (refused with `Busy` while another writer holds the session). So
 * bytes past the committed end (a torn commit) are cut only by the lease holder, never under a live writer.
 *
 * The parts: `context.ts` (files, failures, the write guard), `sessionState.ts` (scans and reads), `writes.ts`
 * (create, append, truncate), `snapshots.ts`, `listing.ts` (list, damaged, lease, remove).
 */
import type { SessionStore } from "@harness/session"
import { Effect } from "effect"
import * as Context from "./context.js"
import * as Listing from "./listing.js"
import * as SessionState from "./sessionState.js"
import * as Snapshots from "./snapshots.js"
import * as Writes from "./writes.js"

export { fileName } from "./context.js"

export const make = (options: Context.Options) =>
  Effect.gen(function*() {
    const ctx = yield* Context.make(options)
    const sessions = yield* SessionState.make(ctx)
    const snapshots = Snapshots.make(ctx, sessions)
    const listing = yield* Listing.make(ctx, sessions, snapshots)
    const writes = Writes.make(ctx, sessions, snapshots, listing.takeOrder)
    const service: SessionStore.Service = {
      commitMode: "write-behind",
      create: writes.create,
      append: writes.append,
      load: sessions.load,
      header: sessions.header,
      truncate: writes.truncate,
      list: listing.list,
      damaged: listing.damaged,
      lease: listing.lease,
      remove: listing.remove,
      hasMessage: sessions.hasMessage,
      saveSnapshot: snapshots.saveSnapshot,
      loadSnapshot: snapshots.loadSnapshot
    }
    return service
  })
