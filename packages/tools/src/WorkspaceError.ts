/**
 * The one error of the workspace tools. Every tool fails with it, so the agent loop shows the model its `message`
 * — which always says what was wrong and what to do instead — and the session log can record it as data.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * Why a workspace operation failed.
 *
 * - `PathEscape`: the path leaves the workspace root (`..`, an absolute path elsewhere, a symbolic link out).
 * - `SymlinkLoop`: resolving the path runs into a cycle of symbolic links.
 * - `NotFound`: the path does not exist.
 * - `NotAFile` / `NotADirectory`: the path exists but has the wrong type.
 * - `TooLarge`: the file is over the configured size limit.
 * - `Binary`: the file holds binary data (a NUL byte) and the tool shows text only.
 * - `NoMatch` / `Ambiguous`: `edit_file`'s `oldString` occurs zero times, or more than once without `replaceAll`.
 * - `InvalidPattern`: a regular expression or glob pattern is malformed or not allowed.
 * - `InvalidArgument`: the arguments are well-typed but make no sense together (also: invalid `limits`).
 * - `Timeout`: a `shell` command ran past its timeout; its process tree was killed.
 * - `Io`: any other operating-system failure (permissions, a full disk, ...).
 *
 * @since 0.0.0
 */
export const WorkspaceErrorReason = Schema.Literal(
  "PathEscape",
  "SymlinkLoop",
  "NotFound",
  "NotAFile",
  "NotADirectory",
  "TooLarge",
  "Binary",
  "NoMatch",
  "Ambiguous",
  "InvalidPattern",
  "InvalidArgument",
  "Timeout",
  "Io"
)

/** @since 0.0.0 */
export type WorkspaceErrorReason = typeof WorkspaceErrorReason.Type

/**
 * A workspace tool failed. `message` is written for the model: it names the path or argument at fault and says
 * how to proceed. `path` is the path as the caller gave it, when one was involved.
 *
 * @since 0.0.0
 */
export class WorkspaceError extends Schema.TaggedError<WorkspaceError>("@harness/tools/WorkspaceError")(
  "WorkspaceError",
  {
    reason: WorkspaceErrorReason,
    message: Schema.String,
    path: Schema.optional(Schema.String)
  }
) {}
