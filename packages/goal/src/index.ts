/**
 * @since 0.0.0
 */
export * as GoalCommand from "./GoalCommand.js"
export * as GoalError from "./GoalError.js"
export * as GoalReplay from "./GoalReplay.js"
export * as Goals from "./Goals.js"
export * as GoalState from "./GoalState.js"
