/**
 * The cluster's timings from `HARNESS_CLUSTER_*` (R217): every setting is read by its name, the defaults are the
 * cluster's own with row locks, a refresh interval not shorter than the expiry is refused with a message naming both,
 * and a runner built from the settings runs with them (its shards are the configured number).
 */
import { EntityId, Sharding, ShardingConfig, SingleRunner } from "@effect/cluster"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Either, Layer } from "effect"
import { ClusterConfig } from "../src/index.js"

const env = (entries: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(entries)), { pathDelim: "_" }))

const tuned = {
  HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL: "1 second",
  HARNESS_CLUSTER_SHARD_LOCK_EXPIRATION: "3 seconds",
  HARNESS_CLUSTER_SHARD_LOCK_DISABLE_ADVISORY: "false",
  HARNESS_CLUSTER_REFRESH_ASSIGNMENTS_INTERVAL: "300 millis",
  HARNESS_CLUSTER_MESSAGE_POLL_INTERVAL: "200 millis",
  HARNESS_CLUSTER_REPLY_POLL_INTERVAL: "100 millis",
  HARNESS_CLUSTER_ENTITY_MAX_IDLE_TIME: "30 seconds",
  HARNESS_CLUSTER_ENTITY_TERMINATION_TIMEOUT: "5 seconds",
  HARNESS_CLUSTER_RUNNER_HEALTH_CHECK_INTERVAL: "1 second",
  HARNESS_CLUSTER_SEND_RETRY_INTERVAL: "50 millis",
  HARNESS_CLUSTER_SHARDS_PER_GROUP: "7"
}

describe("ClusterConfig", () => {
  it.effect("R217: each HARNESS_CLUSTER_* variable sets its sharding setting", () =>
    Effect.gen(function*() {
      const settings = yield* env(tuned)(ClusterConfig.config)
      assert.deepStrictEqual(settings, {
        shardLockRefreshInterval: Duration.seconds(1),
        shardLockExpiration: Duration.seconds(3),
        shardLockDisableAdvisory: false,
        refreshAssignmentsInterval: Duration.millis(300),
        entityMessagePollInterval: Duration.millis(200),
        entityReplyPollInterval: Duration.millis(100),
        entityMaxIdleTime: Duration.seconds(30),
        entityTerminationTimeout: Duration.seconds(5),
        runnerHealthCheckInterval: Duration.seconds(1),
        sendRetryInterval: Duration.millis(50),
        shardsPerGroup: 7
      })
    }))

  it.effect("R217: unset, the settings are the cluster's defaults with shard locks as rows", () =>
    Effect.gen(function*() {
      const config = yield* env({})(Effect.flatMap(
        Layer.build(ClusterConfig.layer()),
        (context) => Effect.provide(ShardingConfig.ShardingConfig, context)
      )).pipe(Effect.scoped)
      const decoded = (d: Duration.DurationInput) => Duration.toMillis(Duration.decode(d))
      const defaults = ShardingConfig.defaults
      assert.strictEqual(config.shardLockDisableAdvisory, true)
      for (
        const key of [
          "shardLockRefreshInterval",
          "shardLockExpiration",
          "refreshAssignmentsInterval",
          "entityMessagePollInterval",
          "entityReplyPollInterval",
          "entityMaxIdleTime",
          "entityTerminationTimeout",
          "runnerHealthCheckInterval",
          "sendRetryInterval"
        ] as const
      ) assert.strictEqual(decoded(config[key]), decoded(defaults[key]), key)
      assert.strictEqual(config.shardsPerGroup, defaults.shardsPerGroup)
      assert.deepStrictEqual(config.runnerAddress, defaults.runnerAddress)
    }))

  it.effect("R217: a refresh interval not shorter than the expiry is refused, naming both settings", () =>
    Effect.gen(function*() {
      const result = yield* env({
        HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL: "5 seconds",
        HARNESS_CLUSTER_SHARD_LOCK_EXPIRATION: "5 seconds"
      })(Effect.either(ClusterConfig.config))
      assert.isTrue(Either.isLeft(result))
      const message = Either.isLeft(result) ? String(result.left) : ""
      assert.include(message, "HARNESS_CLUSTER_SHARD_LOCK_REFRESH_INTERVAL")
      assert.include(message, "HARNESS_CLUSTER_SHARD_LOCK_EXPIRATION")
      const shards = yield* env({ HARNESS_CLUSTER_SHARDS_PER_GROUP: "0" })(Effect.either(ClusterConfig.config))
      assert.isTrue(Either.isLeft(shards))
    }))

  it.live("R217: a runner built from the settings runs with them (the configured number of shards)", () =>
    Effect.gen(function*() {
      const shardingConfig = yield* env(tuned)(ClusterConfig.config)
      const context = yield* Layer.build(
        SingleRunner.layer({ runnerStorage: "memory", shardingConfig }).pipe(
          Layer.provide(SqliteClient.layer({ filename: ":memory:" }))
        )
      )
      const sharding = yield* Effect.provide(Sharding.Sharding, context)
      const shards = new Set(
        Array.from({ length: 200 }, (_, i) => sharding.getShardId(EntityId.make(`s-${i}`), "default").id)
      )
      assert.deepStrictEqual([...shards].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7])
    }).pipe(Effect.scoped))
})
