/**
 * @since 0.0.0
 */
export * as Campaign from "./Campaign.js"
export * as Child from "./Child.js"
export * as Parent from "./Parent.js"
export * as Protocol from "./Protocol.js"
export * as Scenario from "./Scenario.js"
export * as Stores from "./Stores.js"
export * as Verify from "./Verify.js"
