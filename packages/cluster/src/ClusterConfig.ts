/**
 * The cluster's timings as one Harness `Config`: how fast a dead or frozen runner's sessions move (shard lock refresh
 * and expiry, assignment refresh, message polling), how long an idle agent stays activated, how long a stopping one
 * may take. Read from `HARNESS_CLUSTER_*` environment variables (README: Configuration), it gives the settings the
 * runner layers take (`SingleRunner.layer({ shardingConfig })`, `NodeClusterSocket.layer({ shardingConfig })`) and a
 * whole `ShardingConfig` layer for compositions of `Sharding.layer`.
 *
 * @since 0.0.0
 */
import { ShardingConfig } from "@effect/cluster"
import { Config, ConfigError, Duration, Effect, Either, Layer, Record } from "effect"

/**
 * The sharding settings Harness reads (a subset of `ShardingConfig`'s; the others keep the cluster's defaults).
 *
 * @since 0.0.0
 * @category models
 */
export interface Settings {
  /** How often a runner renews its shard locks and heartbeat (`HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL`). */
  readonly shardLockRefreshInterval: Duration.Duration
  /** How old a runner's locks may get before other runners take its shards (`..._SHARD_LOCK_EXPIRATION`). */
  readonly shardLockExpiration: Duration.Duration
  /** Shard locks as rows with an expiry instead of connection-bound advisory locks (R251). */
  readonly shardLockDisableAdvisory: boolean
  /** How often a runner re-reads the runners and the shard assignments (`..._REFRESH_ASSIGNMENTS_INTERVAL`). */
  readonly refreshAssignmentsInterval: Duration.Duration
  /** How often a runner polls storage for messages, stored keep-alives included (`..._MESSAGE_POLL_INTERVAL`). */
  readonly entityMessagePollInterval: Duration.Duration
  /** How often a sender polls storage for the reply of a persisted message (`..._REPLY_POLL_INTERVAL`). */
  readonly entityReplyPollInterval: Duration.Duration
  /** How long an idle entity stays activated before it is passivated (`..._ENTITY_MAX_IDLE_TIME`). */
  readonly entityMaxIdleTime: Duration.Duration
  /** How long a stopping runner waits for an entity to end (`..._ENTITY_TERMINATION_TIMEOUT`). */
  readonly entityTerminationTimeout: Duration.Duration
  /** How often a runner checks the other runners' health (`..._RUNNER_HEALTH_CHECK_INTERVAL`). */
  readonly runnerHealthCheckInterval: Duration.Duration
  /** How soon a send is retried while its entity's shard has no runner (`..._SEND_RETRY_INTERVAL`). */
  readonly sendRetryInterval: Duration.Duration
  /** The number of shards; the same on every node of the cluster (`HARNESS_CLUSTER_SHARDS_PER_GROUP`). */
  readonly shardsPerGroup: number
}

type Timing = {
  [K in keyof Settings]: Settings[K] extends Duration.Duration ? K : never
}[keyof Settings]

/** Each timing: its variable (under `HARNESS_CLUSTER_`) and its description. */
const timings = {
  shardLockRefreshInterval: ["SHARD_LOCK_REFRESH_INTERVAL", "How often a runner renews its shard locks."],
  shardLockExpiration: ["SHARD_LOCK_EXPIRATION", "How old a runner's locks get before others take its shards."],
  refreshAssignmentsInterval: ["REFRESH_ASSIGNMENTS_INTERVAL", "How often a runner re-reads the shard assignments."],
  entityMessagePollInterval: ["MESSAGE_POLL_INTERVAL", "How often a runner polls storage for messages."],
  entityReplyPollInterval: ["REPLY_POLL_INTERVAL", "How often a sender polls storage for a stored reply."],
  entityMaxIdleTime: ["ENTITY_MAX_IDLE_TIME", "How long an idle entity stays activated."],
  entityTerminationTimeout: ["ENTITY_TERMINATION_TIMEOUT", "How long a stopping runner waits for an entity."],
  runnerHealthCheckInterval: ["RUNNER_HEALTH_CHECK_INTERVAL", "How often a runner checks the other runners."],
  sendRetryInterval: ["SEND_RETRY_INTERVAL", "How soon a send is retried while its shard has no runner."]
} as const satisfies { readonly [K in Timing]: readonly [string, string] }

