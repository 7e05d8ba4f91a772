/**
 * The history fold behind `History`: frozen `Prompt` messages in an append-only array successive histories share
 * (`appendOnly.ts`), extended by one message at most per event.
 */
import { Prompt } from "@effect/ai"
import { Content, type SessionEvent, ToolArguments } from "@harness/domain"
import { Either } from "effect"
import type { History } from "../History.js"
import * as AppendOnly from "./appendOnly.js"
import { slowPath } from "./slowPath.js"

export const TypeId: unique symbol = Symbol.for("@harness/session/History")
export type TypeId = typeof TypeId

export const optionsKey = ToolArguments.harnessKey

/**
 * A replaced prefix: the first `count` folded messages are shown as `messages` (a compaction's summary, ADR 0052).
 * `count` is absolute (it counts from the log's first message), so a history folded from a snapshot's tail and
 * concatenated to its prefix keeps it.
 */
export interface Replaced {
  readonly count: number
  readonly messages: ReadonlyArray<Prompt.Message>
}

/**
 * Ranges of folded messages a rollback dropped (ADR 0061): absolute `[from, to)` pairs, in log order, all after the
 * replaced prefix; `open` while the rolled-back turn has not ended (each message it folds meanwhile widens the last).
 */
export interface Dropped {
  readonly ranges: ReadonlyArray<readonly [number, number]>
  readonly open: boolean
}

const make = (messages: AppendOnly.AppendOnly<Prompt.Message>, replaced?: Replaced | undefined): History =>
  Object.freeze(
    replaced === undefined
      ? { [TypeId]: messages, length: messages.length }
      : { [TypeId]: messages, length: messages.length, replaced }
  )

/** `make` with rollback ranges, when there are some (a separate literal: the common shapes stay as they were). */
const makeDropped = (
  messages: AppendOnly.AppendOnly<Prompt.Message>,
  replaced: Replaced | undefined,
  dropped: Dropped | undefined
): History =>
  dropped === undefined
    ? make(messages, replaced)
    : Object.freeze({ [TypeId]: messages, length: messages.length, replaced, dropped })

export const empty: History = make(AppendOnly.empty())

/** `history` with its first `count` folded messages shown as `messages` (the folded ones are kept). */
export const replacePrefix = (history: History, replaced: Replaced): History => make(history[TypeId], replaced)

/** `history` with these rollback ranges (a snapshot's, ADR 0061). */
export const withDropped = (history: History, dropped: Dropped): History =>
  makeDropped(history[TypeId], history.replaced, dropped)

/**
 * The model's raw argument text as a tool call's `params`: `{}` for empty text, the parsed value for valid JSON,
 * and the raw text itself otherwise (the provider sends `rawArguments` back anyway).
 */
const paramsOf = (raw: string): unknown => {
  const parsed = ToolArguments.parse(raw)
  return Either.isRight(parsed) ? parsed.right : raw
}

// The messages and parts are built as object literals of one fixed shape each, with the keys `Prompt.makePart` and
// `Prompt.makeMessage` give them (same keys, same order, same values): the constructors' spreads cost several
// times more, and the first `history` read of a long session builds every message (ADR 0022, W7). A test compares
// both constructions on every kind of event.
type AssistantProvenance = Extract<
  SessionEvent.SessionEvent,
  { readonly type: "assistant/message" }
>["data"]["provenance"]

const PartTypeId: Prompt.PartTypeId = Prompt.PartTypeId
const MessageTypeId: Prompt.MessageTypeId = Prompt.MessageTypeId
const noOptions: Prompt.ProviderOptions = Object.freeze({})

const textPart = (text: string): Prompt.TextPart =>
  Object.freeze({ text, [PartTypeId]: PartTypeId, type: "text", options: noOptions })

const userMessageLiteral = (texts: ReadonlyArray<string>): Prompt.Message => {
  const parts: Array<Prompt.TextPart> = new Array(texts.length)
  for (let i = 0; i < texts.length; i++) parts[i] = textPart(texts[i]!)
  return Object.freeze({
    content: Object.freeze(parts),
    [MessageTypeId]: MessageTypeId,
    role: "user",
    options: noOptions
  })
}

/** The options of an assistant message with this provenance (frozen: messages with the same one may share them). */
export const assistantOptionsOf = (provenance: AssistantProvenance): Prompt.ProviderOptions =>
  Object.freeze({ [optionsKey]: Object.freeze({ provenance }) })

