/** What every command shares: the global options, the settings, where the agent and the sessions live. */
import { Args, Options } from "@effect/cli"
import { Config, Effect, Layer, Option, type Redacted } from "effect"
import { CommandError, SettingsError } from "../CliError.js"
import * as Settings from "../Settings.js"
import type * as CommandsModule from "./commands.js"
import { out, visible } from "./output.js"
import * as Providers from "./providers.js"
import { redactText } from "./redact.js"
import * as Stores from "./stores.js"

/** `--name`, a switch: `true` when given. */
export const flag = (name: string, description: string) =>
  Options.boolean(name).pipe(Options.withDescription(description))

/** `--name <text>`, optional: `Option.none()` when absent. */
export const optionalText = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

/** `--name <whole number>`, optional: `Option.none()` when absent. */
export const optionalInteger = (name: string, description: string) =>
  Options.integer(name).pipe(Options.withDescription(description), Options.optional)

/** `--name <number>`, optional: `Option.none()` when absent. */
const optionalFloat = (name: string, description: string) =>
  Options.float(name).pipe(Options.withDescription(description), Options.optional)

/** `--host`: the address a server listens on, `127.0.0.1` (this machine only) unless given. */
export const hostOption = (description: string) =>
  Options.text("host").pipe(Options.withDescription(description), Options.withDefault("127.0.0.1"))

/** `--port`: the port a server listens on, `fallback` unless given. */
export const portOption = (fallback: number, description: string) =>
  Options.integer("port").pipe(Options.withDescription(description), Options.withDefault(fallback))

/** The global options every command takes: the model, the store, the workspace, the MCP servers, the budgets. */
export const global = {
  model: optionalText("model", "The model name (default: offline, or deepseek-v4-flash when an API key is set)."),
  baseUrl: optionalText("base-url", "An OpenAI-compatible chat-completions server, e.g. http://localhost:8080/v1."),
  store: optionalText(
    "store",
    `Where sessions live: ${Stores.syntaxes.join(" | ")} (default: sqlite:.harness/sessions.db in the workspace).`
  ),
  workspace: Options.directory("workspace").pipe(
    Options.withDescription("The directory the workspace tools are confined to (default: the current directory)."),
    Options.optional
  ),
  offline: flag("offline", "Use the offline model even when an API key is configured."),
  mcp: Options.text("mcp").pipe(
    Options.withDescription(
      "An MCP server whose tools the agent gets: <name>=<command line> (stdio) or <name>=<url> (Streamable HTTP); " +
        "repeatable; added to .harness/mcp.json's."
    ),
    Options.repeated
  ),
  maxSteps: optionalInteger(
    "max-steps",
    "The most steps one turn may take (default 50): a turn that reaches it ends (budget)."
  ),
  maxTurnTokens: optionalInteger("max-turn-tokens", "The most tokens one turn may use."),
  maxSessionTokens: optionalInteger(
    "max-session-tokens",
    "The most tokens the session may use, counted from its log (across resumes)."
  ),
  maxSessionCost: optionalFloat(
    "max-session-cost",
    "The most the session may cost, priced by HARNESS_PRICES (JSON per model)."
  ),
  turnTimeout: optionalFloat(
    "turn-timeout",
    "The most seconds one turn may take; a running step is interrupted when it passes."
  ),
  contextWindow: optionalInteger(
    "context-window",
    "The model's context window in tokens: a request estimated past 80% of it first compacts the history " +
      "(summarises it; the log keeps everything). Default: the model's entry in HARNESS_CONTEXT_WINDOWS, else " +
      "none: nothing compacts by itself."
  ),
  compactThreshold: optionalFloat(
    "compact-threshold",
    "The share of the context window (0 < t ≤ 1) an estimated request may reach before the history is compacted " +
      "(default 0.8)."
  )
}

/**
 * The settings, checked: with a provider's own setting set (`LLM_*`), that provider's checks run too (loading it), so
 * a value it would refuse is a setting error (exit code 2) in every command, `config` included.
 */
export const settingsOf = (flags: Settings.Flags) => Effect.tap(Settings.resolve(flags), Providers.check)

/** What the commands run: the agent, the session log, the stores, the tools, the goals, the model. */
type Commands = typeof CommandsModule

/**
 * What the commands run, loaded when one runs: it is most of the CLI's code, and `--help`, `--version`, `config` and
 * a bad flag need none of it (start-up, `test/startup.test.ts`).
 */
const commands: Effect.Effect<Commands> = Effect.promise(() => import("./commands.js"))

/** The session store the settings select (its row of the store table). */
const storeLayer = (settings: Settings.Settings) =>
  Stores.kindOf(settings.store.value).layer(settings.store.value).pipe(
    Layer.mapError((e) =>
      new CommandError({
        reason: "Store",
        message:
          `cannot open the session store ${Settings.showStore(settings.store.value)}: ${redactText(e.message)} ` +
          `(check --store or HARNESS_STORE; harness config shows which one is used)`
      })
    )
  )

/**
 * The model the settings select (its row of the provider table); a setting it cannot use is a `SettingsError` (exit
 * code 2).
 */
const modelLayer = (settings: Settings.Settings) =>
  Providers.providers[settings.provider.value].layer(settings).pipe(
    Layer.mapError((e) =>
      new SettingsError({
        setting: "model",
        message: `the model is misconfigured: ${redactText(String(e))} (harness config shows every setting)`
      })
    )
  )

