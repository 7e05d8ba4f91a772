/**
 * @since 0.0.0
 */
export * as HarnessApi from "./HarnessApi.js"
export * as ServerError from "./ServerError.js"
export * as Server from "./Server.js"
export * as Client from "./Client.js"
