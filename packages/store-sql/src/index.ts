/**
 * @since 0.0.0
 */
export * as SqlStore from "./SqlStore.js"