/** Runs what `f` makes with the commands' code, provided with the session store the settings select. */
export const withStore = <A, E, R>(settings: Settings.Settings, f: (loaded: Commands) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(commands, (loaded) => Effect.provide(f(loaded), storeLayer(settings)))

/** `withStore` with the model too, and the agent in this process as `Runtime.Backend`: what runs the agent here. */
export const withAgent = <A, E, R>(settings: Settings.Settings, f: (loaded: Commands) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    commands,
    (loaded) =>
      f(loaded).pipe(
        Effect.provide(loaded.Runtime.layerLocal),
        Effect.provide(storeLayer(settings)),
        Effect.provide(modelLayer(settings))
      )
  )

/** `--remote` and `--remote-token`: the agent of a Harness server instead of one in this process. */
export const remoteOptions = {
  remote: optionalText(
    "remote",
    "Talk to the agent on a Harness server (harness serve) at this URL instead of running it here; the store, " +
      "model and tools are the server's."
  ),
  remoteToken: Options.redacted("remote-token").pipe(
    Options.withDescription("The server's bearer token with --remote (default: HARNESS_REMOTE_TOKEN)."),
    Options.optional
  )
}

/** The server `--remote` names and its token (the flag, else `HARNESS_REMOTE_TOKEN`), or none. */
export const remoteOf = (config: {
  readonly remote: Option.Option<string>
  readonly remoteToken: Option.Option<Redacted.Redacted>
}) =>
  Effect.gen(function*() {
    if (Option.isNone(config.remote)) return undefined
    const url = config.remote.value.replace(/\/+$/, "")
    if (!/^https?:\/\/[^/]+$/.test(url)) {
      return yield* new SettingsError({
        setting: "--remote",
        message: `--remote takes a server's origin, e.g. http://127.0.0.1:8787 (not ${JSON.stringify(url)})`
      })
    }
    const token = Option.isSome(config.remoteToken)
      ? config.remoteToken.value
      : yield* Config.option(Config.redacted("HARNESS_REMOTE_TOKEN")).pipe(Effect.map(Option.getOrUndefined))
    if (token === undefined) {
      return yield* new SettingsError({
        setting: "--remote-token",
        message: "--remote needs the server's token: set HARNESS_REMOTE_TOKEN or pass --remote-token"
      })
    }
    return { url, token }
  })

/**
 * Runs what `f` makes with the agent where `remote` says: on that server, or (none) here, as `withAgent` does.
 */
export const withBackend = <A, E>(
  settings: Settings.Settings,
  remote: { readonly url: string; readonly token: Redacted.Redacted } | undefined,
  f: (loaded: Commands) => Effect.Effect<A, E, CommandsModule.Runtime.Backend>
) =>
  remote === undefined
    ? withAgent(settings, f)
    : Effect.flatMap(commands, (loaded) =>
      Effect.provide(f(loaded), loaded.Runtime.layerRemote(remote.url, remote.token)))

/**
 * Runs what `f` makes with the stored sessions where `remote` says: on that server (through its typed client), or
 * (none) in the store the settings select.
 */
export const withSessions = <A>(
  settings: Settings.Settings,
  remote: { readonly url: string; readonly token: Redacted.Redacted } | undefined,
  f: (sessions: CommandsModule.Sessions.Place) => Effect.Effect<A, CommandError>
) =>
  remote === undefined
    ? withStore(settings, ({ Sessions }) => Effect.flatMap(Sessions.local, f))
    : Effect.flatMap(commands, ({ Remote }) => Effect.scoped(Effect.flatMap(Remote.place(remote.url, remote.token), f)))

/**
 * `--yes` and `--ask`: the tool approvals of an agent nobody is at a terminal for (`harness serve`, a cluster's
 * runner).
 */
export const approvalOptions = {
  yes: flag("yes", "Allow writes and shell commands without asking (they are denied otherwise).").pipe(
    Options.withAlias("y")
  ),
  ask: flag(
    "ask",
    "Writes and shell commands wait for a client's answer (a chat with --remote, the web page, " +
      "POST /sessions/:id/approve) instead of being denied; the approval is durable."
  )
}

/** `--session`: continue a stored session. */
export const sessionOption = optionalText("session", "Continue this stored session instead of starting a new one.")

/** The session `--session` names (a unique prefix resolved where the agent lives), or none for a new one. */
export const sessionOf = ({ Runtime }: Commands, session: Option.Option<string>) =>
  Option.match(session, {
    onNone: () => Effect.succeed(undefined),
    onSome: (text) => Effect.flatMap(Runtime.Backend, (backend) => backend.resolveId(text))
  })

/** The prompt, as the words after the options. */
export const promptArg = (description: string) =>
  Args.text({ name: "prompt" }).pipe(Args.withDescription(description), Args.repeated)

/** Prints lines; text that came from a model, a tool or a file is in them, so control characters show visibly. */
export const lines = (text: ReadonlyArray<string>) => out(text.length === 0 ? "" : `${text.map(visible).join("\n")}\n`)

export const readStdin = Effect.tryPromise({
  try: async () => {
    const { text } = await import("node:stream/consumers")
    return await text(process.stdin)
  },
  catch: (e) =>
    new CommandError({ reason: "Input", message: `cannot read the prompt from standard input: ${String(e)}` })
})
