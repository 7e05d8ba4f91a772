/**
 * The built-in workspace toolset: `read_file`, `list_dir`, `find_files`, `grep`, `write_file`, `edit_file` and
 * `shell`, as `AgentTool`s confined to one workspace root. Reads run in parallel without approval; writes and
 * `shell` are exclusive and need the agent's approval. Every result is text for the model, and every cut of a
 * large output is marked in it with how to get the rest.
 *
 * @since 0.0.0
 */
import { Tool } from "@effect/ai"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { FileSystem } from "@effect/platform/FileSystem"
import type { Path } from "@effect/platform/Path"
import { AgentTool } from "@harness/agent"
import { Setting } from "@harness/domain"
import type { Context } from "effect"
import { Duration, Effect, Either, Schema } from "effect"
import * as Read from "./internal/read.js"
import { capOutput } from "./internal/render.js"
import * as Search from "./internal/search.js"
import * as Commands from "./internal/shell.js"
import * as Write from "./internal/write.js"
import * as Workspace from "./Workspace.js"
import { WorkspaceError } from "./WorkspaceError.js"

// ---------------------------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------------------------

/**
 * The limits of the toolset. Whatever a limit cuts is marked in the result (`… [truncated: ...]`).
 *
 * @since 0.0.0
 * @category models
 */
export interface Limits {
  /** The largest file `read_file` and `edit_file` load, in bytes (larger: `TooLarge`). Default 10 MiB. */
  readonly maxFileBytes: number
  /** The most lines one `read_file` call returns (also the cap of its `limit`). Default 2000. */
  readonly maxReadLines: number
  /** The longest line shown by `read_file` and `grep`; longer lines are cut with a marker. Default 2000. */
  readonly maxLineChars: number
  /** The most characters of any one result; `read_file` stops at a whole line before it. Default 50,000. */
  readonly maxOutputChars: number
  /** The most entries `list_dir` shows. Default 1000. */
  readonly maxListEntries: number
  /** The most paths `find_files` returns (also the cap of its `limit`). Default 1000. */
  readonly maxFindResults: number
  /** The cap of `grep`'s `maxMatches` (which defaults to 100). Default 1000. */
  readonly maxGrepMatches: number
  /** The most files one `grep` call searches. Default 10,000. */
  readonly maxGrepFiles: number
  /** `grep` skips files larger than this, in bytes (and says so). Default 1 MiB. */
  readonly maxGrepFileBytes: number
  /** `shell`'s timeout when the call gives none. Default 2 minutes. */
  readonly shellTimeout: Duration.DurationInput
  /** The cap of `shell`'s `timeoutSeconds`. Default 10 minutes. */
  readonly maxShellTimeout: Duration.DurationInput
  /** The most bytes of `shell` output (stdout and stderr together) kept: the last ones. Default 50,000. */
  readonly maxShellOutputBytes: number
  /** How long a killed process tree gets between SIGTERM and SIGKILL. Default 2 seconds. */
  readonly shellKillGrace: Duration.DurationInput
}

/**
 * The default {@link Limits}.
 *
 * @since 0.0.0
 * @category constants
 */
export const defaultLimits: Limits = {
  maxFileBytes: 10 * 1024 * 1024,
  maxReadLines: 2000,
  maxLineChars: 2000,
  maxOutputChars: 50_000,
  maxListEntries: 1000,
  maxFindResults: 1000,
  maxGrepMatches: 1000,
  maxGrepFiles: 10_000,
  maxGrepFileBytes: 1024 * 1024,
  shellTimeout: Duration.minutes(2),
  maxShellTimeout: Duration.minutes(10),
  maxShellOutputBytes: 50_000,
  shellKillGrace: Duration.seconds(2)
}

const PositiveDuration = Setting.DurationInput({ allowZero: false })

/** The limits as a schema: what {@link makeLimits} decodes the merged limits with. */
const LimitsSchema = Schema.Struct({
  maxFileBytes: Setting.PositiveInt,
  maxReadLines: Setting.PositiveInt,
  maxLineChars: Setting.PositiveInt,
  maxOutputChars: Setting.PositiveInt,
  maxListEntries: Setting.PositiveInt,
  maxFindResults: Setting.PositiveInt,
  maxGrepMatches: Setting.PositiveInt,
  maxGrepFiles: Setting.PositiveInt,
  maxGrepFileBytes: Setting.PositiveInt,
  shellTimeout: PositiveDuration,
  maxShellTimeout: PositiveDuration,
  maxShellOutputBytes: Setting.PositiveInt,
  shellKillGrace: PositiveDuration
})

