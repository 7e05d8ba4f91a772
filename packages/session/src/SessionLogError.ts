/**
 * The session log's error: every refused append, seed or load. It lives in its own module so the log's
 * implementation (`internal/sessionLog.ts`) constructs it without importing the public `SessionLog` module for a
 * value; `SessionLog` re-exports it.
 *
 * @since 0.0.0
 */
import { Ids } from "@harness/domain"
import { Schema } from "effect"
import { Rule } from "./LogCheck.js"

/**
 * A refused append, seed or load. `reason` names the rule that refused it: an enclosure rule of R100 (see
 * `LogCheck.Rule`), `invalid-event` (the event does not match its schema or is not JSON-lossless), `store` (the
 * driver failed, or the log stopped writing after a failure retrying cannot cure), `invalid-seed` (a seed that is
 * not a balanced, gap-free log) or `corrupt` (a stored session damaged before its last committed `turn/end`, or a
 * stored record that breaks an enclosure rule: `session` and `position` name the session and the stored record,
 * `message` says what is wrong) or `fork-boundary` (a fork
 * asked for at something other than a `turn/end`, R112's `OPEN_TURN`).
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionLogError extends Schema.TaggedError<SessionLogError>("@harness/session/SessionLogError")(
  "SessionLogError",
  {
    reason: Schema.Union(Rule, Schema.Literal("invalid-event", "store", "invalid-seed", "corrupt", "fork-boundary")),
    message: Schema.String,
    seq: Schema.optionalWith(Schema.Number, { exact: true }),
    session: Schema.optionalWith(Ids.SessionId, { exact: true }),
    position: Schema.optionalWith(Schema.Number, { exact: true })
  }
) {}