/** The assistant message of these parts (one at least, taken over) and options (from `assistantOptionsOf`). */
export const assistantMessageOfParts = (
  parts: Array<Prompt.AssistantMessagePart>,
  options: Prompt.ProviderOptions
): Prompt.Message =>
  Object.freeze({ content: Object.freeze(parts), options, [MessageTypeId]: MessageTypeId, role: "assistant" })

const assistantMessageLiteral = (
  content: ReadonlyArray<Content.AssistantBlock>,
  provenance: AssistantProvenance
): Prompt.Message => {
  const parts: Array<Prompt.AssistantMessagePart> = new Array(content.length)
  for (let i = 0; i < content.length; i++) parts[i] = assistantPart(content[i]!)
  return assistantMessageOfParts(parts, assistantOptionsOf(provenance))
}

const toolMessageLiteral = (callId: string, name: string, isError: boolean, result: string): Prompt.Message =>
  Object.freeze({
    content: Object.freeze([
      Object.freeze({
        id: callId,
        name,
        isFailure: isError,
        result,
        providerExecuted: false,
        [PartTypeId]: PartTypeId,
        type: "tool-result",
        options: noOptions
      })
    ]),
    [MessageTypeId]: MessageTypeId,
    role: "tool",
    options: noOptions
  })

// The same messages by `@effect/ai`'s own constructors, frozen like the literals: what `HARNESS_SLOW_PATH=1` uses.
const frozenMessage = <M extends Prompt.Message>(message: M): M => {
  for (const part of message.content as ReadonlyArray<object>) Object.freeze(part)
  Object.freeze(message.content)
  return Object.freeze(message)
}

const userMessageByConstructor = (texts: ReadonlyArray<string>): Prompt.Message =>
  frozenMessage(Prompt.userMessage({ content: texts.map((text) => Prompt.makePart("text", { text })) }))

const assistantMessageByConstructor = (
  content: ReadonlyArray<Content.AssistantBlock>,
  provenance: AssistantProvenance
): Prompt.Message =>
  frozenMessage(Prompt.assistantMessage({
    content: content.map((block) =>
      block.type === "tool-call"
        ? Prompt.makePart("tool-call", {
          id: block.id,
          name: block.name,
          params: paramsOf(block.arguments),
          providerExecuted: false,
          options: { [optionsKey]: { rawArguments: block.arguments } }
        })
        : Prompt.makePart(block.type, { text: block.text })
    ),
    options: { [optionsKey]: { provenance } }
  }))

const toolMessageByConstructor = (callId: string, name: string, isError: boolean, result: string): Prompt.Message =>
  frozenMessage(Prompt.toolMessage({
    content: [Prompt.makePart("tool-result", { id: callId, name, isFailure: isError, result, providerExecuted: false })]
  }))

/** The user message of these texts (one text part each). */
export const userMessageOf: (texts: ReadonlyArray<string>) => Prompt.Message = slowPath
  ? userMessageByConstructor
  : userMessageLiteral

/** The assistant message of these blocks (at least one) and provenance. */
export const assistantMessageOf: (
  content: ReadonlyArray<Content.AssistantBlock>,
  provenance: AssistantProvenance
) => Prompt.Message = slowPath ? assistantMessageByConstructor : assistantMessageLiteral

/** The tool message of one result (its text blocks already joined). */
export const toolMessageOf: (callId: string, name: string, isError: boolean, result: string) => Prompt.Message =
  slowPath ? toolMessageByConstructor : toolMessageLiteral

const textsOf = (content: ReadonlyArray<Content.TextBlock>): ReadonlyArray<string> => content.map((b) => b.text)

/** A text part of an assistant message. */
export const textPartOf: (text: string) => Prompt.TextPart = textPart

/** A reasoning part of an assistant message. */
export const reasoningPartOf = (text: string): Prompt.ReasoningPart =>
  Object.freeze({ text, [PartTypeId]: PartTypeId, type: "reasoning", options: noOptions })

/** A tool-call part of an assistant message: `params` parsed from the raw arguments, which its options carry. */
export const toolCallPartOf = (id: string, name: string, raw: string): Prompt.ToolCallPart =>
  Object.freeze({
    id,
    name,
    params: paramsOf(raw),
    providerExecuted: false,
    options: Object.freeze({ [optionsKey]: Object.freeze({ rawArguments: raw }) }),
    [PartTypeId]: PartTypeId,
    type: "tool-call"
  })

const assistantPart = (block: Content.AssistantBlock): Prompt.AssistantMessagePart => {
  switch (block.type) {
    case "text":
      return textPart(block.text)
    case "reasoning":
      return reasoningPartOf(block.text)
    case "tool-call":
      return toolCallPartOf(block.id, block.name, block.arguments)
  }
}

