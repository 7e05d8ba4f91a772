/**
 * @since 0.0.0
 */
export * as Client from "./Client.js"
export * as HarnessApi from "./HarnessApi.js"
export * as RemoteAgent from "./RemoteAgent.js"
export * as Server from "./Server.js"
export * as ServerError from "./ServerError.js"
