/**
 * @since 0.0.0
 */
export * as JsonlStore from "./JsonlStore.js"
