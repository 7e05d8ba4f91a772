/**
 * The CLI's MCP servers: the `mcpServers` object of `.harness/mcp.json` in the workspace, then each `--mcp` flag (a
 * flag replaces a file entry of the same name). Their tools join the agent's; the MCP client (the SDK) is loaded
 * only when a server is configured.
 */
import { FileSystem } from "@effect/platform"
import type { AgentTool } from "@harness/agent"
import * as McpSettings from "@harness/mcp/McpSettings"
import type { Scope } from "effect"
import { Effect, Either, Option, Schema } from "effect"
import { CommandError, SettingsError } from "../CliError.js"
import type { McpServer } from "../Settings.js"
import { redactText } from "./redact.js"

const File = Schema.parseJson(
  Schema.Struct({ mcpServers: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
)

/**
 * Reads the servers of the settings `file` (`.harness/mcp.json`; none when there is no file) and the flags' servers,
 * in that order, checked.
 */
export const resolve = (file: string, flags: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const servers = new Map<string, McpServer>()
    const text = yield* Effect.option(fs.readFileString(file))
    if (Option.isSome(text)) {
      const parsed = Schema.decodeUnknownEither(File)(text.value)
      if (Either.isLeft(parsed)) {
        return yield* new SettingsError({
          setting: "mcp",
          message: `${file} is not a settings file: it must be JSON of the form ` +
            `{ "mcpServers": { "<name>": { "command": …, "args": […] } | { "url": … } } }`
        })
      }
      const checked = McpSettings.decodeServers(parsed.right.mcpServers)
      if (Either.isLeft(checked)) {
        return yield* new SettingsError({ setting: "mcp", message: `${file}: ${checked.left.message}` })
      }
      for (const [name, value] of Object.entries(checked.right)) {
        servers.set(name, { name, value, origin: `file ${file}` })
      }
    }
    for (const flag of flags) {
      const parsed = McpSettings.parseFlag(flag)
      if (Either.isLeft(parsed)) {
        return yield* new SettingsError({ setting: "--mcp", message: redactText(parsed.left.message) })
      }
      const [name, value] = parsed.right
      const checked = McpSettings.decodeServers({ [name]: value })
      if (Either.isLeft(checked)) {
        return yield* new SettingsError({ setting: "--mcp", message: redactText(checked.left.message) })
      }
      servers.set(name, { name, value: checked.right[name]!, origin: "flag --mcp" })
    }
    return [...servers.values()]
  })

/** The servers' tools, connected for the scope; a server that cannot be used is a `CommandError` naming it. */
export const tools = (
  servers: ReadonlyArray<McpServer>
): Effect.Effect<ReadonlyArray<AgentTool.AgentTool>, CommandError, Scope.Scope> =>
  Effect.flatMap(
    Effect.promise(() => import("@harness/mcp/McpTools")),
    (McpTools) =>
      McpTools.make({ servers: Object.fromEntries(servers.map((server) => [server.name, server.value])) }).pipe(
        Effect.mapError((error) =>
          new CommandError({
            reason: "Input",
            message: `the MCP server "${error.server}": ${redactText(error.message)} (harness config lists the servers)`
          })
        )
      )
  )
