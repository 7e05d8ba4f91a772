/** `harness sessions …`: list, show, export, fork, resume, compact and rm, here or on a server (`--remote`). */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import type { CommandError } from "../CliError.js"
import type * as Settings from "../Settings.js"
import {
  global,
  lines,
  optionalInteger,
  optionalText,
  promptArg,
  remoteOf,
  remoteOptions,
  settingsOf,
  withBackend,
  withSessions
} from "./cliSupport.js"
import type * as CommandsModule from "./commands.js"
import { diagnostics, out, visible } from "./output.js"
import { storeFlags } from "./settings.js"

const idArg = Args.text({ name: "id" }).pipe(Args.withDescription("A session id, or a unique prefix of one."))

const atOption = optionalInteger("at", "Fork at this seq (cut back to the last turn boundary at or before it).")

const instructionOption = optionalText(
  "instruction",
  "What the summary should keep or focus on, instead of the default instruction."
)

/** The options every `sessions` subcommand takes: the global ones and `--remote`. */
const placeOptions = { ...global, ...remoteOptions }

/** The parsed `--remote` options. */
type RemoteFlags = Parameters<typeof remoteOf>[0]

/** Where a `sessions` subcommand runs: its settings, and the server `--remote` names (`undefined`: here). */
const placeOf = (config: Settings.Flags & RemoteFlags) =>
  Effect.all({ settings: settingsOf(config), remote: remoteOf(config) })

/** Runs what `f` makes with the stored sessions where the subcommand's options say. */
const atPlace = <A>(
  config: Settings.Flags & RemoteFlags,
  f: (sessions: CommandsModule.Sessions.Place) => Effect.Effect<A, CommandError>
) => Effect.flatMap(placeOf(config), ({ remote, settings }) => withSessions(settings, remote, f))

const sessionsList = Command.make("list", placeOptions, (config) =>
  Effect.gen(function*() {
    yield* lines(yield* atPlace(config, (sessions) => sessions.list))
  })).pipe(Command.withDescription(
    "List the stored sessions (with --remote, a server's).\nExamples:\n  harness sessions list\n" +
      "  harness sessions list --remote http://127.0.0.1:8787"
  ))

const sessionsShow = Command.make(
  "show",
  { ...placeOptions, id: idArg },
  (config) =>
    Effect.gen(function*() {
      yield* lines(yield* atPlace(config, (sessions) => sessions.show(config.id)))
    })
).pipe(Command.withDescription(
  "Show a session as a timeline of turns, steps, messages, tool calls and inbox events, then check its log.\n" +
    "Examples:\n  harness sessions show 3f2a\n  harness sessions show --remote http://127.0.0.1:8787 3f2a"
))

const sessionsExport = Command.make(
  "export",
  {
    ...placeOptions,
    format: Options.choice("format", ["jsonl", "md"]).pipe(
      Options.withDescription("jsonl: the stored records as they are; md: a readable transcript."),
      Options.withDefault("jsonl" as const)
    ),
    id: idArg
  },
  (config) =>
    Effect.gen(function*() {
      const text = yield* atPlace(config, (sessions) => sessions.exportSession(config.id, config.format))
      // JSON Lines stay exact; the Markdown transcript is for reading, so its control characters show visibly.
      yield* out(`${config.format === "md" ? visible(text) : text}\n`)
    })
).pipe(Command.withDescription(
  "Export a session to standard output.\nExamples:\n  harness sessions export 3f2a > session.jsonl\n" +
    "  harness sessions export --format md 3f2a\n  harness sessions export --remote http://127.0.0.1:8787 3f2a"
))

const sessionsRm = Command.make("rm", { ...placeOptions, id: idArg }, (config) =>
  Effect.gen(function*() {
    const id = yield* atPlace(config, (sessions) => sessions.remove(config.id))
    yield* out(`removed session ${id}\n`)
  })).pipe(Command.withDescription(
    "Remove a stored session (with --remote, the token needs the admin scope).\nExample:\n  harness sessions rm 3f2a"
  ))

const sessionsFork = Command.make(
  "fork",
  { ...placeOptions, at: atOption, id: idArg },
  (config) =>
    Effect.gen(function*() {
      const { remote, settings } = yield* placeOf(config)
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
    // The id comes first: positional arguments are read in this order, and the prompt takes all the rest.
    ...placeOptions,
    id: idArg,
    prompt: promptArg("Run this prompt in the session (as `run`); without it, open a chat on the session.")
  },
  (config) =>
    Effect.gen(function*() {
      const { remote, settings } = yield* placeOf(config)
      const prompt = config.prompt.join(" ").trim()
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
  { ...placeOptions, instruction: instructionOption, id: idArg },
  (config) =>
    Effect.gen(function*() {
      const { remote, settings } = yield* placeOf(config)
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

/** The `sessions` command and its subcommands. */
export const sessions = Command.make("sessions").pipe(
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
