/**
 * The CLI's nodes of a cluster (`@harness/cluster`): a runner that hosts the agent entity — the agent `harness serve`
 * would run, over the session store and the model of the usual switches — and the client-only node an HTTP front runs
 * on, which opens no session log and holds no lease (R247). Both keep the cluster's tables in the storage `--cluster`
 * names and read their timings from `HARNESS_CLUSTER_*`. Loaded when `harness cluster runner` or
 * `harness serve --cluster` runs.
 */
import type { LanguageModel } from "@effect/ai"
import { RunnerAddress } from "@effect/cluster"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { SocketServerError } from "@effect/platform/SocketServer"
import type { Hooks } from "@harness/agent"
import { AgentEntity, ClusterAgent, ClusterConfig, Retention } from "@harness/cluster"
import { Server } from "@harness/server"
import type { SessionStore } from "@harness/session"
import { Effect, Layer, Option } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Clusters from "./clusters.js"
import { err, out } from "./output.js"
import { makeAgent } from "./runtime.js"
import { showStore } from "./settings.js"

/** Where a runner listens, and what its agents' tool approvals are. */
interface RunnerOptions {
  readonly host: string
  readonly port: number
  readonly hooks: Hooks.Hooks
}

/**
 * The entity's agent: the CLI's agent over the session's log (the workspace tools, the goals, the subagents); each
 * session a runner takes and gives up is reported on standard error.
 */
const hostedAgent = (
  settings: Settings,
  hooks: Hooks.Hooks
): AgentEntity.MakeAgent<LanguageModel.LanguageModel | CommandExecutor | SessionStore.SessionStore> =>
(log) =>
  Effect.gen(function*() {
    const running = yield* makeAgent(settings, log, hooks)
    yield* err(`harness cluster runner: session ${log.id} opened here\n`)
    yield* Effect.addFinalizer(() => err(`harness cluster runner: session ${log.id} closed here\n`))
    return running.agent
  })

/**
 * This process as a runner of the cluster at `location`, reachable by the other nodes at `options.host`:`port`: it
 * hosts the agent entity and takes its turn at the cluster's retention (R218). A port it cannot listen on is a
 * `CommandError`.
 */
const runnerLayer = (settings: Settings, location: Clusters.Location, options: RunnerOptions) => {
  const address = RunnerAddress.make(options.host, options.port)
  const sharding = Layer.unwrapEffect(Effect.map(ClusterConfig.config, (timings) =>
    NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: { ...timings, runnerAddress: Option.some(address) }
    }))).pipe(
      Layer.mapError((e) =>
        e instanceof SocketServerError
          ? new CommandError({
            reason: "Input",
            message: `cannot listen on ${options.host}:${options.port}: ${String(e.cause)} (try another --port)`
          })
          : e
      )
    )
  return Layer.mergeAll(AgentEntity.layer({ makeAgent: hostedAgent(settings, options.hooks) }), Retention.layerConfig)
    .pipe(Layer.provide(Layer.provideMerge(sharding, Clusters.client(location))))
}

/** Runs this process as a runner until it is interrupted (Ctrl-C, `SIGTERM`): then its sessions move on (R216). */
export const runner = (settings: Settings, location: Clusters.Location, options: RunnerOptions) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Layer.build(runnerLayer(settings, location, options))
    const address = `${options.host}:${options.port}`
    yield* err(
      `harness cluster runner: ${address} · cluster ${Clusters.show(location)} · store ` +
        `${showStore(settings.store.value)} · model ${settings.model.value}\n` +
        "Ctrl-C stops the runner: its sessions move to the other runners.\n"
    )
    yield* out(`${address}\n`)
    return yield* Effect.never
  }))

/**
 * The HTTP server in front of the runners of the cluster at `location` (R247): a client-only node (it hosts no agent
 * and holds no shard), each session's agent `ClusterAgent.make`, the sessions in the store of the context (the one the
 * runners write).
 */
export const front = (location: Clusters.Location, tokens: ReadonlyArray<Server.Token>) =>
  Server.layer({ tokens, agents: ClusterAgent.make }).pipe(
    Layer.provide(
      Layer.unwrapEffect(Effect.map(ClusterConfig.config, (timings) =>
        NodeClusterSocket.layer({
          storage: "sql",
          clientOnly: true,
          shardingConfig: { ...timings, runnerAddress: Option.none() }
        })))
    ),
    Layer.provide(Clusters.client(location))
  )
