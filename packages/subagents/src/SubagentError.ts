/**
 * The one error of the subagents package: a child asked for by an id this process does not run.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * A child session id `Subagents.get` cannot answer with a handle: `unknown` (no child with this id was spawned in
 * this process) or `finished` (the child ran here, and its run is over: its session is closed).
 *
 * @since 0.0.0
 * @category errors
 */
export class SubagentError extends Schema.TaggedError<SubagentError>()("SubagentError", {
  reason: Schema.Literal("unknown", "finished"),
  id: Schema.String
}) {
  override get message(): string {
    return this.reason === "unknown"
      ? `no subagent ${JSON.stringify(this.id)} was spawned here (Subagents.list names the children)`
      : `subagent ${JSON.stringify(this.id)} has finished: its session is closed`
  }
}
