/**
 * The one error of the MCP package. An MCP tool fails with it, so the agent shows the model its `message` — which
 * names the server and says what went wrong — and the session log records it as data (`tool/result.error.code` is
 * the reason in upper snake case). Building the tools fails with it too, when a server is misconfigured or cannot
 * be started.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * Why an MCP operation failed.
 *
 * - `InvalidConfig`: a server's configuration cannot be used (a bad `--mcp` value, a bad settings entry, two tools
 *   with the same name).
 * - `Connect`: the server could not be started or reached, or did not complete the MCP handshake.
 * - `Closed`: the server went away during the call (a stdio server exited, an HTTP server dropped the session); the
 *   next call starts it again.
 * - `Timeout`: the call ran past its timeout; the server was told with `notifications/cancelled`.
 * - `Protocol`: the server broke the protocol (a line that is not JSON-RPC, a response to an id that was never
 *   asked, a message over the size bound); its connection is dropped and the next call starts it again.
 * - `ServerError`: the server answered the request with a JSON-RPC error (an unknown tool, invalid params).
 * - `ToolError`: the tool ran and reported an error (`isError: true`); the message is the tool's own text.
 *
 * @since 0.0.0
 * @category schemas
 */
export const McpErrorReason = Schema.Literal(
  "InvalidConfig",
  "Connect",
  "Closed",
  "Timeout",
  "Protocol",
  "ServerError",
  "ToolError"
)

/**
 * @since 0.0.0
 * @category models
 */
export type McpErrorReason = typeof McpErrorReason.Type

/**
 * An MCP server or one of its tools failed. `server` names the configured server; `message` is written for the
 * model and for a person reading the log. `code` is derived from `reason` (`ToolError` → `TOOL_ERROR`) and is not
 * part of the encoded form.
 *
 * @since 0.0.0
 * @category errors
 */
export class McpError extends Schema.TaggedError<McpError>("@harness/mcp/McpError")("McpError", {
  reason: McpErrorReason,
  server: Schema.String,
  message: Schema.String
}) {
  /** The machine-readable code of the failure, e.g. `TIMEOUT`, `PROTOCOL`. */
  get code(): string {
    return this.reason.replace(/(?<=[a-z])(?=[A-Z])/g, "_").toUpperCase()
  }
}
