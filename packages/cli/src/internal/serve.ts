/**
 * `harness serve`: the agent over HTTP (`@harness/server`) with the store and the model `harness chat` would use —
 * SQLite in the workspace and the offline model unless a key is set — and the same agent per session (the workspace
 * tools and goals); with `--cluster`, the same server in front of a cluster's runners, whose agents it reaches
 * through the cluster (R247). Only the command's definition loads with the CLI; the server loads when the command
 * runs.
 */
import { Command } from "@effect/cli"
import type * as ServerPackage from "@harness/server"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { CommandError, SettingsError } from "../CliError.js"
import type * as Settings from "../Settings.js"
import {
  approvalOptions,
  global,
  hostOption,
  optionalText,
  portOption,
  settingsOf,
  withAgent,
  withStore
} from "./cliSupport.js"
import { clusterOf } from "./clusterCommand.js"
import * as Clusters from "./clusters.js"
import type * as CommandsModule from "./commands.js"
import { diagnostics, err, out } from "./output.js"
import { showStore } from "./settings.js"

type Commands = typeof CommandsModule

const description = "Serve the agent over HTTP: sessions, every agent operation, Server-Sent Events that resume by " +
  "seq, /openapi.json and a docs page at /docs. Binds 127.0.0.1 unless --host says otherwise. Requests need a " +
  "bearer token: HARNESS_SERVER_TOKENS lists them as name:scope:secret (scope read, send or admin), comma " +
  "separated; without it a one-time admin token is made and printed. Writes and shell commands are denied unless " +
  "--yes, or wait for a client's answer with --ask. With --cluster it serves the agents of a cluster's runners " +
  "(harness cluster runner) instead of running any here: give the runners' --cluster and --store.\nExamples:\n" +
  "  harness serve\n  HARNESS_SERVER_TOKENS=web:send:$(openssl rand -hex 16) harness serve --port 8787\n" +
  "  harness serve --cluster sqlite:.harness/cluster.db --port 8787"

/** The `serve` command. */
export const serve = Command.make(
  "serve",
  {
    ...global,
    port: portOption(8787, "The port to listen on (default 8787; 0 picks a free one)."),
    host: hostOption("The address to bind (default 127.0.0.1: this machine only)."),
    ...approvalOptions,
    cluster: optionalText(
      "cluster",
      `Serve the agents of the runners of this cluster (${Clusters.syntaxes.join(" | ")}, as the runners' ` +
        "--cluster) instead of running agents here; the runners' --yes and --ask apply."
    )
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      if (Option.isNone(config.cluster)) {
        return yield* withAgent(settings, (loaded) => run(loaded, settings, config))
      }
      if (config.yes || config.ask) {
        return yield* new SettingsError({
          setting: config.yes ? "--yes" : "--ask",
          message: "in front of a cluster the runners run the tools: give --yes or --ask to harness cluster runner"
        })
      }
      const location = yield* clusterOf(config.cluster.value, settings)
      yield* withStore(settings, () =>
        Effect.flatMap(
          Effect.promise(() => import("./clusterNode.js")),
          (Node) =>
            listen(
              config,
              `in front of the cluster ${Clusters.show(location)} · store ${showStore(settings.store.value)}`,
              (_, tokens) => Node.front(location, tokens)
            ).pipe(Effect.provide(diagnostics(false)))
        ))
    })
).pipe(Command.withDescription(description))

/** The agent of each session in this process, with the settings' tools, and approvals as `--yes` and `--ask` say. */
const run = (
  { Run, Runtime }: Commands,
  settings: Settings.Settings,
  options: { readonly port: number; readonly host: string; readonly yes: boolean; readonly ask: boolean }
) =>
  listen(
    options,
    `store ${showStore(settings.store.value)} · model ${settings.model.value}`,
    (Server, tokens) =>
      Server.layer({
        tokens,
        makeAgent: (log) => Runtime.makeAgent(settings, log, Run.unattended(options.yes, options.ask))
      })
  )

/**
 * Serves the server `app` makes for the tokens (`HARNESS_SERVER_TOKENS`, else a one-time admin token) at the
 * options' address, prints where (with `what` it serves) and runs until it is interrupted.
 */
const listen = <E, R>(
  options: { readonly port: number; readonly host: string },
  what: string,
  app: (
    Server: typeof ServerPackage.Server,
    tokens: ReadonlyArray<ServerPackage.Server.Token>
  ) => Layer.Layer<never, E, R>
) =>
  Effect.scoped(Effect.gen(function*() {
    const [{ Server }, { HttpServer }] = yield* Effect.promise(() =>
      Promise.all([import("@harness/server"), import("@effect/platform")])
    )
    const configured = yield* Server.tokensConfig
    const generated = configured.length === 0 ? randomBytes(24).toString("base64url") : undefined
    const tokens = generated === undefined
      ? configured
      : [{ name: "admin", scopes: ["admin" as const], secret: Redacted.make(generated) }]
    const http = Server.layerNode({ port: options.port, host: options.host }).pipe(
      Layer.mapError((e) =>
        new CommandError({
          reason: "Input",
          message: `cannot listen on ${options.host}:${options.port}: ${String(e.cause)} (try another --port)`
        })
      )
    )
    const context = yield* Layer.build(app(Server, tokens).pipe(Layer.provideMerge(http)))
    const address = Context.get(context, HttpServer.HttpServer).address
    const url = address._tag === "TcpAddress"
      ? `http://${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}`
      : `unix:${address.path}`
    yield* err(
      `harness serve: ${url} · docs ${url}/docs · ${what}\n` +
        (generated === undefined
          ? `tokens: ${tokens.map((t) => `${t.name} (${t.scopes.join(", ")})`).join(", ")}\n`
          : `no HARNESS_SERVER_TOKENS: this run's admin token is ${generated}\n`) +
        "Ctrl-C stops the server.\n"
    )
    yield* out(`${url}\n`)
    return yield* Effect.never
  }))
