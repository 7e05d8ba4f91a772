/**
 * A storage driver failure, in a module of its own so the store contract and its implementations share it without
 * an import cycle.
 *
 * @since 0.0.0
 */
import { Ids } from "@harness/domain"
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
  "Injected"
)
/**
 * @since 0.0.0
 * @category errors
 */
export type SessionStoreErrorReason = typeof SessionStoreErrorReason.Type

/**
 * A driver failure: `reason` says which, `message` says what happened, `id` names the session (absent only for
 * `list`).
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>("@harness/session/SessionStoreError")(
  "SessionStoreError",
  {
    reason: SessionStoreErrorReason,
    message: Schema.String,
    id: Schema.optionalWith(Ids.SessionId, { exact: true })
  }
) {}
