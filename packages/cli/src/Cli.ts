/**
 * The `harness` command line, built with `@effect/cli`: `run`, `chat`, `demo`, `sessions …`, `config` and `mcp`.
 * Every command accepts the global settings (`--model`, `--base-url`, `--store`, `--workspace`, `--offline`), which can
 * also come from the environment (see `Settings`). `bin.ts` only wires this to Node.
 *
 * @since 0.0.0
 */
import { Args, Command, Options } from "@effect/cli"
import type { ValidationError } from "@effect/cli"
import type { ConfigError } from "effect"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { createRequire } from "node:module"
import { CommandError, SettingsError } from "./CliError.js"
import type * as CommandsModule from "./internal/commands.js"
import { diagnostics, out, plainConsole, visible } from "./internal/output.js"
import { redactText } from "./internal/redact.js"
import { serve } from "./internal/serve.js"
import { storeFlags } from "./internal/settings.js"
import * as Settings from "./Settings.js"

const global = {
  model: Options.text("model").pipe(
    Options.withDescription("The model name (default: offline, or deepseek-v4-flash when an API key is set)."),
    Options.optional
  ),
  baseUrl: Options.text("base-url").pipe(
    Options.withDescription("An OpenAI-compatible chat-completions server, e.g. http://localhost:8080/v1."),
    Options.optional
  ),
  store: Options.text("store").pipe(
    Options.withDescription(
      "Where sessions live: sqlite:<file> | jsonl:<dir> | postgres://… | memory (default: sqlite:.harness/sessions.db in the workspace)."
    ),
    Options.optional
  ),
  workspace: Options.directory("workspace").pipe(
    Options.withDescription("The directory the workspace tools are confined to (default: the current directory)."),
    Options.optional
  ),
  offline: Options.boolean("offline").pipe(
    Options.withDescription("Use the offline model even when an API key is configured.")
  ),
  mcp: Options.text("mcp").pipe(
    Options.withDescription(
      "An MCP server whose tools the agent gets: <name>=<command line> (stdio) or <name>=<url> (Streamable HTTP); " +
        "repeatable; added to .harness/mcp.json's."
    ),
    Options.repeated
  ),
  maxSteps: Options.integer("max-steps").pipe(
    Options.withDescription("The most steps one turn may take (default 50): a turn that reaches it ends (budget)."),
    Options.optional
  ),
  maxTurnTokens: Options.integer("max-turn-tokens").pipe(
    Options.withDescription("The most tokens one turn may use."),
    Options.optional
  ),
  maxSessionTokens: Options.integer("max-session-tokens").pipe(
    Options.withDescription("The most tokens the session may use, counted from its log (across resumes)."),
    Options.optional
  ),
  maxSessionCost: Options.float("max-session-cost").pipe(
    Options.withDescription("The most the session may cost, priced by HARNESS_PRICES (JSON per model)."),
    Options.optional
  ),
  turnTimeout: Options.float("turn-timeout").pipe(
    Options.withDescription("The most seconds one turn may take; a running step is interrupted when it passes."),
    Options.optional
  ),
  contextWindow: Options.integer("context-window").pipe(
    Options.withDescription(
      "The model's context window in tokens: a request estimated past 80% of it first compacts the history " +
        "(summarises it; the log keeps everything). Default: the model's entry in HARNESS_CONTEXT_WINDOWS, else " +
        "none: nothing compacts by itself."
    ),
    Options.optional
  ),
  compactThreshold: Options.float("compact-threshold").pipe(
    Options.withDescription(
      "The share of the context window (0 < t ≤ 1) an estimated request may reach before the history is compacted " +
        "(default 0.8)."
    ),
    Options.optional
  )
}

/**
 * The settings, checked: with an `LLM_*` setting set, the provider's own checks run too (loading the provider), so
 * a value it would refuse is a setting error (exit code 2) in every command, `config` included.
 */
const settingsOf = (flags: Settings.Flags) =>
  Effect.tap(Settings.resolve(flags), (settings) =>
    settings.llm.some((setting) => setting.origin.startsWith("env"))
      ? Effect.flatMap(Effect.promise(() => import("./internal/providerCheck.js")), (check) => check.check(settings))
      : Effect.void)

/** What the commands run: the agent, the session log, the stores, the tools, the goals, the model. */
type Commands = typeof CommandsModule

/**
 * What the commands run, loaded when one runs: it is most of the CLI's code, and `--help`, `--version`, `config` and
 * a bad flag need none of it (start-up, `test/startup.test.ts`).
 */
