/**
 * The `harness` command line, built with `@effect/cli`: `run`, `chat`, `demo`, `sessions …`, `config`, `serve`,
 * `cluster runner` and `mcp`.
 * Every command accepts the global settings (`--model`, `--base-url`, `--store`, `--workspace`, `--offline`), which can
 * also come from the environment (see `Settings`). `bin.ts` only wires this to Node.
 *
 * @since 0.0.0
 */
import { Command, Options } from "@effect/cli"
import type { ValidationError } from "@effect/cli"
import type { ConfigError } from "effect"
import { Config, Effect, Option, Redacted } from "effect"
import { createRequire } from "node:module"
import type { CommandError } from "./CliError.js"
import { SettingsError } from "./CliError.js"
import {
  approvalOptions,
  flag,
  global,
  hostOption,
  lines,
  optionalInteger,
  optionalText,
  promptArg,
  readStdin,
  remoteOf,
  remoteOptions,
  sessionOf,
  sessionOption,
  settingsOf,
  withAgent,
  withBackend
} from "./internal/cliSupport.js"
import { cluster } from "./internal/clusterCommand.js"
import { diagnostics, plainConsole, visible } from "./internal/output.js"
import { redactText } from "./internal/redact.js"
import { serve } from "./internal/serve.js"
import { sessions } from "./internal/sessionsCommand.js"
import * as Settings from "./Settings.js"

// --- run ---------------------------------------------------------------------------------------------------------

const run = Command.make(
  "run",
  {
    ...global,
    json: flag("json", "Print every live and durable event as one JSON object per line (NDJSON)."),
    yes: approvalOptions.yes,
    session: sessionOption,
    goal: flag(
      "goal",
      "Make the prompt a goal's objective and keep running rounds until the goal is complete, blocked or paused; " +
        "exit code 1 unless it is complete."
    ),
    ...remoteOptions,
    maxRounds: optionalInteger("max-rounds", "With --goal: the most rounds the goal may run (default 256)."),
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
    continue: flag("continue", "Continue the session of this store (or server) that was active last.").pipe(
      Options.withAlias("c")
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

// --- config ------------------------------------------------------------------------------------------------------

const config = Command.make(
  "config",
  {
    ...global,
    describe: flag("describe", "Say under each setting what it means.")
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
    expose: optionalText(
      "expose",
      "The operations served as MCP tools, comma-separated, from send, followup, steer, inject, inbox, withdraw, " +
        "edit, move, promote, demote, receipt, compact, approvals, approve, cancel, status, events (default: " +
        "status,events,inbox,followup). With approve, a tool call that needs approval waits for the client's answer."
    ),
    http: optionalInteger(
      "http",
      "Serve over Streamable HTTP at http://<host>:<port>/mcp instead of stdio (0 picks a free port); every " +
        "request needs Authorization: Bearer $HARNESS_MCP_TOKEN."
    ),
    host: hostOption("The address --http listens on (default 127.0.0.1, this machine only).")
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
  Command.withSubcommands([
    run,
    chat,
    demo,
    sessions,
    config,
    serve,
    cluster,
    mcp
  ])
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
