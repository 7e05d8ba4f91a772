/**
 * A subagent as a tool of its parent: one named `AgentTool` per configured subagent. The model calls it with a
 * `task`; the call runs a child `Agent` on its own session (`Subagents.spawn`) and answers with the child's
 * `Outcome` — its status and final answer — as the call's structured output.
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import { Tool } from "@effect/ai"
import { AgentTool } from "@harness/agent"
import { Effect, Schema } from "effect"
import type { Spec } from "./Subagents.js"
import { Outcome, Subagents } from "./Subagents.js"

/**
 * A subagent tool's configuration: the child's {@link Spec}, what the parent's model is told about it, and the
 * call's policies.
 *
 * - `onCancel`: what the parent's cancel does to a running foreground child — `interrupt` (default: the child is
 *   cancelled with cause `parent` and the call answers `ABORTED`) or `finish` (the child runs to its end and the call
 *   keeps its real outcome).
 * - `approval`: whether spawning the child needs the parent's `toolApproval` hook (default `none`).
 *
 * @since 0.0.0
 * @category models
 */
export interface Config extends Spec {
  readonly description: string
  readonly onCancel?: AgentTool.CancelPolicy | undefined
  readonly approval?: AgentTool.Approval | undefined
}

/**
 * The parameters the parent's model passes: the child's task, which becomes its first prompt.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Parameters = {
  task: Schema.String.annotations({ description: "The whole task for the subagent, self-contained" })
}

/**
 * Makes the tool named `config.name`. Calls run in parallel (several children at once).
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (config: Config): AgentTool.AgentTool<Subagents | LanguageModel.LanguageModel> =>
  AgentTool.make(
    Tool.make(config.name, { description: config.description, parameters: Parameters, success: Outcome }),
    {
      handler: ({ task }, context) =>
        Effect.flatMap(Subagents, (subagents) =>
          subagents.spawn(config, task, { parent: context.agent, callId: context.callId })),
      parallel: true,
      onCancel: config.onCancel,
      approval: config.approval
    }
  )
