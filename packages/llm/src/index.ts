/**
 * @since 0.0.0
 */
export * as ChatCompletions from "./ChatCompletions.js"

/**
 * @since 0.0.0
 */
export * as ChatCompletionsSettings from "./ChatCompletionsSettings.js"
