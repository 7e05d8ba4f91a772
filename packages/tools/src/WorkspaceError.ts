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
 * - `HardLink`: a file to read has more than one hard link, so it may be an outside file linked in.
 * - `Changed`: the path changed while the tool used it (another process swapped part of it, e.g. for a link);
 *   nothing outside the root was touched, and trying again is safe.
 * - `Io`: any other operating-system failure (permissions, a full disk, ...).
 *
 * @public
 * @since 0.0.0
 * @category schemas
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
  "HardLink",
  "Changed",
  "Io"
)

/**

 * @since 0.0.0

 * @category errors

 */
export type WorkspaceErrorReason = typeof WorkspaceErrorReason.Type

/**
 * The `code` of each reason: the reason in upper snake case (`PathEscape` → `PATH_ESCAPE`). The agent records a
 * failure's `code` in `tool/result.error.code`, so a log reader can tell a refused escape from a timeout without
 * parsing the message.
 *
 * @public
 * @since 0.0.0
 * @category constants
 */
export const codeOf = (reason: WorkspaceErrorReason): string =>
  reason.replace(/(?<=[a-z])(?=[A-Z])/g, "_").toUpperCase()

/**
 * A workspace tool failed. `message` is written for the model: it names the path or argument at fault and says
 * how to proceed. `path` is the path as the caller gave it, when one was involved. `code` is derived from
 * `reason` (see {@link codeOf}) and is not part of the encoded form.
 *
 * @since 0.0.0
 * @category errors
 */
export class WorkspaceError extends Schema.TaggedError<WorkspaceError>("@harness/tools/WorkspaceError")(
  "WorkspaceError",
  {
    reason: WorkspaceErrorReason,
    message: Schema.String,
    path: Schema.optional(Schema.String)
  }
) {
  /** The machine-readable code of the failure, e.g. `PATH_ESCAPE`, `TIMEOUT`. */
  get code(): string {
    return codeOf(this.reason)
  }
}
