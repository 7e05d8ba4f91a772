/**
 * The schema of a child's outcome, apart from the service so that both the public module and the service use it.
 */
import { Ids } from "@harness/domain"
import { Schema } from "effect"

export const Outcome = Schema.Struct({
  session: Ids.SessionId,
  agent: Schema.String,
  status: Schema.Literal("completed", "cancelled", "failed", "interrupted", "started"),
  answer: Schema.String,
  reason: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "SubagentOutcome" })
