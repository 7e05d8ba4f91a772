/**
 * @since 0.0.0
 */
export * as Workspace from "./Workspace.js"
export * as WorkspaceError from "./WorkspaceError.js"
export * as WorkspaceTools from "./WorkspaceTools.js"
