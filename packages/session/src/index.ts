/**
 * @since 0.0.0
 */
export * as Closers from "./Closers.js"
export * as History from "./History.js"
export * as LogCheck from "./LogCheck.js"
export * as SessionError from "./SessionError.js"
export * as SessionLog from "./SessionLog.js"
export * as SessionLogError from "./SessionLogError.js"
export * as Sessions from "./Sessions.js"
export * as SessionStore from "./SessionStore.js"
export * as SessionStoreError from "./SessionStoreError.js"
