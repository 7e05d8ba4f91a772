/**
 * A storage driver failure, in a module of its own so the store contract and its implementations share it without
 * an import cycle.
 *
 * @since 0.0.0
 */
import { Ids, Store } from "@harness/domain"
import { Schema } from "effect"

/**
 * Why a store operation failed.
 *
 * - `NotFound`: no session with that id.
 * - `AlreadyExists`: `create` of an id that is stored.
 * - `Conflict`: the operation does not fit what is stored (an append whose events are not contiguous with the
 *   stored events, a position that is not a stored record's).
 * - `Io`: the backend failed (disk, connection, database).
 * - `Corrupt`: what the backend read back is not what it writes (a header that does not decode, a file that is not
 *   the store's format).
 * - `Injected`: a test's fault injector refused the operation.
 * - `Busy`: another writer holds the session's writer lease (`holder` names it), or this writer's lease was taken
 *   over (it is fenced: nothing it writes afterwards is stored). Never retried: the session has another writer.
 * - `Closed`: the backend's connection was closed under the store; nothing can be read or written through it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionStoreErrorReason = Schema.Literal(
  "NotFound",
  "AlreadyExists",
  "Conflict",
  "Io",
  "Corrupt",
  "Injected",
  "Busy",
  "Closed"
)
/**
 * @since 0.0.0
 * @category errors
 */
export type SessionStoreErrorReason = typeof SessionStoreErrorReason.Type

/**
 * A driver failure: `reason` says which, `message` says what happened, `id` names the session (absent only for
 * `list`), `holder` names the lease holder of a `Busy` refusal when the store knows it.
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>("@harness/session/SessionStoreError")(
  "SessionStoreError",
  {
    reason: SessionStoreErrorReason,
    message: Schema.String,
    id: Schema.optionalWith(Ids.SessionId, { exact: true }),
    holder: Schema.optionalWith(Store.LeaseHolder, { exact: true })
  }
) {}
