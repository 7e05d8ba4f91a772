/**
 * The session tests' fixtures: the consistency check every log test ends with (the live history equals the
 * whole-log derivation, the live state equals the fold, and `checkLog` finds nothing but an open turn), appending and
 * snapshotting helpers. The log builders themselves (`ev`, `promptTurn`, `goodLogs`, `stamp`, …) are the testkit's
 * `Events` module. They use `node:assert`, not vitest, so benchmarks and scratchpad scripts can import them too.
 *
 * @since 0.0.0
 */
import type { SessionEvent } from "@harness/domain"
import { Effect } from "effect"
import * as assert from "node:assert/strict"
import * as History from "../src/History.js"
import * as LogCheck from "../src/LogCheck.js"
import type * as SessionLog from "../src/SessionLog.js"

/** Appends every input in order. */
export const appendAll = (
  log: SessionLog.Service,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>
): Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLog.SessionLogError> =>
  Effect.forEach(inputs, (input) => log.append(input))

/** What a log looks like from outside: compared before and after a refused append. */
export const snapshot = (log: SessionLog.Service) =>
  Effect.all({ events: log.events, state: log.state, history: Effect.map(log.history, History.messages) })

/**
 * The invariants every log a test builds must keep: the live history equals the whole-log derivation, the live
 * state equals the fold of `LogCheck.step` over the events, and `checkLog` finds nothing but (for a log stopped
 * mid-turn) the open turn.
 */
export const assertConsistent = (log: SessionLog.Service): Effect.Effect<void> =>
  Effect.gen(function*() {
    const events = yield* log.events
    const state = yield* log.state
    const history = yield* log.history
    assert.deepStrictEqual(
      History.messages(history),
      History.deriveMessages(events),
      "incremental ≠ whole-log derivation"
    )
    assert.deepStrictEqual(foldState(events), state, "live state ≠ fold of the events")
    assert.deepStrictEqual(
      LogCheck.checkLog(events).filter((v) => v.rule !== "unclosed-turn"),
      [],
      "checkLog found violations"
    )
  })

/** The state after a whole log, by `LogCheck.step`; throws on a violation (use it on good logs). */
export const foldState = (events: ReadonlyArray<SessionEvent.SessionEvent>): LogCheck.LogState =>
  events.reduce((state, event) => {
    const next = LogCheck.step(state, event)
    if ("violation" in next) throw new Error(`seq ${event.seq}: ${next.violation.rule}: ${next.violation.message}`)
    return next.state
  }, LogCheck.initial)
