/**
 * `harness cluster runner`: this process as a runner of a cluster of Harness agents (`@harness/cluster`), hosting the
 * agents of the sessions the cluster assigns it, with the store and the model the usual switches select; and how
 * `--cluster` is read, here and by `harness serve`, whose HTTP server then runs in front of the runners. Only the
 * definitions load with the CLI; the cluster loads when a command runs.
 */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { SettingsError } from "../CliError.js"
import type * as Settings from "../Settings.js"
import { approvalOptions, global, hostOption, portOption, settingsOf, withAgent } from "./cliSupport.js"
import * as Clusters from "./clusters.js"
import { diagnostics } from "./output.js"

/** `--cluster`: where the cluster's nodes keep its tables (they all name the same place). */
const clusterOption = Options.text("cluster").pipe(
  Options.withDescription(
    `Where the cluster keeps its tables, the same for every node: ${Clusters.syntaxes.join(" | ")} (a SQLite file ` +
      "only for nodes on one machine)."
  )
)

/**
 * The cluster `--cluster` names, for settings whose store the nodes can share: the memory store is this process's
 * alone (a `SettingsError`).
 */
export const clusterOf = (text: string, settings: Settings.Settings) =>
  Effect.gen(function*() {
    const location = yield* Clusters.parse(text, process.cwd(), "--cluster")
    if (settings.store.value._tag === "memory") {
      return yield* new SettingsError({
        setting: "--store",
        message: "a cluster's nodes share the session store, and --store memory is this process's alone: give the " +
          "runners' store (sqlite:<file>, postgres://…)"
      })
    }
    return location
  })

const runner = Command.make(
  "runner",
  {
    ...global,
    cluster: clusterOption,
    host: hostOption(
      "The address the other nodes reach this runner at, and that it listens on (default 127.0.0.1: this machine " +
        "only)."
    ),
    port: portOption(34431, "The port it listens on for the other nodes (default 34431; one per runner)."),
    ...approvalOptions
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const location = yield* clusterOf(config.cluster, settings)
      if (!Number.isInteger(config.port) || config.port < 1 || config.port > 65535) {
        return yield* new SettingsError({
          setting: "--port",
          message: `--port must be a port from 1 to 65535 (the other nodes reach the runner there), not ${config.port}`
        })
      }
      yield* withAgent(settings, ({ Run }) =>
        Effect.flatMap(
          Effect.promise(() => import("./clusterNode.js")),
          (Node) =>
            Node.runner(settings, location, {
              host: config.host,
              port: config.port,
              hooks: Run.unattended(config.yes, config.ask)
            }).pipe(Effect.provide(diagnostics(false)))
        ))
    })
).pipe(Command.withDescription(
  "Run this process as a runner of a cluster: it hosts the agents of the sessions the cluster gives it (the agent " +
    "harness serve runs, with the store and the model of the usual switches), and they move to the other runners " +
    "when it stops (Ctrl-C, SIGTERM) or dies. Every node names the same --cluster and the same --store; put an HTTP " +
    "front before the runners with harness serve --cluster. Timings come from HARNESS_CLUSTER_* (see " +
    "@harness/cluster).\nExamples:\n" +
    "  harness cluster runner --cluster postgres://harness@127.0.0.1/harness --store postgres://harness@127.0.0.1/harness --port 34431\n" +
    "  harness cluster runner --cluster sqlite:.harness/cluster.db --port 34431"
))

/** The `cluster` command and its subcommands. */
export const cluster = Command.make("cluster").pipe(
  Command.withDescription(
    "Run Harness agents on a cluster (@harness/cluster): runners host the agents, any node reaches any session, and " +
      "a runner's sessions resume on another when it stops or dies.\nStart with: harness cluster runner --help"
  ),
  Command.withSubcommands([runner])
)