const commands: Effect.Effect<Commands> = Effect.promise(() => import("./internal/commands.js"))

/** The session store the settings select. */
const storeLayer = ({ Runtime }: Commands, settings: Settings.Settings) =>
  Runtime.storeLayer(settings.store.value).pipe(
    Layer.mapError((e) =>
      new CommandError({
        reason: "Store",
        message:
          `cannot open the session store ${Settings.showStore(settings.store.value)}: ${redactText(e.message)} ` +
          `(check --store or HARNESS_STORE; harness config shows which one is used)`
      })
    )
  )

/** The model the settings select; a setting it cannot use is a `SettingsError` (exit code 2). */
const modelLayer = ({ Runtime }: Commands, settings: Settings.Settings) =>
  Runtime.modelLayer(settings).pipe(
    Layer.mapError((e) =>
      new SettingsError({
        setting: "model",
        message: `the model is misconfigured: ${redactText(String(e))} (harness config shows every setting)`
      })
    )
  )

/** Runs what `f` makes with the commands' code, provided with the session store the settings select. */
const withStore = <A, E, R>(settings: Settings.Settings, f: (loaded: Commands) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(commands, (loaded) => Effect.provide(f(loaded), storeLayer(loaded, settings)))

/** `withStore` with the model too, and the agent in this process as `Runtime.Backend`: what runs the agent here. */
const withAgent = <A, E, R>(settings: Settings.Settings, f: (loaded: Commands) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    commands,
    (loaded) =>
      f(loaded).pipe(
        Effect.provide(loaded.Runtime.layerLocal),
        Effect.provide(storeLayer(loaded, settings)),
        Effect.provide(modelLayer(loaded, settings))
      )
  )

/** `--remote` and `--remote-token`: the agent of a Harness server instead of one in this process. */
const remoteOptions = {
  remote: Options.text("remote").pipe(
    Options.withDescription(
      "Talk to the agent on a Harness server (harness serve) at this URL instead of running it here; the store, " +
        "model and tools are the server's."
    ),
    Options.optional
  ),
  remoteToken: Options.redacted("remote-token").pipe(
    Options.withDescription("The server's bearer token with --remote (default: HARNESS_REMOTE_TOKEN)."),
    Options.optional
  )
}

/** The server `--remote` names and its token (the flag, else `HARNESS_REMOTE_TOKEN`), or none. */
const remoteOf = (config: {
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
const withBackend = <A, E>(
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
const withSessions = <A>(
  settings: Settings.Settings,
  remote: { readonly url: string; readonly token: Redacted.Redacted } | undefined,
  f: (sessions: CommandsModule.Sessions.Place) => Effect.Effect<A, CommandError>
) =>
  remote === undefined
    ? withStore(settings, ({ Sessions }) => Effect.flatMap(Sessions.local, f))
    : Effect.flatMap(commands, ({ Remote }) => Effect.scoped(Effect.flatMap(Remote.place(remote.url, remote.token), f)))

/** `--session`: continue a stored session. */
const sessionOption = Options.text("session").pipe(
  Options.withDescription("Continue this stored session instead of starting a new one."),
  Options.optional
)

/** The session `--session` names (a unique prefix resolved where the agent lives), or none for a new one. */
const sessionOf = ({ Runtime }: Commands, session: Option.Option<string>) =>
  Option.match(session, {
    onNone: () => Effect.succeed(undefined),
    onSome: (text) => Effect.flatMap(Runtime.Backend, (backend) => backend.resolveId(text))
  })

/** The prompt, as the words after the options. */
const promptArg = (description: string) =>
  Args.text({ name: "prompt" }).pipe(Args.withDescription(description), Args.repeated)

/** Prints lines; text that came from a model, a tool or a file is in them, so control characters show visibly. */
const lines = (text: ReadonlyArray<string>) => out(text.length === 0 ? "" : `${text.map(visible).join("\n")}\n`)

const readStdin = Effect.tryPromise({
  try: async () => {
    const { text } = await import("node:stream/consumers")
    return await text(process.stdin)
  },
  catch: (e) =>
    new CommandError({ reason: "Input", message: `cannot read the prompt from standard input: ${String(e)}` })
})

// --- run ---------------------------------------------------------------------------------------------------------

const run = Command.make(
  "run",
  {
    ...global,
    json: Options.boolean("json").pipe(
      Options.withDescription("Print every live and durable event as one JSON object per line (NDJSON).")
    ),
    yes: Options.boolean("yes").pipe(
      Options.withAlias("y"),
      Options.withDescription("Allow writes and shell commands without asking (they are denied otherwise).")
    ),
    session: sessionOption,
    goal: Options.boolean("goal").pipe(
      Options.withDescription(
        "Make the prompt a goal's objective and keep running rounds until the goal is complete, blocked or " +
          "paused; exit code 1 unless it is complete."
      )
    ),
    ...remoteOptions,
    maxRounds: Options.integer("max-rounds").pipe(
      Options.withDescription("With --goal: the most rounds the goal may run (default 256)."),
      Options.optional
    ),
    prompt: promptArg("The prompt; `-` reads it from standard input.")
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const unknown = config.prompt.find((word) => /^--?[A-Za-z]/.test(word))
      if (unknown !== undefined) {
        return yield* new SettingsError({
          setting: unknown,
          message: `unknown option ${unknown} (harness run --help lists the options; quote a prompt that starts with -)`
        })
      }
      if (Option.isSome(config.maxRounds) && (!config.goal || config.maxRounds.value < 1)) {
        return yield* new SettingsError({
          setting: "--max-rounds",
          message: config.goal
            ? `--max-rounds must be a positive whole number, not ${config.maxRounds.value}`
            : "--max-rounds only applies with --goal: harness run --goal --max-rounds 5 \"make the tests pass\""
        })
      }
      const joined = config.prompt.join(" ").trim()
      const prompt = joined === "-" ? (yield* readStdin).trim() : joined
      if (prompt === "") {
        return yield* new SettingsError({
          setting: "prompt",
          message: "the prompt is empty: harness run \"your question\""
        })
      }
      const remote = yield* remoteOf(config)
      yield* withBackend(
        settings,
        remote,
        (loaded) =>
          Effect.flatMap(sessionOf(loaded, config.session), (session) =>
            loaded.Run.run(settings, {
              prompt,
              json: config.json,
              yes: config.yes,
              session,
              goal: config.goal ? { maxRounds: Option.getOrUndefined(config.maxRounds) } : undefined
            })).pipe(Effect.provide(diagnostics(config.json)))
      )
    })
).pipe(Command.withDescription(
  "Run one prompt until the agent is idle and print the answer (with --goal: until the goal is complete, blocked " +
    "or paused); exit code 1 if a turn failed or the goal is not complete.\n" +
    "Examples:\n" +
    "  harness run \"list the files\"\n" +
    "  echo \"grep TODO\" | harness run -\n" +
    "  harness run --json \"read README.md\" > events.ndjson\n" +
    "  harness run --goal --max-rounds 5 \"list the files, then summarise the README\"\n" +
    "  HARNESS_REMOTE_TOKEN=… harness run --remote http://127.0.0.1:8787 \"list the files\""
))

// --- demo --------------------------------------------------------------------------------------------------------

const demo = Command.make("demo", global, (config) =>
  Effect.gen(function*() {
    const settings = yield* settingsOf({ ...config, offline: true })
    yield* withAgent(settings, ({ Demo }) => Demo.demo(settings))
  })).pipe(Command.withDescription(
    "A scripted walkthrough on the offline model: a tool call on the workspace, a queued follow-up, a steer, an " +
      "injection, a withdraw, a cancel that keeps the inbox and a two-round goal; it ends with where the session is " +
      "stored.\nExamples:\n  harness demo\n  harness demo --store memory"
  ))

// --- chat --------------------------------------------------------------------------------------------------------

const chat = Command.make(
  "chat",
  {
    ...global,
    session: sessionOption,
    continue: Options.boolean("continue").pipe(
      Options.withAlias("c"),
      Options.withDescription("Continue the session of this store (or server) that was active last.")
    ),
    ...remoteOptions
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      if (config.continue && Option.isSome(config.session)) {
        return yield* new SettingsError({
          setting: "--continue",
          message: "--continue and --session both name the session: give one of them"
        })
      }
      const remote = yield* remoteOf(config)
      yield* withBackend(
        settings,
        remote,
        (loaded) =>
          Effect.flatMap(
            config.continue ? loaded.Chat.latest : sessionOf(loaded, config.session),
            (session) => loaded.Chat.chat(settings, session)
          )
      )
    })
).pipe(Command.withDescription(
  "Talk to the agent while it works. Enter steers a running turn; `/queue text` (or `+text`) queues a follow-up; " +
    "`/inject text` adds context; `/inbox` lists pending items, `/drop N` withdraws one, `/promote N` turns one into " +
    "steering, `/move N M` reorders; Up on an empty prompt edits the last queued item in place; `/goal set|show|pause|resume|clear`; Esc or Ctrl-C cancels the turn " +
    "keeping the inbox; a second Ctrl-C within a second discards it (or exits when idle). `/help` lists every command. " +
    "On a stored session (--session, --continue) it shows the conversation so far and the restored inbox, which " +
    "waits until you press Enter.\nExamples:\n  harness chat --workspace .\n  harness chat --continue\n" +
    "  HARNESS_REMOTE_TOKEN=… harness chat --remote http://127.0.0.1:8787"
))

// --- sessions ----------------------------------------------------------------------------------------------------

const idArg = Args.text({ name: "id" }).pipe(Args.withDescription("A session id, or a unique prefix of one."))

const sessionsList = Command.make("list", { ...global, ...remoteOptions }, (config) =>
  Effect.gen(function*() {
    const settings = yield* settingsOf(config)
    yield* lines(yield* withSessions(settings, yield* remoteOf(config), (sessions) => sessions.list))
  })).pipe(Command.withDescription(
    "List the stored sessions (with --remote, a server's).\nExamples:\n  harness sessions list\n" +
      "  harness sessions list --remote http://127.0.0.1:8787"
  ))

const sessionsShow = Command.make(
  "show",
  { ...global, ...remoteOptions, id: idArg },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      yield* lines(yield* withSessions(settings, yield* remoteOf(config), (sessions) => sessions.show(config.id)))
    })
).pipe(Command.withDescription(
  "Show a session as a timeline of turns, steps, messages, tool calls and inbox events, then check its log.\n" +
    "Examples:\n  harness sessions show 3f2a\n  harness sessions show --remote http://127.0.0.1:8787 3f2a"
))

