/**
 * `harness serve`: the agent over HTTP (`@harness/server`) with the store and the model `harness chat` would use —
 * SQLite in the workspace and the offline model unless a key is set — and the same agent per session (the workspace
 * tools and goals). Only the command's definition loads with the CLI; the server loads when the command runs.
 */
import type { LanguageModel } from "@effect/ai"
import { Command, Options } from "@effect/cli"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { SessionStore } from "@harness/session"
import type { ConfigError } from "effect"
import { Context, Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { CommandError } from "../CliError.js"
import type * as Settings from "../Settings.js"
import type * as CommandsModule from "./commands.js"
import { err, out } from "./output.js"
import { showStore } from "./settings.js"

type Commands = typeof CommandsModule

/** The global flags every command takes (defined in `Cli.ts`). */
type GlobalOptions = { readonly [K in keyof Settings.Flags]: Options.Options<Settings.Flags[K]> }

/**
 * What the command takes from `Cli.ts`: the global flags, how they become checked settings, and how a command runs
 * with the store and the model those settings select.
 */
export interface Deps<E, R, E2, R2> {
  readonly global: GlobalOptions
  readonly settingsOf: (flags: Settings.Flags) => Effect.Effect<Settings.Settings, E, R>
  readonly withAgent: (
    settings: Settings.Settings,
    f: (loaded: Commands) => Effect.Effect<void, ConfigError.ConfigError | CommandError, Needs>
  ) => Effect.Effect<void, E2, R2>
}

/** What serving needs from the command's context: the store and the model (`withAgent`), and Node's services. */
type Needs = SessionStore.SessionStore | LanguageModel.LanguageModel | CommandExecutor

const description = "Serve the agent over HTTP: sessions, every agent operation, Server-Sent Events that resume by " +
  "seq, /openapi.json and a docs page at /docs. Binds 127.0.0.1 unless --host says otherwise. Requests need a " +
  "bearer token: HARNESS_SERVER_TOKENS lists them as name:scope:secret (scope read, send or admin), comma " +
  "separated; without it a one-time admin token is made and printed. Writes and shell commands are denied unless " +
  "--yes, or wait for a client's answer with --ask.\nExamples:\n  harness serve\n  HARNESS_SERVER_TOKENS=web:send:$(openssl rand -hex 16) harness serve --port 8787"

/** The `serve` command. */
export const serve = <E, R, E2, R2>(deps: Deps<E, R, E2, R2>) =>
  Command.make(
    "serve",
    {
      ...deps.global,
      port: Options.integer("port").pipe(
        Options.withDescription("The port to listen on (default 8787; 0 picks a free one)."),
        Options.withDefault(8787)
      ),
      host: Options.text("host").pipe(
        Options.withDescription("The address to bind (default 127.0.0.1: this machine only)."),
        Options.withDefault("127.0.0.1")
      ),
      yes: Options.boolean("yes").pipe(
        Options.withAlias("y"),
        Options.withDescription("Allow writes and shell commands without asking (they are denied otherwise).")
      ),
      ask: Options.boolean("ask").pipe(
        Options.withDescription(
          "Writes and shell commands wait for a client's answer (a chat with --remote, the web page, " +
            "POST /sessions/:id/approve) instead of being denied; the approval is durable."
        )
      )
    },
    (config) =>
      Effect.gen(function*() {
        const settings = yield* deps.settingsOf(config)
        yield* deps.withAgent(settings, (loaded) => run(loaded, settings, config))
      })
  ).pipe(Command.withDescription(description))

const run = (
  { Run, Runtime }: Commands,
  settings: Settings.Settings,
  options: { readonly port: number; readonly host: string; readonly yes: boolean; readonly ask: boolean }
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
    const context = yield* Layer.build(
      Server.layer({
        tokens,
        makeAgent: (log) =>
          Runtime.makeAgent(
            settings,
            log,
            options.ask && !options.yes
              ? { toolApproval: () => Effect.succeed({ kind: "ask" as const }) }
              : Run.approvals(options.yes)
          )
      }).pipe(
        Layer.provideMerge(Server.layerNode({ port: options.port, host: options.host }))
      )
    ).pipe(
      Effect.catchTag("ServeError", (e) =>
        new CommandError({
          reason: "Input",
          message: `cannot listen on ${options.host}:${options.port}: ${String(e.cause)} (try another --port)`
        }))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const url = address._tag === "TcpAddress"
      ? `http://${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}`
      : `unix:${address.path}`
    yield* err(
      `harness serve: ${url} · docs ${url}/docs · store ${showStore(settings.store.value)} · model ` +
        `${settings.model.value}\n` +
        (generated === undefined
          ? `tokens: ${tokens.map((t) => `${t.name} (${t.scopes.join(", ")})`).join(", ")}\n`
          : `no HARNESS_SERVER_TOKENS: this run's admin token is ${generated}\n`) +
        "Ctrl-C stops the server.\n"
    )
    yield* out(`${url}\n`)
    return yield* Effect.never
  }))
