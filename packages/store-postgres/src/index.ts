/**
 * @since 0.0.0
 */
export * as PostgresStore from "./PostgresStore.js"
