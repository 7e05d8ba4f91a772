/**
 * The history fold behind `History`: a persistent `Chunk` of frozen `Prompt` messages, extended by one message at
 * most per event.
 */
import { Prompt } from "@effect/ai"
import { Content, type SessionEvent, ToolArguments } from "@harness/domain"
import { Chunk, Either } from "effect"
import type { History } from "../History.js"

export const TypeId: unique symbol = Symbol.for("@harness/session/History")
export type TypeId = typeof TypeId

export const optionsKey = ToolArguments.harnessKey

const make = (messages: Chunk.Chunk<Prompt.Message>): History =>
  Object.freeze({ [TypeId]: messages, length: messages.length })

export const empty: History = make(Chunk.empty())

/**
 * The model's raw argument text as a tool call's `params`: `{}` for empty text, the parsed value for valid JSON,
 * and the raw text itself otherwise (the provider sends `rawArguments` back anyway).
 */
export const paramsOf = (raw: string): unknown => Either.getOrElse(ToolArguments.parse(raw), () => raw)

const textParts = (content: ReadonlyArray<Content.TextBlock>): ReadonlyArray<Prompt.TextPart> =>
  Object.freeze(content.map((block) => Object.freeze(Prompt.makePart("text", { text: block.text }))))

const assistantPart = (block: Content.AssistantBlock): Prompt.AssistantMessagePart => {
  switch (block.type) {
    case "text":
      return Object.freeze(Prompt.makePart("text", { text: block.text }))
    case "reasoning":
      return Object.freeze(Prompt.makePart("reasoning", { text: block.text }))
    case "tool-call":
      return Object.freeze(Prompt.makePart("tool-call", {
        id: block.id,
        name: block.name,
        params: paramsOf(block.arguments),
        providerExecuted: false,
        options: Object.freeze({ [optionsKey]: Object.freeze({ rawArguments: block.arguments }) })
      }))
  }
}

/** The message an event contributes to the history, if any. */
export const messageOf = (event: SessionEvent.SessionEvent): Prompt.Message | undefined => {
  switch (event.type) {
    case "user/message":
    case "steering/message":
      return Object.freeze(Prompt.userMessage({ content: textParts(event.data.content) }))
    case "assistant/message": {
      const { content } = event.data
      if (content.length === 0) return undefined
      return Object.freeze(Prompt.assistantMessage({
        content: Object.freeze(content.map(assistantPart)),
        options: Object.freeze({ [optionsKey]: Object.freeze({ provenance: event.data.provenance }) })
      }))
    }
    case "tool/result": {
      const { callId, content, isError, name } = event.data
      const result = Content.joinText(content)
      return Object.freeze(Prompt.toolMessage({
        content: Object.freeze([
          Object.freeze(
            Prompt.toolResultPart({ id: callId, name, isFailure: isError, result, providerExecuted: false })
          )
        ])
      }))
    }
    default:
      return undefined
  }
}

/** Whether an event gives the history a message (exactly when `messageOf` returns one). */
export const contributes = (event: SessionEvent.SessionEvent): boolean => {
  switch (event.type) {
    case "user/message":
    case "steering/message":
    case "tool/result":
      return true
    case "assistant/message":
      return event.data.content.length > 0
    default:
      return false
  }
}

/** The messages of `first` then those of `second` (a persistent concatenation). */
export const concat = (first: History, second: History): History =>
  first.length === 0 ? second : second.length === 0 ? first : make(Chunk.appendAll(first[TypeId], second[TypeId]))

export const fold = (history: History, event: SessionEvent.SessionEvent): History => {
  const message = messageOf(event)
  return message === undefined ? history : make(Chunk.append(history[TypeId], message))
}

export const messages = (history: History): ReadonlyArray<Prompt.Message> => Chunk.toReadonlyArray(history[TypeId])

export const deriveMessages = (events: Iterable<SessionEvent.SessionEvent>): ReadonlyArray<Prompt.Message> => {
  let history = empty
  for (const event of events) history = fold(history, event)
  return messages(history)
}