/** A timing read from its variable, the cluster's own default when unset. */
const timing = (key: Timing) =>
  Config.duration(timings[key][0]).pipe(
    Config.withDefault(Duration.decode(ShardingConfig.defaults[key])),
    Config.withDescription(timings[key][1])
  )

/**
 * The settings, nested under `HARNESS_CLUSTER` — as environment variables (all optional; durations such as
 * `3 seconds` or `200 millis`): `HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL` (10 s),
 * `HARNESS_CLUSTER_SHARD_LOCK_EXPIRATION` (35 s), `HARNESS_CLUSTER_SHARD_LOCK_DISABLE_ADVISORY` (`true`),
 * `HARNESS_CLUSTER_REFRESH_ASSIGNMENTS_INTERVAL` (3 s), `HARNESS_CLUSTER_MESSAGE_POLL_INTERVAL` (10 s),
 * `HARNESS_CLUSTER_REPLY_POLL_INTERVAL` (200 ms), `HARNESS_CLUSTER_ENTITY_MAX_IDLE_TIME` (1 min),
 * `HARNESS_CLUSTER_ENTITY_TERMINATION_TIMEOUT` (15 s), `HARNESS_CLUSTER_RUNNER_HEALTH_CHECK_INTERVAL` (1 min),
 * `HARNESS_CLUSTER_SEND_RETRY_INTERVAL` (100 ms), `HARNESS_CLUSTER_SHARDS_PER_GROUP` (300). A
 * `ConfigProvider.fromMap` needs `pathDelim: "_"` for these names.
 *
 * Contract: the defaults are the cluster's own, except that shard locks are rows with an expiry (R251). A refresh
 * interval not shorter than the expiry fails with a `ConfigError` that names both settings (a runner would lose its
 * shards between two refreshes) (R217).
 *
 * @since 0.0.0
 * @category config
 */
export const config: Config.Config<Settings> = Config.all({
  ...Record.map(timings, (_, key) => timing(key)),
  shardLockDisableAdvisory: Config.boolean("SHARD_LOCK_DISABLE_ADVISORY").pipe(
    Config.withDefault(true),
    Config.withDescription("Shard locks as rows with an expiry (true) or as advisory locks held by a connection.")
  ),
  shardsPerGroup: Config.integer("SHARDS_PER_GROUP").pipe(
    Config.withDefault(ShardingConfig.defaults.shardsPerGroup),
    Config.validate({ message: "HARNESS_CLUSTER_SHARDS_PER_GROUP must be at least 1", validation: (n) => n >= 1 }),
    Config.withDescription("The number of shards: the same on every node of the cluster.")
  )
}).pipe(
  Config.mapOrFail((settings) =>
    Duration.lessThan(settings.shardLockRefreshInterval, settings.shardLockExpiration)
      ? Either.right(settings)
      : Either.left(ConfigError.InvalidData(
        [],
        `HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL (${
          Duration.format(settings.shardLockRefreshInterval)
        }) must be shorter than HARNESS_CLUSTER_SHARD_LOCK_EXPIRATION (${
          Duration.format(settings.shardLockExpiration)
        }): a runner would lose its shards between two refreshes`
      ))
  ),
  Config.nested("HARNESS_CLUSTER")
)

/**
 * The whole `ShardingConfig`: the cluster's defaults, then {@link config}, then `overrides` (a runner's address, or
 * what a test pins).
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (
  overrides: Partial<ShardingConfig.ShardingConfig["Type"]> = {}
): Layer.Layer<ShardingConfig.ShardingConfig, ConfigError.ConfigError> =>
  Layer.effect(
    ShardingConfig.ShardingConfig,
    Effect.map(config, (settings) => ({ ...ShardingConfig.defaults, ...settings, ...overrides }))
  )
