/**
 * @since 0.0.0
 */
export * as ChatCompletions from "./ChatCompletions.js"
