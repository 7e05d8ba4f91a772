/**
 * @since 0.0.0
 */
export * as AgentEntity from "./AgentEntity.js"
export * as ClusterAgent from "./ClusterAgent.js"
export * as ClusterConfig from "./ClusterConfig.js"
export * as RemoteAgent from "./RemoteAgent.js"
export * as Retention from "./Retention.js"
