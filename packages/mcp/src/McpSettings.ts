/**
 * The settings of MCP servers: the `mcpServers` object of a settings file (a command line and its arguments for a
 * server over stdio, a URL for one over Streamable HTTP, with the approval policy and a timeout) and the `--mcp`
 * flag's `<name>=<command line>` / `<name>=<url>`. This module has no dependency on the MCP SDK, so a program can
 * read and check settings without loading a client.
 *
 * @since 0.0.0
 */
import { Setting } from "@harness/domain"
import { Either, Schema } from "effect"
import { McpError } from "./McpError.js"

/**
 * Whether a tool's calls need the agent's `toolApproval` hook to allow them (`AgentTool.Approval`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const Approval = Schema.Literal("required", "none")

/**
 * A server's name: letters, digits, `_` and `-`, at most 32 characters. It prefixes its tools' names.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ServerName = Schema.String.pipe(
  Schema.filter((name) => /^[A-Za-z0-9_-]{1,32}$/.test(name) || "must be 1 to 32 letters, digits, _ or -")
)

const policy = {
  /** Whether the server's tools need approval; default `required` (a server is code Harness does not know). */
  approval: Schema.optionalWith(Approval, { default: () => "required" as const }),
  /** Per-tool approval (by the server's tool name), overriding `approval`. */
  tools: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Approval }), { default: () => ({}) }),
  /** How long connecting and each call may take (`"30 seconds"`, or milliseconds); default: the toolset's. */
  timeout: Schema.optional(Setting.DurationInput({ allowZero: false }))
}

/**
 * A server started as a child process and spoken to over its standard input and output. Its environment is
 * `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER` of this process, plus `env`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const StdioServer = Schema.Struct({
  command: Schema.NonEmptyTrimmedString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  cwd: Schema.optional(Schema.String),
  ...policy
})

/**
 * A server reached over Streamable HTTP at `url` (`http:` or `https:`), with extra request `headers`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const HttpServer = Schema.Struct({
  url: Schema.String.pipe(
    Schema.filter((url) => (URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)) || "must be an http(s) URL")
  ),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  ...policy
})

/**
 * One server's settings: `{ "command": …, "args": […] }` or `{ "url": … }`, with `approval`, `tools` and `timeout`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ServerSettings = Schema.Union(StdioServer, HttpServer)

/**
 * The servers by name — the `mcpServers` object of a settings file.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Servers = Schema.Record({ key: ServerName, value: ServerSettings })

const invalid = (server: string, message: string) => new McpError({ reason: "InvalidConfig", server, message })

const decodeEither = Schema.decodeUnknownEither(Servers, { errors: "first", onExcessProperty: "error" })

/**
 * Decodes and checks the servers (an `mcpServers` object): every key is a known setting, every value of the right
 * kind; `args` default to none, `approval` to `required`.
 *
 * Contract: fails with `InvalidConfig` naming the first bad entry and setting (`mcpServers.fx.comand is not a
 * known setting`).
 *
 * @since 0.0.0
 * @category constructors
 */
export const decodeServers = (input: unknown): Either.Either<typeof Servers.Type, McpError> =>
  Either.mapLeft(decodeEither(input), (error) => {
    const problem = Setting.problemOf(error, "mcpServers")
    const name = /^mcpServers\.([^.]+)/.exec(problem.path)?.[1] ?? ""
    return invalid(name, `the MCP server settings ${problem.path} ${problem.message}`)
  })

/**
 * Parses a `--mcp` value: `<name>=<url>` (an `http:` or `https:` URL) or `<name>=<command line>` (a program and its
 * arguments, split at spaces; single or double quotes keep spaces in an argument, a backslash escapes the next
 * character). The result is that server's settings entry.
 *
 * Contract: fails with `InvalidConfig` naming the flag value when it has no `=`, a bad name, or an empty or
 * unbalanced command line.
 *
 * @since 0.0.0
 * @category constructors
 */
export const parseFlag = (
  text: string
): Either.Either<readonly [name: string, settings: typeof ServerSettings.Encoded], McpError> => {
  const at = text.indexOf("=")
  const name = at < 0 ? "" : text.slice(0, at).trim()
  const bad = (why: string) =>
    Either.left(invalid(name, `--mcp ${JSON.stringify(text)} ${why}: use --mcp <name>=<command line> or <name>=<url>`))
  if (at < 0) return bad("has no =")
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(name)) return bad("has a name that is not 1 to 32 letters, digits, _ or -")
  const rest = text.slice(at + 1).trim()
  if (/^https?:\/\//i.test(rest)) return Either.right([name, { url: rest }])
  const words = splitCommandLine(rest)
  if (words === undefined) return bad("has an unbalanced quote")
  const [command, ...args] = words
  if (command === undefined) return bad("has no command")
  return Either.right([name, { command, args }])
}

/** Splits a command line into words (quotes and backslashes as in a POSIX shell, without expansions). */
const splitCommandLine = (line: string): Array<string> | undefined => {
  const words: Array<string> = []
  let word: string | undefined = undefined
  let quote: "'" | "\"" | undefined = undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote !== undefined) {
      if (c === quote) quote = undefined
      else if (c === "\\" && quote === "\"" && i + 1 < line.length) word = (word ?? "") + line[++i]
      else word = (word ?? "") + c
    } else if (c === "'" || c === "\"") {
      quote = c
      word = word ?? ""
    } else if (c === "\\" && i + 1 < line.length) word = (word ?? "") + line[++i]
    else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else word = (word ?? "") + c
  }
  if (quote !== undefined) return undefined
  if (word !== undefined) words.push(word)
  return words
}
