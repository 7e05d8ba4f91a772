/**
 * The append-only session log: the single source of truth for everything a model ever sees. Each append is
 * checked against the enclosure rules (R100) and JSON-losslessness, numbered (`seq` gap-free from 0), stamped
 * (`time` from `Clock`), written through to the `SessionStore`, folded into the derived history, and then
 * published to observers — or refused with a `SessionLogError` that leaves everything unchanged.
 *
 * @since 0.0.0
 */
import type { Ids, SessionEvent } from "@harness/domain"
import type { Queue, Scope, Stream } from "effect"
import { Context, Effect, Layer } from "effect"
import type { History } from "./History.js"
import * as internal from "./internal/sessionLog.js"
import type { LogState } from "./LogCheck.js"
import type { SessionLogError } from "./SessionLogError.js"
import * as SessionStore from "./SessionStore.js"

/**
 * A refused append, seed or load (defined in its own module so the implementation can construct it without
 * importing this one).
 *
 * @since 0.0.0
 */
export { SessionLogError } from "./SessionLogError.js"

/**
 * One session's log.
 *
 * @since 0.0.0
 */
export interface Service {
  readonly id: Ids.SessionId
  /**
   * Appends one event and returns the stored envelope.
   *
   * Contract: appends are serialised (one at a time, under a one-permit lock).
   * `seq` is the previous one plus 1, `time` is `Clock.currentTimeMillis`. Before anything is stored the event is
   * validated and copied (so later mutation of `input` changes nothing; a schema or JSON-losslessness failure is
   * `invalid-event`), checked against the enclosure rules (`reason` = the `LogCheck.Rule` it breaks) and encoded
   * once as a JSON row. The row is written through to the store (a driver failure is `store`); only when that
   * succeeds do the events, the state and the history change and observers see the event. From the store write
   * on, the append is uninterruptible, so memory never disagrees with the store. Any refusal fails with
   * `SessionLogError` (with the refused `seq`, except for `store`) and changes nothing, and the next append gets
   * the same `seq`. Cost per append does not grow with the log.
   */
  readonly append: <E extends SessionEvent.SessionEventInput>(
    input: E
  ) => Effect.Effect<Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>, SessionLogError>
  /** Every event, seeded ones included, in `seq` order. Do not mutate the array. */
  readonly events: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>>
  /**
   * The enclosure state after the last event: open turn and step, last turn number, last request header, and the
   * tool calls of the open step still owed a result (`owed`).
   */
  readonly state: Effect.Effect<LogState>
  /** The derived model history after the last event, kept current per append (never rebuilt from the log). */
  readonly history: Effect.Effect<History>
  /**
   * Subscribes to appended events. Contract: subscribed when it returns (so "subscribe, then append" misses
   * nothing); unbounded (a slow observer never blocks an append, which runs under the agent's lock); events
   * arrive in `seq` order, each only after its row is stored; refused appends are never seen. The subscription
   * ends with the scope.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<SessionEvent.SessionEvent>, never, Scope.Scope>
  /** The appended events as a stream; subscribes when run. */
  readonly changes: Stream.Stream<SessionEvent.SessionEvent>
}

/**
 * The tag of the current session's log.
 *
 * @since 0.0.0
 */
export class SessionLog extends Context.Tag("@harness/session/SessionLog")<SessionLog, Service>() {}

/**
 * Options of {@link make}.
 *
 * @since 0.0.0
 */
export interface MakeOptions {
  /** The session id; a random UUID when absent. */
  readonly id?: Ids.SessionId | undefined
  /**
   * An existing log to continue (fork, resume). Contract: it must be gap-free from seq 0, pass `checkLog` and be
   * balanced (no open turn), else `invalid-seed`. It is written to the store as the new session's first rows.
   */
  readonly seed?: ReadonlyArray<SessionEvent.SessionEvent> | undefined
}

/**
 * Creates a new session in the store (optionally seeded): validates the seed (`invalid-seed`, before anything is
 * stored), creates the session (`store` if the id already exists) and writes the seed rows in one append.
 *
 * @since 0.0.0
 */
export const make: (options?: MakeOptions) => Effect.Effect<Service, SessionLogError, SessionStore.SessionStore> =
  internal.make

/**
 * Opens a stored session: loads, decodes and checks its rows (a log that is corrupt or ends inside a turn is
 * `invalid-seed` until crash repair exists) and continues it.
 *
 * @since 0.0.0
 */
export const open: (id: Ids.SessionId) => Effect.Effect<Service, SessionLogError, SessionStore.SessionStore> =
  internal.open

/**
 * A new session over its own fresh memory store: the default of every agent.
 *
 * @since 0.0.0
 */
export const memory = (options?: MakeOptions): Effect.Effect<Service, SessionLogError> =>
  Effect.provideServiceEffect(make(options), SessionStore.SessionStore, SessionStore.makeMemory)

/**
 * A layer providing a new memory session.
 *
 * @since 0.0.0
 */
export const layerMemory = (options?: MakeOptions): Layer.Layer<SessionLog, SessionLogError> =>
  Layer.effect(SessionLog, memory(options))