/** The message an event contributes to the history, if any. */
const messageOf = (event: SessionEvent.SessionEvent): Prompt.Message | undefined => {
  switch (event.type) {
    case "user/message":
    case "steering/message":
      return userMessageOf(textsOf(event.data.content))
    case "assistant/message":
      return event.data.content.length === 0
        ? undefined
        : assistantMessageOf(event.data.content, event.data.provenance)
    case "tool/result": {
      const { callId, content, isError, name } = event.data
      return toolMessageOf(callId, name, isError, Content.joinText(content))
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

/** The history of these messages, in order (the array is taken over: the caller must not change it). */
export const unsafeOfMessages = (messages: Array<Prompt.Message>): History =>
  make({ array: messages, length: messages.length })

/** The messages of `first` then those of `second`. */
export const concat = (first: History, second: History): History => {
  const replaced = second.replaced ?? first.replaced
  // Dropped ranges are absolute, like a compaction's count: a later compaction covers every earlier range.
  const dropped = second.replaced !== undefined || first.dropped === undefined
    ? second.dropped
    : second.dropped === undefined
    ? first.dropped
    : { ranges: first.dropped.ranges.concat(second.dropped.ranges), open: second.dropped.open }
  if (second.length === 0 && dropped === first.dropped) {
    return replaced === first.replaced ? first : makeDropped(first[TypeId], replaced, dropped)
  }
  if (first.length === 0 && replaced === second.replaced && dropped === second.dropped) return second
  return makeDropped(AppendOnly.appendAll(first[TypeId], AppendOnly.slice(second[TypeId], 0)), replaced, dropped)
}

/** A rollback record's range, from the replaced prefix on, added (open until its turn ends). */
const rolledBack = (history: History, from: number, through: number): History => {
  const start = Math.max(from, history.replaced?.count ?? 0)
  const range: readonly [number, number] = [start, Math.max(start, through)]
  return makeDropped(history[TypeId], history.replaced, {
    ranges: history.dropped === undefined ? [range] : history.dropped.ranges.concat([range]),
    open: true
  })
}

/** `history` with one more folded message, in an open rollback range (which takes it in). */
const appendedDropping = (history: History, dropped: Dropped, message: Prompt.Message): History => {
  const ranges = dropped.ranges.slice()
  const [from, to] = ranges[ranges.length - 1]!
  ranges[ranges.length - 1] = [from, to + 1]
  return makeDropped(AppendOnly.append(history[TypeId], message), history.replaced, { ranges, open: true })
}

export const fold = (history: History, event: SessionEvent.SessionEvent): History => {
  const message = messageOf(event)
  if (message !== undefined) {
    // The common case first, as before rollbacks existed: one append, the replaced prefix kept.
    const dropped = history.dropped
    if (dropped === undefined) return make(AppendOnly.append(history[TypeId], message), history.replaced)
    return dropped.open
      ? appendedDropping(history, dropped, message)
      : makeDropped(AppendOnly.append(history[TypeId], message), history.replaced, dropped)
  }
  if (event.type === "compaction") {
    // A compaction covers every earlier range; one still open goes on past the summary until its turn ends.
    const { messages: count, summary } = event.data
    const open = history.dropped?.open === true ? { ranges: [[count, count] as const], open: true } : undefined
    return makeDropped(history[TypeId], { count, messages: [userMessageOf([summary])] }, open)
  }
  if (event.type === "turn/rollback") return rolledBack(history, event.data.from, event.data.through)
  if (event.type === "turn/end" && history.dropped?.open === true) {
    return makeDropped(history[TypeId], history.replaced, { ranges: history.dropped.ranges, open: false })
  }
  return history
}

export const messages = (history: History): ReadonlyArray<Prompt.Message> => {
  const replaced = history.replaced
  const dropped = history.dropped
  if (dropped === undefined) {
    if (replaced === undefined) return AppendOnly.slice(history[TypeId], 0)
    return replaced.messages.concat(AppendOnly.slice(history[TypeId], replaced.count))
  }
  const out: Array<Prompt.Message> = replaced === undefined ? [] : replaced.messages.slice()
  let at = replaced?.count ?? 0
  for (const [from, to] of dropped.ranges) {
    if (from > at) { for (const message of AppendOnly.slice(history[TypeId], at, from)) out.push(message) }
    if (to > at) at = to
  }
  for (const message of AppendOnly.slice(history[TypeId], at)) out.push(message)
  return out
}

export const deriveMessages = (events: Iterable<SessionEvent.SessionEvent>): ReadonlyArray<Prompt.Message> => {
  let history = empty
  for (const event of events) history = fold(history, event)
  return messages(history)
}
