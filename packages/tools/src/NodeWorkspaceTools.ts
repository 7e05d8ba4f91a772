/**
 * The workspace toolset on Node: {@link WorkspaceTools.make} with the file system, paths and child processes of
 * `@effect/platform-node`. A separate entry point (`@harness/tools/NodeWorkspaceTools`) so that the package's main
 * entry does not load `@effect/platform-node`: it is an optional peer dependency, installed by whatever runs on
 * Node (the CLI, tests). Code that already provides a platform uses `WorkspaceTools.make` instead.
 *
 * @since 0.0.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import type { AgentTool } from "@harness/agent"
import { Effect } from "effect"
import type { WorkspaceError } from "./WorkspaceError.js"
import * as WorkspaceTools from "./WorkspaceTools.js"

/**
 * Builds the seven tools over one workspace root on Node; they need no services.
 *
 * Contract: as {@link WorkspaceTools.make}, with `NodeContext.layer` provided.
 *
 * @example
 * ```ts
 * import { Agent } from "@harness/agent"
 * import * as NodeWorkspaceTools from "@harness/tools/NodeWorkspaceTools"
 * import { Effect } from "effect"
 *
 * // The seven tools over the current directory, with a smaller output cap, handed to an agent.
 * const program = Effect.gen(function*() {
 *   const tools = yield* NodeWorkspaceTools.make({ root: ".", limits: { maxOutputChars: 8_000 } })
 *   return yield* Agent.make({ tools })
 * })
 * ```
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  options: WorkspaceTools.Options
): Effect.Effect<ReadonlyArray<AgentTool.AgentTool<never>>, WorkspaceError> =>
  WorkspaceTools.make(options).pipe(Effect.provide(NodeContext.layer))