const sessionsExport = Command.make(
  "export",
  {
    ...global,
    ...remoteOptions,
    format: Options.choice("format", ["jsonl", "md"]).pipe(
      Options.withDescription("jsonl: the stored records as they are; md: a readable transcript."),
      Options.withDefault("jsonl" as const)
    ),
    id: idArg
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const text = yield* withSessions(
        settings,
        yield* remoteOf(config),
        (sessions) => sessions.exportSession(config.id, config.format)
      )
      // JSON Lines stay exact; the Markdown transcript is for reading, so its control characters show visibly.
      yield* out(`${config.format === "md" ? visible(text) : text}\n`)
    })
).pipe(Command.withDescription(
  "Export a session to standard output.\nExamples:\n  harness sessions export 3f2a > session.jsonl\n" +
    "  harness sessions export --format md 3f2a\n  harness sessions export --remote http://127.0.0.1:8787 3f2a"
))

const sessionsRm = Command.make("rm", { ...global, ...remoteOptions, id: idArg }, (config) =>
  Effect.gen(function*() {
    const settings = yield* settingsOf(config)
    const id = yield* withSessions(settings, yield* remoteOf(config), (sessions) => sessions.remove(config.id))
    yield* out(`removed session ${id}\n`)
  })).pipe(Command.withDescription(
    "Remove a stored session (with --remote, the token needs the admin scope).\nExample:\n  harness sessions rm 3f2a"
  ))

