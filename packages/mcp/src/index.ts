/**
 * @since 0.0.0
 */
export * as McpError from "./McpError.js"
export * as McpSettings from "./McpSettings.js"
export * as McpTools from "./McpTools.js"
