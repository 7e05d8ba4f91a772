/**
 * Tools from Model Context Protocol servers as agent tools. Each configured server — a child process spoken to
 * over stdio, or a Streamable HTTP endpoint — is connected when the toolset is built; each of its tools becomes an
 * `AgentTool` named `<server>__<tool>`, whose parameters are the server's own JSON Schema: the model sees that
 * schema, and the agent validates the model's arguments against it before anything reaches the server.
 *
 * A call is bounded in time and in size, cancelled on the server when the agent's turn is cancelled
 * (`notifications/cancelled`), and whatever a server does wrong — exits mid-call, writes a line that is not
 * JSON-RPC, answers an id it was never asked, sends a huge result — is a typed `McpError` the model can read, never
 * a wedged turn. A server that went down is started again by the next call.
 *
 * @since 0.0.0
 */
import { Tool } from "@effect/ai"
import { AgentTool } from "@harness/agent"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv"
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation/types.js"
import type { Scope } from "effect"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import * as Connection from "./internal/connection.js"
import * as Content from "./internal/content.js"
import { McpError } from "./McpError.js"
import { decodeServers, type Servers } from "./McpSettings.js"

/**
 * How to build the toolset.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  /** The servers by name, in their settings form (decoded here; a bad entry is an `InvalidConfig` error). */
  readonly servers: typeof Servers.Encoded
  /** The most characters of one result shown to the model; longer ones are cut with a marker. Default 50,000. */
  readonly maxResultChars?: number | undefined
  /** The largest message read from a stdio server, in bytes (a larger one is a `Protocol` error). Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** How long connecting and each call may take, unless a server says otherwise. Default 60 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
}

/**
 * The default {@link Options} limits.
 *
 * @since 0.0.0
 * @category constants
 */
export const defaults = {
  maxResultChars: 50_000,
  maxMessageBytes: 10 * 1024 * 1024,
  timeout: Duration.seconds(60)
} as const

// ---------------------------------------------------------------------------------------------------------------
// The toolset
// ---------------------------------------------------------------------------------------------------------------

/**
 * The name an MCP tool has for the model: `<server>__<tool>`, with every character a chat-completions function
 * name does not allow replaced by `_`, at most 64 characters.
 *
 * @since 0.0.0
 * @category utils
 */
export const toolName = (server: string, tool: string): string =>
  `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64)

/**
 * The parameters of a tool: any JSON object that passes the server's JSON Schema, advertised as that schema. It is
 * a struct schema (what `@effect/ai` wants of parameters) whose AST is the checked record.
 */
const parametersOf = (
  validate: (input: unknown) => { readonly valid: boolean; readonly errorMessage?: string | undefined },
  jsonSchema: object
) => {
  const checked = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
    Schema.filter((input) => {
      const result = validate(input)
      return result.valid || (result.errorMessage ?? "does not match the tool's input schema")
    })
  ).annotations({ jsonSchema })
  return Object.assign(Schema.make<{ readonly [x: string]: unknown }>(checked.ast), {
    fields: {},
    make: (input: { readonly [x: string]: unknown }) => input
  })
}

const compileError = (server: string, tool: string, error: unknown) =>
  new McpError({
    reason: "Protocol",
    server,
    message: `the MCP server "${server}" lists the tool "${tool}" with an input schema that cannot be used: ${
      error instanceof Error ? error.message : String(error)
    }`
  })

/**
 * Connects to every configured server (in parallel), lists its tools, and returns them as agent tools, in the
 * order of the servers and then of each server's list. The connections belong to the scope.
 *
 * Contract: each tool is exclusive (`parallel: false`), is interrupted on cancel (the server gets
 * `notifications/cancelled` for the call), and needs approval as the server's settings say (default `required`).
 * A call succeeds with the result's text, at most `maxResultChars` characters, marker included; it fails with
 * `McpError`: `ToolError` when the server reports `isError` (its text, bounded the same way), `Timeout`, `Closed`,
 * `Protocol` or `ServerError` (see `McpErrorReason`); after `Closed` or `Protocol` the next call connects again.
 * Building fails with `InvalidConfig` for settings it cannot use, and with `Connect` (or `Protocol`) naming the
 * server that cannot be started or listed; the tools are listed once, when the toolset is built.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<ReadonlyArray<AgentTool.AgentTool>, McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const servers = yield* decodeServers(options.servers)
    const maxResultChars = options.maxResultChars ?? defaults.maxResultChars
    const maxMessageBytes = options.maxMessageBytes ?? defaults.maxMessageBytes
    const timeout = Duration.decode(options.timeout ?? defaults.timeout)
    const validator = new AjvJsonSchemaValidator()

    const perServer = yield* Effect.forEach(Object.entries(servers), ([name, settings]) =>
      Effect.gen(function*() {
        const connection = yield* Connection.make({
          name,
          transport: "url" in settings
            ? { _tag: "http", url: settings.url, headers: settings.headers }
            : { _tag: "stdio", command: settings.command, args: settings.args, env: settings.env, cwd: settings.cwd },
          timeout: settings.timeout ?? timeout,
          maxMessageBytes
        })
        const listed = yield* connection.listTools
        return yield* Effect.forEach(listed, (listedTool) =>
          Effect.gen(function*() {
            // The model sees the server's schema as it is; the validator is compiled without `$schema` (servers
            // name drafts the validator may not load, and the keywords are what it checks).
            const { $schema: _dialect, ...checkable } = listedTool.inputSchema
            const validate = yield* Effect.try({
              // The schema came from JSON, so its optional keys are absent rather than `undefined`, which is all
              // that separates the SDK's listed type from the validator's.
              try: () => validator.getValidator(checkable as JsonSchemaType),
              catch: (error) => compileError(name, listedTool.name, error)
            })
            const definition = Tool.make(toolName(name, listedTool.name), {
              ...(listedTool.description === undefined ? {} : { description: listedTool.description }),
              success: Schema.String,
              failure: McpError
            }).setParameters(parametersOf(validate, listedTool.inputSchema))
            return AgentTool.make(definition, {
              approval: settings.tools[listedTool.name] ?? settings.approval,
              onCancel: "interrupt",
              parallel: false,
              handler: (params) =>
                Effect.flatMap(connection.callTool(listedTool.name, params), (result) => {
                  const text = Content.cap(Content.text(result), maxResultChars)
                  return result.isError === true
                    ? Effect.fail(new McpError({ reason: "ToolError", server: name, message: text }))
                    : Effect.succeed(text)
                })
            })
          }))
      }), { concurrency: "unbounded" })

    const tools = perServer.flat()
    const seen = new Set<string>()
    for (const tool of tools) {
      if (seen.has(tool.name)) {
        return yield* new McpError({
          reason: "InvalidConfig",
          server: tool.name.split("__")[0] ?? "",
          message: `two MCP tools have the name "${tool.name}" (server and tool names are joined by __ and cut at 64 ` +
            `characters); rename a server`
        })
      }
      seen.add(tool.name)
    }
    return tools
  })

/**
 * The MCP toolset as a service, for programs that build their agent from layers.
 *
 * @since 0.0.0
 * @category services
 */
export class McpTools extends Context.Tag("@harness/mcp/McpTools")<McpTools, {
  readonly tools: ReadonlyArray<AgentTool.AgentTool>
}>() {}

/**
 * A layer that builds the toolset with {@link make}; the servers stay connected while the layer lives.
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<McpTools, McpError> =>
  Layer.scoped(McpTools, Effect.map(make(options), (tools) => ({ tools })))
