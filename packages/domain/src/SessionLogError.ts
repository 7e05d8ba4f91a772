/**
 * The session log's error and the names of the rules a log can break. They are defined here, in the vocabulary,
 * because the agent's operations carry them (an idle injection's refused append, a batch that stopped part-way):
 * `@harness/session` re-exports both (`SessionLogError`, `LogCheck.Rule`) and is where they are raised.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { SessionId } from "./Ids.js"
import { LeaseHolder } from "./Store.js"

/**
 * The name of each rule a log can break.
 *
 * - `seq-gap`: `seq` is not the previous one plus 1 (the first is 0). A `SessionLog` numbers events itself, so only
 *   seeds, stored logs and hand-made logs can break it.
 * - `outside-turn`: an event other than `user/message` outside a turn.
 * - `turn-number`: a `turn/start` whose number is not the previous turn's plus 1.
 * - `nested-turn`: a `turn/start` while a turn is open.
 * - `turn-end-mismatch`: a `turn/end` that does not name the open turn (or with no turn open).
 * - `turn-end-step-open`: a `turn/end` while a step is open.
 * - `step-number`: a `step/start` whose number is not the previous step's plus 1 in this turn (from 1).
 * - `nested-step`: a `step/start` while a step is open.
 * - `step-end-mismatch`: a `step/end` that does not name the open step.
 * - `wrong-turn`: an event naming a turn that is not the open one (e.g. an event of a closed turn); with no turn
 *   open it is `outside-turn`.
 * - `outside-step`: an assistant chunk or message, tool call or fresh tool result outside the step it names.
 * - `unknown-tool-call`: a `tool/result` with no prior `tool/call` of that id in the same step (crash repair's
 *   `TOOL_NOT_STARTED` result excepted).
 * - `duplicate-tool-call`: a second `tool/call` with the same id in one step.
 * - `duplicate-tool-result`: a second `tool/result` for the same call.
 * - `unanswered-tool-call` (checkLog only): at `step/end`, a `tool/call`, or a tool call of the step's assistant
 *   message, without a `tool/result`.
 * - `unclosed-turn` (checkLog only): the log ends inside a turn.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Rule = Schema.Literal(
  "seq-gap",
  "outside-turn",
  "turn-number",
  "nested-turn",
  "turn-end-mismatch",
  "turn-end-step-open",
  "step-number",
  "nested-step",
  "step-end-mismatch",
  "wrong-turn",
  "outside-step",
  "unknown-tool-call",
  "duplicate-tool-call",
  "duplicate-tool-result",
  "unanswered-tool-call",
  "unclosed-turn"
)
/**
 * @since 0.0.0
 * @category models
 */
export type Rule = typeof Rule.Type

/**
 * A refused append, seed or load. `reason` names the rule that refused it: an enclosure rule of R100 (see
 * {@link Rule}), `invalid-event` (the event does not match its schema or is not JSON-lossless), `store` (the
 * driver failed, or the log stopped writing after a failure retrying cannot cure), `invalid-seed` (a seed that is
 * not a balanced, gap-free log) or `corrupt` (a stored session damaged before its last committed `turn/end`, or a
 * stored record that breaks an enclosure rule: `session` and `position` name the session and the stored record,
 * `message` says what is wrong) or `fork-boundary` (a fork
 * asked for at something other than a `turn/end`, R112's `OPEN_TURN`) or `busy` (another writer holds the session:
 * `holder` names it when the store knows it; or this log's lease was taken over and it writes nothing more).
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionLogError extends Schema.TaggedError<SessionLogError>("@harness/session/SessionLogError")(
  "SessionLogError",
  {
    reason: Schema.Union(
      Rule,
      Schema.Literal("invalid-event", "store", "invalid-seed", "corrupt", "fork-boundary", "busy")
    ),
    message: Schema.String,
    seq: Schema.optionalWith(Schema.Number, { exact: true }),
    session: Schema.optionalWith(SessionId, { exact: true }),
    position: Schema.optionalWith(Schema.Number, { exact: true }),
    holder: Schema.optionalWith(LeaseHolder, { exact: true })
  }
) {}
