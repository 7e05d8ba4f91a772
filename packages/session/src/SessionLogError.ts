/**
 * The session log's error: every refused append, seed or load. It lives in its own module so the log's
 * implementation (`internal/sessionLog.ts`) constructs it without importing the public `SessionLog` module for a
 * value; `SessionLog` re-exports it.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { Rule } from "./LogCheck.js"

/**
 * A refused append, seed or load. `reason` names the rule that refused it: an enclosure rule of R100 (see
 * `LogCheck.Rule`), `invalid-event` (the event does not match its schema or is not JSON-lossless), `store` (the
 * driver failed) or `invalid-seed` (a seed or a stored log that is not a balanced, gap-free log).
 *
 * @since 0.0.0
 */
export class SessionLogError extends Schema.TaggedError<SessionLogError>("@harness/session/SessionLogError")(
  "SessionLogError",
  {
    reason: Schema.Union(Rule, Schema.Literal("invalid-event", "store", "invalid-seed")),
    message: Schema.String,
    seq: Schema.optionalWith(Schema.Number, { exact: true })
  }
) {}
