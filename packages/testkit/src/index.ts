/**
 * @since 0.0.0
 */
export * as ChildBundle from "./ChildBundle.js"
export * as EventRecorder from "./EventRecorder.js"
export * as Events from "./Events.js"
export * as Invariants from "./Invariants.js"
export * as ScriptedModel from "./ScriptedModel.js"
