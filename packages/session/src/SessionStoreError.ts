/**
 * The storage driver's error. It lives in its own module so backends (`internal/memoryStore.ts`, and later
 * drivers) construct it without importing the public `SessionStore` module for a value; `SessionStore` re-exports
 * it.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * A driver failure. `reason` says which contract rule or backend fault it was.
 *
 * @since 0.0.0
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>("@harness/session/SessionStoreError")(
  "SessionStoreError",
  {
    reason: Schema.Literal("NotFound", "AlreadyExists", "Conflict", "Io", "Corrupt", "Injected"),
    message: Schema.String
  }
) {}
