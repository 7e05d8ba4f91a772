/**
 * Retention for the cluster's SQL message storage. Every persisted message and its reply stay in the cluster's tables
 * after they are processed, so the tables grow with every operation ever sent. Once a message is answered, the
 * session log is what answers it again (R184), so an old processed message can go. This module deletes them on a
 * schedule, from one runner of the cluster at a time.
 *
 * @since 0.0.0
 */
import { Singleton } from "@effect/cluster"
import type { Sharding } from "@effect/cluster"
import type { SqlClient, SqlError } from "@effect/sql"
import type { ConfigError } from "effect"
import { Config, Duration, Effect, Layer, Schedule } from "effect"
import * as internal from "./internal/retention.js"

/**
 * How retention runs.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /**
   * How old a processed message must be (counted from when it was sent) before it is deleted: longer than any sender
   * waits for a reply, since a sender polling storage for a reply deleted before it read it is never answered.
   */
  readonly olderThan: Duration.DurationInput
  /** The time between two cleanup passes. */
  readonly every: Duration.DurationInput
  /** The prefix of the cluster's tables (`SqlMessageStorage`'s, `cluster` by default). */
  readonly prefix?: string | undefined
}

/**
 * What one pass deleted: message rows (requests, with their acknowledgements and interrupts) and reply rows.
 *
 * @since 0.0.0
 * @category models
 */
export type Purged = internal.Purged

/**
 * The retention settings, nested under `HARNESS_CLUSTER` — as environment variables: `HARNESS_CLUSTER_RETENTION`
 * (the age, default `7 days`) and `HARNESS_CLUSTER_RETENTION_INTERVAL` (default `1 hour`).
 *
 * @since 0.0.0
 * @category config
 */
export const config: Config.Config<Options> = Config.all({
  olderThan: Config.duration("RETENTION").pipe(
    Config.withDefault(Duration.days(7)),
    Config.withDescription("How old a processed cluster message must be before it is deleted.")
  ),
  every: Config.duration("RETENTION_INTERVAL").pipe(
    Config.withDefault(Duration.hours(1)),
    Config.withDescription("The time between two cleanups of the cluster's message tables.")
  )
}).pipe(Config.nested("HARNESS_CLUSTER"))

/**
 * One cleanup pass over the cluster's tables in the `SqlClient` (SQLite or PostgreSQL), in one transaction.
 *
 * Contract: deletes every request that is processed (its final reply stored) and was sent before now minus
 * `olderThan`, with its replies, acknowledgements and interrupts, and every reply older than that whose request is
 * gone; never a message that is not processed, however old (R218). A send repeated after its message was deleted is
 * stored and delivered again, and the entity answers it from the session log without accepting it twice (R184).
 *
 * @since 0.0.0
 * @category operations
 */
export const purge: (
  options: { readonly olderThan: Duration.DurationInput; readonly prefix?: string | undefined }
) => Effect.Effect<Purged, SqlError.SqlError, SqlClient.SqlClient> = internal.purge

/**
 * Runs {@link purge} every `every` (the first pass at once) as a cluster singleton named
 * `harness/cluster-retention`: one runner of the cluster at a time runs it, and another takes it over with the
 * singleton's shard. A failed pass is logged and the next one runs on schedule.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<never, never, Sharding.Sharding | SqlClient.SqlClient> =>
  Singleton.make(
    "harness/cluster-retention",
    purge(options).pipe(
      Effect.tap((purged) =>
        purged.messages + purged.replies === 0
          ? Effect.void
          : Effect.logDebug("cluster retention", purged)
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("cluster retention failed; retried at the next pass", cause)),
      Effect.repeat(Schedule.spaced(options.every)),
      Effect.asVoid
    )
  )

/**
 * {@link layer} with its settings from {@link config}.
 *
 * @since 0.0.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError, Sharding.Sharding | SqlClient.SqlClient> = Layer
  .unwrapEffect(Effect.map(config, layer))
