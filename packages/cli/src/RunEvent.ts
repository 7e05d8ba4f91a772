/**
 * What `harness run --json` prints: one JSON object per line (NDJSON), nothing else on standard output. The first
 * line names the session (`run/session`), diagnostics such as a provider's retry warning are `run/log` lines, and
 * every other line is one of the agent's live events (`AgentEvent`, durable events inside `session/event`).
 *
 * @since 0.0.0
 */
import { AgentEvent, Ids } from "@harness/domain"
import { Schema } from "effect"

/**
 * The first line: the session the run works in and the store it lives in (a PostgreSQL URL with its credentials
 * redacted), so a script can `harness sessions show <session> --store <store>` afterwards (`memory` is gone by then).
 *
 * @since 0.0.0
 * @category schemas
 */
export const RunSession = Schema.Struct({
  type: Schema.Literal("run/session"),
  session: Ids.SessionId,
  store: Schema.String
})

/**
 * A diagnostic the run logged (a provider retrying a failed request, …): its level (`WARN`, `ERROR`, …), message
 * and annotations (`retry`, `delayMs`, `code`, `failure` for a retry).
 *
 * @since 0.0.0
 * @category schemas
 */
export const RunLog = Schema.Struct({
  type: Schema.Literal("run/log"),
  level: Schema.String,
  message: Schema.String,
  annotations: Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean) })
})

/**
 * Any line of `harness run --json`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const RunEvent = Schema.Union(RunSession, RunLog, AgentEvent.AgentEvent)

/**
 * @since 0.0.0
 * @category models
 */
export type RunEvent = typeof RunEvent.Type
