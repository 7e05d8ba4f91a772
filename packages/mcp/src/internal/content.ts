/**
 * A tools/call result as text for the model: text blocks as they are, other blocks as one-line placeholders,
 * structured content as JSON when there is no text; bounded to the most characters a result may have, with a
 * marker that says how much was cut.
 */
import { AgentTool } from "@harness/agent"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

const block = (content: CallToolResult["content"][number]): string => {
  switch (content.type) {
    case "text":
      return content.text
    case "image":
      return `[image: ${content.mimeType}, ${content.data.length} characters of base64 not shown]`
    case "audio":
      return `[audio: ${content.mimeType}, ${content.data.length} characters of base64 not shown]`
    case "resource":
      return "text" in content.resource
        ? content.resource.text
        : `[resource ${content.resource.uri}: binary content not shown]`
    case "resource_link":
      return `[resource link: ${content.uri}${content.description === undefined ? "" : ` — ${content.description}`}]`
  }
}

/** The result's text, before the bound. */
export const text = (result: CallToolResult): string => {
  const parts = result.content.map(block)
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return parts.join("\n")
}

/** The result's text bounded to `max` characters, marker included (`AgentTool.capText`). */
export const cap = (value: string, max: number): string =>
  AgentTool.capText(value, max, (cut) => `\n… [truncated: ${cut} more characters of the MCP tool's result]`)
