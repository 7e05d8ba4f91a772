/**
 * @since 0.0.0
 */
export * as AgentEvent from "./AgentEvent.js"
export * as Content from "./Content.js"
export * as Ids from "./Ids.js"
export * as Inbox from "./Inbox.js"
export * as Input from "./Input.js"
export * as Json from "./Json.js"
export * as LlmFailure from "./LlmFailure.js"
export * as Message from "./Message.js"
export * as MessageSource from "./MessageSource.js"
export * as ModelStream from "./ModelStream.js"
export * as Operations from "./Operations.js"
export * as SessionEvent from "./SessionEvent.js"
export * as SessionLogError from "./SessionLogError.js"
export * as Setting from "./Setting.js"
export * as Store from "./Store.js"
export * as Turn from "./Turn.js"
