/**
 * The CLI's errors and their exit codes: 2 for a flag or setting it cannot use (as for a malformed flag), 1 for a
 * turn or command that failed.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * A setting was given a value the CLI cannot use. `setting` names it (e.g. `--store`); `message` says what is
 * accepted. Exit code 2.
 *
 * @since 0.0.0
 * @category errors
 */
export class SettingsError extends Schema.TaggedError<SettingsError>("@harness/cli/SettingsError")("SettingsError", {
  setting: Schema.String,
  message: Schema.String
}) {}

/**
 * A command could not do its work: a turn that did not complete, a goal that ended blocked or paused, a session
 * that does not exist, a store that failed, a write or shell command `run` denied for want of `--yes`. `message` says what happened and what to do. Exit code 1.
 *
 * @since 0.0.0
 * @category errors
 */
export class CommandError extends Schema.TaggedError<CommandError>("@harness/cli/CommandError")("CommandError", {
  reason: Schema.Literal("TurnFailed", "GoalNotDone", "SessionNotFound", "Store", "Model", "Input", "Denied", "Remote"),
  message: Schema.String
}) {}

/**
 * Every error the CLI fails with, as one union (exit code 2 for `SettingsError`, 1 for `CommandError`).
 *
 * @since 0.0.0
 * @category errors
 */
export type CliError = SettingsError | CommandError

/**
 * The schema of `CliError`.
 *
 * @since 0.0.0
 * @category errors
 */
export const CliError = Schema.Union(SettingsError, CommandError)