const sessionsFork = Command.make(
  "fork",
  {
    ...global,
    ...remoteOptions,
    at: Options.integer("at").pipe(
      Options.withDescription("Fork at this seq (cut back to the last turn boundary at or before it)."),
      Options.optional
    ),
    id: idArg
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const remote = yield* remoteOf(config)
      const result = yield* withSessions(
        settings,
        remote,
        (sessions) => sessions.fork(config.id, Option.getOrUndefined(config.at))
      )
      const flags = remote === undefined ? storeFlags(settings, process.cwd()) : ` --remote ${remote.url}`
      yield* out(
        `forked ${result.from} at #${result.cut} into ${result.to} (${result.events} events)\n` +
          (flags === undefined ? "" : `continue it: harness sessions resume${flags} ${result.to}\n`)
      )
    })
).pipe(Command.withDescription(
  "Copy a session's log (up to a turn boundary) into a new session.\nExamples:\n  harness sessions fork 3f2a --at 20\n" +
    "  harness sessions fork --remote http://127.0.0.1:8787 3f2a"
))

const sessionsResume = Command.make(
  "resume",
  {
    ...global,
    // The id comes first: positional arguments are read in this order, and the prompt takes all the rest.
    ...remoteOptions,
    id: idArg,
    prompt: promptArg("Run this prompt in the session (as `run`); without it, open a chat on the session.")
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const prompt = config.prompt.join(" ").trim()
      const remote = yield* remoteOf(config)
      yield* withBackend(
        settings,
        remote,
        ({ Chat, Run, Runtime }) =>
          Effect.flatMap(Effect.flatMap(Runtime.Backend, (backend) => backend.resolveId(config.id)), (session) =>
            prompt === ""
              ? Chat.chat(settings, session)
              : Run.run(settings, { prompt, json: false, yes: false, session }).pipe(
                Effect.provide(diagnostics(false))
              ))
      )
    })
).pipe(Command.withDescription(
  "Continue a stored session: a chat, or one prompt.\nExamples:\n  harness sessions resume 3f2a\n" +
    "  harness sessions resume 3f2a \"and now grep TODO\""
))

