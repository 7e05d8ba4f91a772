/**
 * The session log's error: every refused append, seed or load. It is part of the durable vocabulary (the agent's
 * operations carry it), so it is defined in `@harness/domain` and re-exported here, where it is raised.
 *
 * @since 0.0.0
 */
import { SessionLogError as Schemas } from "@harness/domain"

/**
 * A refused append, seed or load; `reason` names the rule that refused it (see `@harness/domain`'s
 * `SessionLogError` module).
 *
 * @since 0.0.0
 * @category errors
 */
export const SessionLogError = Schemas.SessionLogError
/**
 * @since 0.0.0
 * @category errors
 */
export type SessionLogError = Schemas.SessionLogError
