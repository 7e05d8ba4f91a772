/**
 * Who produced a message. "Is this a human prompt?" is answered by `source.kind === "user"`, never by an event
 * type. New kinds are added in one place: {@link kinds}.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { SessionId, ToolCallId } from "./Ids.js"
import { JsonObject, NonNegativeInt, PositiveInt } from "./Json.js"

/**
 * A human (or a host that attests a human) prompt.
 *
 * @since 0.0.0
 * @category schemas
 */
export const UserSource = Schema.Struct({
  kind: Schema.Literal("user")
}).annotations({ identifier: "UserSource" })

/**
 * Any program. The `plugin` name is preserved verbatim and may be empty.
 *
 * @since 0.0.0
 * @category schemas
 */
export const PluginSource = Schema.Struct({
  kind: Schema.Literal("plugin"),
  plugin: Schema.String
}).annotations({ identifier: "PluginSource" })

/**
 * The goal system. `round: 0` is a goal state change and must carry the complete `change`; `round ≥ 1` is an
 * admitted continuation prompt and must not.
 *
 * @since 0.0.0
 * @category schemas
 */
export const GoalSource = Schema.Struct({
  kind: Schema.Literal("goal"),
  goalId: Schema.String.pipe(Schema.minLength(1, { message: () => "goalId must be a non-empty string" })),
  revision: PositiveInt,
  round: NonNegativeInt,
  change: Schema.optionalWith(JsonObject, { exact: true })
}).pipe(
  Schema.filter((source) =>
    source.round === 0
      ? source.change !== undefined || {
        path: ["change"],
        message: "a goal source with round 0 is a goal state change and must carry its `change`"
      }
      : source.change === undefined || {
        path: ["change"],
        message: `a goal source with round ${source.round} is a continuation prompt and must not carry a \`change\``
      }
  ),
  Schema.annotations({ identifier: "GoalSource" })
)

/**
 * A parent agent's subagent tool (`@harness/subagents`): the child session's prompt carries it, so the child's own
 * log names its parent durably — the parent's session, the tool call that spawned it and the subagent's name.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SubagentSource = Schema.Struct({
  kind: Schema.Literal("subagent"),
  parent: SessionId,
  callId: ToolCallId,
  agent: Schema.String
}).annotations({ identifier: "SubagentSource" })

/**
 * Every source kind. Add a kind here and everything that decodes sources accepts it.
 *
 * @since 0.0.0
 * @category constants
 */
export const kinds = [UserSource, PluginSource, GoalSource, SubagentSource] as const

/**
 * A message source, keyed by `kind`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const MessageSource = Schema.Union(...kinds).annotations({ identifier: "MessageSource" })
/**
 * @since 0.0.0
 * @category models
 */
export type MessageSource = typeof MessageSource.Type

/**
 * The human source.
 *
 * @since 0.0.0
 * @category constructors
 */
export const user: MessageSource = { kind: "user" }

/**
 * A program's source.
 *
 * @since 0.0.0
 * @category constructors
 */
export const plugin = (plugin: string): MessageSource => ({ kind: "plugin", plugin })