const sessionsCompact = Command.make(
  "compact",
  {
    ...global,
    ...remoteOptions,
    instruction: Options.text("instruction").pipe(
      Options.withDescription("What the summary should keep or focus on, instead of the default instruction."),
      Options.optional
    ),
    id: idArg
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const remote = yield* remoteOf(config)
      const instruction = Option.getOrUndefined(config.instruction)?.trim()
      const done = yield* withBackend(
        settings,
        remote,
        ({ Compact }) => Compact.compact(config.id, settings, instruction === "" ? undefined : instruction)
      )
      const r = done.record
      yield* out(
        `compacted session ${done.id}: seqs 0–${r.through} (${r.messages} message${r.messages === 1 ? "" : "s"}, ` +
          `~${r.estimate} tokens) are now a summary of ${r.summary.length} characters by ${r.model} ` +
          `(the compaction record is #${done.seq})\n`
      )
    })
).pipe(Command.withDescription(
  "Summarise a stored session's history now (a manual compaction): later requests carry the summary instead of " +
    "what it replaced; the log keeps everything.\nExamples:\n  harness sessions compact 3f2a\n" +
    "  harness sessions compact 3f2a --instruction \"keep the file names\""
))

const sessions = Command.make("sessions").pipe(
  Command.withDescription("Stored sessions: list, show, export, fork, resume, compact, rm."),
  Command.withSubcommands([
    sessionsList,
    sessionsShow,
    sessionsExport,
    sessionsFork,
    sessionsResume,
    sessionsCompact,
    sessionsRm
  ])
)

// --- config ------------------------------------------------------------------------------------------------------

const config = Command.make(
  "config",
  {
    ...global,
    describe: Options.boolean("describe").pipe(Options.withDescription("Say under each setting what it means."))
  },
  (flags) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(flags)
      yield* lines(Settings.render(settings, { describe: flags.describe }))
    })
).pipe(Command.withDescription(
  "Print every setting — the CLI's own and the chat-completions provider's LLM_* ones — with its value and where " +
    "it came from (flag, environment, default); secrets are redacted.\nExamples:\n  DEEPSEEK_API_KEY=… harness config\n" +
    "  harness config --describe"
))

// --- mcp ---------------------------------------------------------------------------------------------------------

const mcp = Command.make(
  "mcp",
  {
    ...global,
    session: sessionOption,
    expose: Options.text("expose").pipe(
      Options.withDescription(
        "The operations served as MCP tools, comma-separated, from send, followup, steer, inject, inbox, withdraw, " +
          "edit, move, promote, demote, receipt, compact, approvals, approve, cancel, status, events (default: " +
          "status,events,inbox,followup). With approve, a tool call that needs approval waits for the client's answer."
      ),
      Options.optional
    ),
    http: Options.integer("http").pipe(
      Options.withDescription(
        "Serve over Streamable HTTP at http://<host>:<port>/mcp instead of stdio (0 picks a free port); every " +
          "request needs Authorization: Bearer $HARNESS_MCP_TOKEN."
      ),
      Options.optional
    ),
    host: Options.text("host").pipe(
      Options.withDescription("The address --http listens on (default 127.0.0.1, this machine only)."),
      Options.withDefault("127.0.0.1")
    )
  },
  (config) =>
    Effect.gen(function*() {
      const settings = yield* settingsOf(config)
      const Mcp = yield* Effect.promise(() => import("./internal/mcp.js"))
      const expose = Option.match(config.expose, { onNone: () => Mcp.defaultExpose, onSome: Mcp.parseExpose })
      if (typeof expose === "string") return yield* new SettingsError({ setting: "--expose", message: expose })
      const port = Option.getOrUndefined(config.http)
      const http = port === undefined ? undefined : yield* Effect.gen(function*() {
        const token = yield* Config.option(Config.redacted(Mcp.tokenVariable))
        if (Option.isNone(token) || Redacted.value(token.value).trim() === "") {
          return yield* new SettingsError({
            setting: Mcp.tokenVariable,
            message: `--http needs a bearer token: set ${Mcp.tokenVariable} (e.g. to $(openssl rand -hex 16)); ` +
              "every request must carry Authorization: Bearer <it>"
          })
        }
        return { port, host: config.host, token: token.value }
      })
      yield* withAgent(settings, (loaded) =>
        Effect.flatMap(
          sessionOf(loaded, config.session),
          (session) => Mcp.serve(settings, { expose, session, http })
        ))
    })
).pipe(Command.withDescription(
  "Serve an agent's operations (send, steer, inbox, cancel, approve, …) as MCP tools over stdio, or over " +
    "Streamable HTTP with --http (bearer token in HARNESS_MCP_TOKEN), for another agent or an MCP client; the " +
    "workspace tools stay the agent's own.\nExamples:\n  harness mcp\n" +
    "  harness mcp --expose status,events,inbox,followup,steer,cancel --session 3f2a\n" +
    "  HARNESS_MCP_TOKEN=$(openssl rand -hex 16) harness mcp --http 8788"
))

