/**
 * A tools/call result as text for the model: text blocks as they are, other blocks as one-line placeholders,
 * structured content as JSON when there is no text; bounded to the most characters a result may have, with a
 * marker that says how much was cut.
 */
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

/**
 * Text longer than `max` characters is cut, with a marker, so that the result with its marker is at most `max`
 * characters (or the marker alone, if `max` is smaller than it).
 */
export const cap = (value: string, max: number): string => {
  if (value.length <= max) return value
  const marker = (cut: number) => `\n… [truncated: ${cut} more characters of the MCP tool's result]`
  // The marker's length depends on the count it shows; two rounds settle it (the count only shrinks in digits).
  let keep = Math.max(0, max - marker(value.length).length)
  keep = Math.max(0, max - marker(value.length - keep).length)
  return `${value.slice(0, keep)}${marker(value.length - keep)}`
}
