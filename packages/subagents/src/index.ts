/**
 * @since 0.0.0
 */
export * as SubagentError from "./SubagentError.js"
export * as Subagents from "./Subagents.js"
export * as SubagentTool from "./SubagentTool.js"
