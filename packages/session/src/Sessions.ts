/**
 * The stored sessions of a `SessionStore`, as a person or a CLI sees them: list them with a header, fork one at a
 * `turn/end` boundary (R112), delete one. Opening and continuing a session is `SessionLog.open`.
 *
 * @since 0.0.0
 */
import type { Ids, Store } from "@harness/domain"
import type { Effect } from "effect"
import * as internal from "./internal/sessions.js"
import type { SessionLogError } from "./SessionLogError.js"
import type { SessionStore } from "./SessionStore.js"

/**
 * One stored session, as `list` shows it. `title` is the header's title, else the preview of the first human
 * prompt; `parent` is where a fork came from; `turns`, `events`, `lastActivity` (epoch ms of the last stored
 * record) and `bytes` (the stored size as the backend counts it) are kept current by the store at each commit.
 *
 * @since 0.0.0
 * @category models
 */
export interface SessionInfo {
  readonly id: Ids.SessionId
  readonly createdAt: number
  readonly title?: string
  readonly parent?: Store.SessionParent
  readonly turns: number
  readonly events: number
  readonly lastActivity: number
  readonly bytes: number
}

/**
 * Options of {@link fork}.
 *
 * - `at`: the `seq` of the `turn/end` to fork at (default: the last `turn/end` of the source).
 * - `id`: the child's id (default: a random UUID).
 * - `title`: the child's title.
 *
 * @since 0.0.0
 * @category models
 */
export interface ForkOptions {
  readonly at?: number | undefined
  readonly id?: Ids.SessionId | undefined
  readonly title?: string | undefined
}

/**
 * Every stored session, in creation order.
 *
 * Contract: answered from the store's summaries (no session is read whole). A session the store cannot read is
 * left out ({@link damaged} names it), never failing the list. A driver failure is `store`.
 *
 * @since 0.0.0
 * @category sessions
 */
export const list: Effect.Effect<ReadonlyArray<SessionInfo>, SessionLogError, SessionStore> = internal.list

/**
 * The stored sessions {@link list} leaves out because the store cannot read them, each with its id and what is
 * wrong: {@link remove} deletes one by that id.
 *
 * @since 0.0.0
 * @category sessions
 */
export const damaged: Effect.Effect<ReadonlyArray<Store.DamagedSession>, SessionLogError, SessionStore> =
  internal.damaged

/**
 * Forks a session (R112): creates a new session seeded with the source's events up to and including a `turn/end`,
 * and returns its id. Its header names the parent (`{ id, seq }` of that `turn/end`); its turns continue the
 * source's numbering.
 *
 * Contract: the source is read only up to the boundary (streamed), never changed and never leased, so a fork beside
 * the source's live writer disturbs nothing; its inbox records are not copied. The child is created and its lease
 * given up before `fork` returns. A boundary that is not a `turn/end` (or a source without one) is `fork-boundary`
 * (the original design's `OPEN_TURN`), and nothing is created; an existing child id is `store`.
 *
 * @since 0.0.0
 * @category sessions
 */
export const fork: (
  source: Ids.SessionId,
  options?: ForkOptions
) => Effect.Effect<Ids.SessionId, SessionLogError, SessionStore> = internal.fork

/**
 * Deletes a stored session: its header, records and snapshot. Contract: afterwards its id is free; an unknown id is
 * `store` (`NotFound`).
 *
 * @since 0.0.0
 * @category sessions
 */
export const remove: (id: Ids.SessionId) => Effect.Effect<void, SessionLogError, SessionStore> = internal.remove
