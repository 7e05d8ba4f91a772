/**
 * How an agent stops when its scope closes, as a context reference: at once (the default), or gracefully, letting
 * the running activity end on its own first (R224). It lives in its own module so the agent's internals read it
 * without importing the public `Agent` module for a value; `Agent` re-exports it.
 *
 * @since 0.0.0
 */
import type { Duration } from "effect"
import { Context, Effect } from "effect"

const atOnce: Effect.Effect<Duration.DurationInput> = Effect.succeed(0)

/**
 * The grace an agent's running activity gets when the agent's scope closes (R224). `Agent.make` reads it from the
 * context it runs in and runs the effect when the scope closes, so the host that owns the scope decides per close
 * (a shard handed to another runner waits; a deleted session does not). The default is no grace.
 *
 * Contract: with a grace `D` above zero, closing the scope first stops the agent taking work: from that instant the
 * driver claims nothing (queued items stay pending, in the inbox's durable records on a durable log, so the next
 * agent over the session runs them in acceptance order) and the agent is disposed to its callers (a send fails with
 * `AgentDisposedError`; a cancel does nothing; inbox changes fail). The running admission or turn goes on by itself:
 * a turn that ends within `D` closes as it would have (`completed`, `error`, …) and nothing is claimed after it; one
 * still running after `D` is disposed as at once (`turn/end { kind: "disposed" }`). An idle agent stops at once.
 * Disposal then runs as always (R86), `agent/disposed` last. The closing fiber waits for all of it.
 *
 * @since 0.0.0
 * @category services
 */
export class StopGrace extends Context.Reference<StopGrace>()("@harness/agent/StopGrace", {
  defaultValue: (): Effect.Effect<Duration.DurationInput> => atOnce
}) {}
