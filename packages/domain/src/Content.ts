/**
 * Content blocks: the pieces of every message Harness logs. A tool call keeps the model's raw argument text
 * verbatim, even when it is not valid JSON, so the log records exactly what the model produced.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { ToolCallId } from "./Ids.js"

/**
 * Visible text.
 *
 * @since 0.0.0
 * @category schemas
 */
export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
}).annotations({ identifier: "TextBlock" })
/**
 * @since 0.0.0
 * @category models
 */
export type TextBlock = typeof TextBlock.Type

/**
 * Model thinking, kept apart from text.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ReasoningBlock = Schema.Struct({
  type: Schema.Literal("reasoning"),
  text: Schema.String
}).annotations({ identifier: "ReasoningBlock" })
/**
 * @since 0.0.0
 * @category models
 */
export type ReasoningBlock = typeof ReasoningBlock.Type

/**
 * A tool call as the model produced it. `arguments` is the raw JSON text, never parsed in the log.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolCallBlock = Schema.Struct({
  type: Schema.Literal("tool-call"),
  id: ToolCallId,
  name: Schema.String,
  arguments: Schema.String
}).annotations({ identifier: "ToolCallBlock" })
/**
 * @since 0.0.0
 * @category models
 */
export type ToolCallBlock = typeof ToolCallBlock.Type

/**
 * The answer to a tool call.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool-result"),
  toolCallId: ToolCallId,
  content: Schema.Array(TextBlock),
  isError: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations({ identifier: "ToolResultBlock" })
/**
 * @since 0.0.0
 * @category models
 */
export type ToolResultBlock = typeof ToolResultBlock.Type

/**
 * Any content block, keyed by `type`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ContentBlock = Schema.Union(TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock)
/**
 * @since 0.0.0
 * @category models
 */
export type ContentBlock = typeof ContentBlock.Type

/**
 * What an assistant message can hold: text, reasoning and tool calls.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AssistantBlock = Schema.Union(TextBlock, ReasoningBlock, ToolCallBlock)
/**
 * @since 0.0.0
 * @category models
 */
export type AssistantBlock = typeof AssistantBlock.Type

/**
 * Builds a text block.
 *
 * @since 0.0.0
 * @category constructors
 */
export const text = (text: string): TextBlock => ({ type: "text", text })

/**
 * Joins the text of text blocks, skipping other blocks.
 *
 * @since 0.0.0
 * @category utils
 */
export const joinText = (blocks: ReadonlyArray<ContentBlock>): string => {
  let out = ""
  for (const block of blocks) if (block.type === "text") out += block.text
  return out
}