const decodeLimits = Schema.decodeUnknownEither(LimitsSchema, { errors: "first", onExcessProperty: "error" })

/**
 * Completes partial limits with the defaults and checks them (with a schema of the limits).
 *
 * Contract: fails with `InvalidArgument` naming the first limit that is not a positive integer (counts) or a
 * positive duration (durations), or that is not a limit at all.
 *
 * @since 0.0.0
 * @category constructors
 */
export const makeLimits = (limits?: Partial<Limits> | undefined): Effect.Effect<Limits, WorkspaceError> =>
  Either.match(decodeLimits({ ...defaultLimits, ...limits }), {
    onRight: Effect.succeed,
    onLeft: (error) => {
      const problem = Setting.problemOf(error, "limits")
      return Effect.fail(
        new WorkspaceError({ reason: "InvalidArgument", message: `${problem.path} ${problem.message}.` })
      )
    }
  })

// ---------------------------------------------------------------------------------------------------------------
// Tool definitions (what the model sees)
// ---------------------------------------------------------------------------------------------------------------

/**
 * A number `> 0` (an integer with `integer`), written as a plain filter: `Schema.positive()` and `Schema.Int` would
 * leak `"title": "positive"` / `"title": "int"` into the JSON Schema the model sees.
 */
const positive = (integer: boolean, description: string) =>
  Schema.Number.pipe(Schema.filter(
    (n) => (integer && !Number.isSafeInteger(n) ? "must be an integer" : n > 0 || "must be greater than 0"),
    { description, jsonSchema: { type: integer ? "integer" : "number", exclusiveMinimum: 0, description } }
  ))

const PositiveInt = (description: string) => positive(true, description)

const PathParam = (description: string) => Schema.String.annotations({ description })

/**
 * `read_file`: numbered lines of a text file, paged by `offset`/`limit`.
 *
 * @since 0.0.0
 * @category tools
 */