// --- root --------------------------------------------------------------------------------------------------------

/**
 * The `harness` command and its subcommands.
 *
 * @since 0.0.0
 * @category commands
 */
export const command = Command.make("harness").pipe(
  Command.withDescription(
    "Harness: an agent you can talk to while it works. Runs offline (no API key) until DEEPSEEK_API_KEY or " +
      "--base-url is set.\nStart with: harness demo"
  ),
  Command.withSubcommands([run, chat, demo, sessions, config, serve({ global, settingsOf, withAgent }), mcp])
)

/**
 * Every failure a command can end with.
 *
 * @since 0.0.0
 * @category models
 */
export type Failure = SettingsError | CommandError | ConfigError.ConfigError | ValidationError.ValidationError

/**
 * The version `--version` prints: the package's own, from the package.json one folder up from this module (from
 * `src/` in the workspace, from `dist/` installed, and from the bundle `dist/harness.mjs`, which holds this module).
 * The cast: `require` of JSON is untyped, and the manifest is ours.
 */
const packageVersion = (createRequire(import.meta.url)("../package.json") as { readonly version: string }).version

/**
 * Runs the command line over `argv` (as `process.argv`: node, script, then arguments).
 *
 * @since 0.0.0
 * @category commands
 */
export const run_ = Command.run(command, { name: "harness", version: packageVersion })

export {
  /**
   * Runs the command line over `argv` (the same function as `run_`).
   *
   * @since 0.0.0
   * @category commands
   */
  run_ as run
}

/**
 * Runs `effect` with a console that prints plain text (no colour codes) to a stream that is not a colour terminal,
 * or when `NO_COLOR` is set — `@effect/cli` colours its help and errors otherwise.
 *
 * @since 0.0.0
 * @category utils
 */
export const plainWhenNotATerminal = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(plainConsole, (console) => Effect.withConsole(effect, console))

/**
 * The exit code of a failure: 2 for a bad flag or setting (a `ConfigError` is one: an environment value the CLI
 * cannot read), 1 otherwise.
 *
 * @since 0.0.0
 * @category utils
 */
export const exitCode = (failure: Failure): number => failure._tag === "CommandError" ? 1 : 2

/** Text without the stack-trace lines a foreign error's message may carry (`    at f (/path/file.js:1:2)`). */
const withoutStack = (text: string): string =>
  text.split("\n").filter((line) => !/^\s+at\s/.test(line)).join("\n").trim()

/**
 * A failure as the line printed before exiting (`ValidationError`s are printed by `@effect/cli` itself).
 *
 * @since 0.0.0
 * @category utils
 */
export const describeFailure = (failure: Failure): string | undefined => {
  // Messages may quote a provider, a store or a model: no credential, no terminal control sequence and no stack
  // trace (with the host's file paths) gets out.
  const safe = (text: string) => visible(redactText(withoutStack(text)))
  switch (failure._tag) {
    case "SettingsError":
      return `harness: ${safe(failure.message)}`
    case "CommandError":
      return `harness: ${safe(failure.message)}`
    default:
      return "error" in failure ? undefined : `harness: configuration: ${safe(String(failure))}`
  }
}
