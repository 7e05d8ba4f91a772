/**
 * @since 0.0.0
 */
export * as SqliteStore from "./SqliteStore.js"
