/**
 * A `SessionStore` on JSON Lines files: one human-greppable file per session in one directory, appended to and
 * never rewritten. The first line is the header (`{"type":"session","order":n,…}`), then one record per line, each
 * the record's JSON text exactly. A commit of several records is preceded by a marker line `{"commit":k}`, so that a
 * commit torn by a crash is recognised and never read as committed; a single-record commit is its one line.
 *
 * Summaries and the message-id index are rebuilt lazily (one scan per session per process) and kept up to date by
 * appends. The scan starts from a scan cache written beside the file with each snapshot, when the cache checks out
 * against the file (ADR 0032); the file stays the only truth. `sync: true` fsyncs the file after the write.
 *
 * @since 0.0.0
 */
import type { FileSystem } from "@effect/platform"
import { SessionStore } from "@harness/session"
import type { Duration, Effect, Scope } from "effect"
import { Layer } from "effect"
import * as internal from "./internal/jsonlStore.js"

/**
 * Where the session files live, and the store's limits.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The directory (created at the first `create`). */
  readonly directory: string
  /**
   * The largest record (one line) the store writes or reads, in bytes (default 64 MiB). A longer record is refused
   * on write (`Conflict`, nothing written); a longer line on read is `Corrupt`, found without reading it whole.
   */
  readonly maxRecordBytes?: number | undefined
  /**
   * How long a writer's lock stays valid without renewal (default 30 s); the holder renews it every third of it.
   * A lock older than this is taken over, whichever host holds it.
   */
  readonly leaseTime?: Duration.DurationInput | undefined
}

/**
 * The store over the `FileSystem` of the context.
 *
 * Contract: the `SessionStore` conformance suite. A session's file is `<name>.jsonl`, where `name` is the id with
 * every character but `a-z`, `0-9`, `_` and `-` written as `~xxxx` (hashed when long); its snapshot is
 * `<name>.snapshot.json` (head) and `<name>.snapshot-body`, its scan cache `<name>.scan-cache.json`. `create`
 * writes the file aside, fsyncs it and links it into place (atomic, and exclusive across processes). Writes are
 * serialised within the process; one session has one writer at a time. Bytes after the last complete commit (a
 * commit torn by a crash, which was never acknowledged) are not loaded and are cut before the next write.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options: Options
): Effect.Effect<SessionStore.Service, never, FileSystem.FileSystem | Scope.Scope> => internal.make(options)

/**
 * The store in `options.directory`, over the `FileSystem` of the context.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore.SessionStore, never, FileSystem.FileSystem> =>
  Layer.scoped(SessionStore.SessionStore, make(options))
