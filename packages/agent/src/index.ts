/**
 * @since 0.0.0
 */
export * as Agent from "./Agent.js"
export * as AgentError from "./AgentError.js"
export * as AgentTool from "./AgentTool.js"
export * as Budget from "./Budget.js"
export * as CurrentRequest from "./CurrentRequest.js"
export * as Hooks from "./Hooks.js"