export const ReadFile = Tool.make("read_file", {
  description: "Read a text file in the workspace. Returns its lines numbered as `<number>\\t<text>`. " +
    "Long files are returned in pages: the result ends with a `[truncated: ...; use offset=N to read on]` marker " +
    "when there is more. Use grep to find lines in large files.",
  parameters: {
    path: PathParam("The file, relative to the workspace root."),
    offset: Schema.optional(PositiveInt("The 1-based line to start at (default 1).")),
    limit: Schema.optional(PositiveInt("The most lines to return."))
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.OpenWorld, false)

/**
 * `list_dir`: the entries of one directory.
 *
 * @since 0.0.0
 * @category tools
 */
export const ListDir = Tool.make("list_dir", {
  description: "List the entries of a directory in the workspace, sorted by name: directories end with `/`, " +
    "files show their size, symbolic links show `-> target`.",
  parameters: {
    path: Schema.optional(PathParam("The directory, relative to the workspace root (default: the root)."))
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.OpenWorld, false)

/**
 * `find_files`: files matching a glob, sorted.
 *
 * @since 0.0.0
 * @category tools
 */
export const FindFiles = Tool.make("find_files", {
  description: "Find files whose path matches a glob pattern (`*`, `**`, `?`, `[abc]`, `{a,b}`), e.g. " +
    "`**/*.ts` or `src/**/test_*.py`. Returns workspace-relative paths, sorted, one per line. `.git` and " +
    "`node_modules` are skipped unless includeIgnored is true.",
  parameters: {
    pattern: Schema.String.annotations({ description: "The glob, relative to `path`." }),
    path: Schema.optional(PathParam("The directory to search from (default: the workspace root).")),
    limit: Schema.optional(PositiveInt("The most paths to return.")),
    includeIgnored: Schema.optional(
      Schema.Boolean.annotations({ description: "Also search `.git` and `node_modules` (default false)." })
    )
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.OpenWorld, false)

/**
 * `grep`: lines matching a regular expression (RE2 syntax).
 *
 * @since 0.0.0
 * @category tools
 */
export const Grep = Tool.make("grep", {
  description: "Search file contents for a regular expression (RE2 syntax, as in ripgrep: no backreferences or " +
    "lookaround). Returns `path:line: text` for each matching line. Binary files, `.git` and `node_modules` are " +
    "skipped (the last two unless includeIgnored).",
  parameters: {
    pattern: Schema.String.annotations({
      description: "A regular expression in RE2 syntax without slashes or flags, e.g. `function\\s+main`."
    }),
    path: Schema.optional(PathParam("A file or directory to search (default: the workspace root).")),
    glob: Schema.optional(
      Schema.String.annotations({ description: "Only search files matching this glob, relative to `path`." })
    ),
    ignoreCase: Schema.optional(Schema.Boolean.annotations({ description: "Match case-insensitively." })),
    maxMatches: Schema.optional(
      PositiveInt("Stop after this many matching lines (default 100).")
    ),
    includeIgnored: Schema.optional(
      Schema.Boolean.annotations({ description: "Also search `.git` and `node_modules` (default false)." })
    )
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.OpenWorld, false)

/**
 * `write_file`: creates or replaces a file, with its parent directories.
 *
 * @since 0.0.0
 * @category tools
 */
export const WriteFile = Tool.make("write_file", {
  description: "Create a file, or replace a file's whole content. Missing parent directories are created. " +
    "To change part of an existing file, prefer edit_file.",
  parameters: {
    path: PathParam("The file, relative to the workspace root."),
    content: Schema.String.annotations({ description: "The complete new content of the file." })
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.Idempotent, true).annotate(Tool.OpenWorld, false)

/**
 * `edit_file`: replaces one exact, unique occurrence of a string (or all, with `replaceAll`).
 *
 * @since 0.0.0
 * @category tools
 */
export const EditFile = Tool.make("edit_file", {
  description: "Replace an exact piece of text in a file. `oldString` must occur exactly once (include enough " +
    "surrounding lines to make it unique), or set replaceAll to replace every occurrence. Whitespace and " +
    "indentation must match the file exactly.",
  parameters: {
    path: PathParam("The file, relative to the workspace root."),
    oldString: Schema.String.annotations({ description: "The exact text to replace." }),
    newString: Schema.String.annotations({ description: "The text to put in its place." }),
    replaceAll: Schema.optional(
      Schema.Boolean.annotations({ description: "Replace every occurrence instead of exactly one (default false)." })
    )
  },
  success: Schema.String,
  failure: WorkspaceError
}).annotate(Tool.OpenWorld, false)

/**
 * `shell`: runs a command (argv or a `sh -c` line) in the workspace.
 *
 * @since 0.0.0
 * @category tools
 */
export const Shell = Tool.make("shell", {
  description: "Run a command in the workspace: either `command`, a shell line run with `sh -c` (pipes and " +
    "redirections allowed), or `argv`, a program and its arguments run without a shell. Returns the combined " +
    "stdout and stderr (the end of it, if long) and the exit code. Standard input is empty. The command is " +
    "killed, with every process it started, when it times out; background processes do not outlive it.",
  parameters: {
    command: Schema.optional(Schema.String.annotations({ description: "A shell command line (run with `sh -c`)." })),
    argv: Schema.optional(
      Schema.NonEmptyArray(Schema.String).annotations({
        description: "A program and its arguments, e.g. [\"git\", \"status\"]; give this or `command`."
      })
    ),
    cwd: Schema.optional(PathParam("The working directory, relative to the workspace root (default: the root).")),
    timeoutSeconds: Schema.optional(
      positive(false, "Kill the command after this many seconds (default 120, at most 600).")
    )
  },
  success: Schema.String,
  failure: WorkspaceError
})

// ---------------------------------------------------------------------------------------------------------------
// The table: each tool's definition, handler and policy
// ---------------------------------------------------------------------------------------------------------------

/**
 * How a tool runs among others: `parallel` (`false`: each call is a barrier), whether the agent asks for
 * `approval`, what a cancel does to a running call (`onCancel`), and whether a call a crash cut is run again when
 * the session resumes (`replay`, R172: only the reading tools, which are safe to repeat).
 *
 * @public
 * @since 0.0.0
 * @category models
 */
export interface Policy {
  readonly parallel: boolean
  readonly approval: AgentTool.Approval
  readonly onCancel: AgentTool.CancelPolicy
  readonly replay: AgentTool.Replay
}

/**
 * One row of the toolset: the definition the model sees, its policy, and `handler`, which builds the tool over a
 * workspace with the limits as given (build them with {@link makeLimits}).
 *
 * Contract: every result of a built tool passes the last guard — at most `maxOutputChars` characters, its
 * truncation marker included.
 *
 * @public
 * @since 0.0.0
 * @category models
 */
export interface Row<R> {
  readonly tool: Tool.Any
  readonly policy: Policy
  readonly handler: (workspace: Workspace.Workspace, limits: Limits) => AgentTool.AgentTool<R>
}

/** Reads run in parallel, need no approval, are interrupted on cancel and are safe to repeat after a crash. */
const reading: Policy = { parallel: true, approval: "none", onCancel: "interrupt", replay: "safe" }

/** Writes are exclusive, need approval and finish on cancel: the write is atomic and short, so finishing keeps the
 * logged result true to the disk. */
const writing: Policy = { parallel: false, approval: "required", onCancel: "finish", replay: "never" }

/** `shell` is exclusive, needs approval and is interrupted on cancel, which kills its whole process tree. */
const running: Policy = { parallel: false, approval: "required", onCancel: "interrupt", replay: "never" }

/** The last guard on every result: at most `maxOutputChars` characters, marker included. */
const guard = <R>(tool: AgentTool.AgentTool<R>, limits: Limits): AgentTool.AgentTool<R> => ({
  ...tool,
  handler: (params, context) =>
    Effect.map(
      tool.handler(params, context),
      (result) => (typeof result === "string" ? capOutput(result, limits.maxOutputChars) : result)
    )
})

const row = <T extends Tool.Any, R>(
  tool: T,
  policy: Policy,
  run: (
    workspace: Workspace.Workspace,
    limits: Limits,
    params: Tool.Parameters<T>
  ) => Effect.Effect<Tool.Success<T>, Tool.Failure<T>, R>
): Row<R> => ({
  tool,
  policy,
  handler: (workspace, limits) =>
    guard(AgentTool.make(tool, { ...policy, handler: (params) => run(workspace, limits, params) }), limits)
})

/**
 * The seven tools, in the order {@link make} builds them: `read_file`, `list_dir`, `find_files`, `grep` (reading),
 * `write_file`, `edit_file` (writing), `shell` (running).
 *
 * @public
 * @since 0.0.0
 * @category tools
 */
export const toolset: ReadonlyArray<Row<FileSystem | Path | CommandExecutor>> = [
  row(ReadFile, reading, Read.readFile),
  row(ListDir, reading, Read.listDir),
  row(FindFiles, reading, Search.findFiles),
  row(Grep, reading, Search.grep),
  row(WriteFile, writing, Write.writeFile),
  row(EditFile, writing, Write.editFile),
  row(Shell, running, Commands.run)
]

// ---------------------------------------------------------------------------------------------------------------
// The toolset
// ---------------------------------------------------------------------------------------------------------------

/**
 * How to build the toolset.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The workspace root: an existing directory, absolute or relative to the process's working directory. */
  readonly root: string
  /** Overrides of {@link defaultLimits}. */
  readonly limits?: Partial<Limits> | undefined
}

/**
 * Gives a tool its services once, so its handler needs nothing from the agent's context.
 *
 * @public
 * @since 0.0.0
 * @category layers
 */
export const provide = <R>(tool: AgentTool.AgentTool<R>, context: Context.Context<R>): AgentTool.AgentTool<never> => ({
  ...tool,
  handler: (params, callContext) => Effect.provide(tool.handler(params, callContext), context)
})

/**
 * Builds the seven tools over one workspace root, in the order `read_file`, `list_dir`, `find_files`, `grep`,
 * `write_file`, `edit_file`, `shell`.
 *
 * Contract: fails with a `WorkspaceError` when the root is not an existing directory (`NotFound`,
 * `NotADirectory`) or a limit is invalid (`InvalidArgument`). The `FileSystem`, `Path` and `CommandExecutor` in
 * context are captured here, so the tools require nothing (`AgentTool<never>`). Policies: reads are parallel
 * with no approval; `write_file`, `edit_file` and `shell` are exclusive and need approval; writes finish on
 * cancel, everything else is interrupted (`shell` with its whole process tree).
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options: Options
): Effect.Effect<
  ReadonlyArray<AgentTool.AgentTool<never>>,
  WorkspaceError,
  FileSystem | Path | CommandExecutor
> =>
  Effect.gen(function*() {
    const limits = yield* makeLimits(options.limits)
    const workspace = yield* Workspace.make(options.root)
    const context = yield* Effect.context<FileSystem | Path | CommandExecutor>()
    return toolset.map(({ handler }) => provide(handler(workspace, limits), context))
  })
