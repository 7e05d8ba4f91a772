/**
 * @since 0.0.0
 */
export * as McpError from "./McpError.js"
export * as McpTools from "./McpTools.js"
