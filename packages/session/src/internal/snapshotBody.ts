/**
 * The snapshot body's form since version 3 (ADR 0080): the history's entries one after another, each a kind letter
 * then its fields, every text length-prefixed (`<length>:<text>`) and stored as it is. A body is read in one pass
 * that slices its texts out of the stored string and builds each message as it goes: no `JSON.parse` of the body, no
 * copy of its texts, no second walk. Everything is checked as it is read (a kind, a length or a count that does not
 * fit refuses the body); a provenance is JSON checked by its schema, once per distinct text (R239).
 */
import type { Prompt } from "@effect/ai"
import { type Content, Ids, Json, SessionEvent } from "@harness/domain"
import { Either, Schema } from "effect"
import * as history from "./history.js"
import { slowPath } from "./slowPath.js"

type Provenance = typeof SessionEvent.AssistantMessage.fields.provenance.Type

// The kind letters: entries (user, assistant, tool result, failed tool result) and assistant blocks (text, reasoning,
// tool call); `:` ends a length, `;` a count.
const kindUser = 117 // u
const kindAssistant = 97 // a
const kindResult = 116 // t
const kindFailed = 101 // e
const blockText = 120 // x
const blockReasoning = 114 // r
const blockCall = 99 // c
const colon = 58
const semicolon = 59

const field = (text: string): string => `${text.length}:${text}`

/** The entry of a user message of these texts (one at least). */
export const userEntry = (texts: ReadonlyArray<string>): string => {
  let out = `u${texts.length};`
  for (const text of texts) out += field(text)
  return out
}

/** The entry of an assistant message of these blocks (one at least), its provenance as JSON. */
export const assistantEntry = (blocks: ReadonlyArray<Content.AssistantBlock>, provenance: Provenance): string => {
  let out = `a${field(JSON.stringify(provenance))}${blocks.length};`
  for (const block of blocks) {
    out += block.type === "text"
      ? `x${field(block.text)}`
      : block.type === "reasoning"
      ? `r${field(block.text)}`
      : `c${field(block.id)}${field(block.name)}${field(block.arguments)}`
  }
  return out
}

/** The entry of a tool message of one result (its text blocks already joined). */
export const toolEntry = (callId: string, name: string, isError: boolean, result: string): string =>
  `${isError ? "e" : "t"}${field(callId)}${field(name)}${field(result)}`

const isProvenance = Schema.is(SessionEvent.AssistantMessage.fields.provenance, { onExcessProperty: "error" })

/** A provenance read once, and the options every assistant message with it shares (both frozen). */
interface Known {
  readonly text: string
  readonly provenance: Provenance
  readonly options: Prompt.ProviderOptions
}

const knownOf = (text: string): Known | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isProvenance(parsed)) return undefined
  const provenance = Json.deepFreeze(parsed)
  return { text, provenance, options: history.assistantOptionsOf(provenance) }
}

/**
 * The messages of a body's entries, in order; Left: where it stops being one, as a sentence. Contract: accepts every
 * concatenation of `userEntry`, `assistantEntry` and `toolEntry` texts, and nothing whose fields the events' schemas
 * refuse (a tool call's or result's id non-empty, a provenance in its schema's exact form).
 */
export const readEntries = (body: string): Either.Either<Array<Prompt.Message>, string> => {
  const end = body.length
  let at = 0
  /** A whole number of at most 9 digits, without leading zeros, ended by `stop`; or -1. */
  const number = (stop: number): number => {
    const from = at
    let n = 0
    while (at < end && at - from <= 9) {
      const c = body.charCodeAt(at++)
      if (c === stop) return at - 1 > from ? n : -1
      if (c < 48 || c > 57 || (n === 0 && at - 1 > from)) return -1
      n = n * 10 + (c - 48)
    }
    return -1
  }
  /** The length of the next field, when the body holds that many characters after it; else -1. */
  const length = (): number => {
    const n = number(colon)
    return n <= end - at ? n : -1
  }
  /** The next field's text, or undefined. */
  const text = (): string | undefined => {
    const n = length()
    if (n < 0) return undefined
    at += n
    return body.slice(at - n, at)
  }
  /** The next field's text when it is not empty (an id), or undefined. */
  const id = (): string | undefined => {
    const found = text()
    return found === "" ? undefined : found
  }
  const known = new Map<string, Known>()
  let last: Known | undefined
  /** The next field as a provenance: the last one again when its text is the same (compared in place). */
  const provenance = (): Known | undefined => {
    const n = length()
    if (n < 0) return undefined
    if (last !== undefined && last.text.length === n && body.startsWith(last.text, at)) {
      at += n
      return last
    }
    const found = body.slice(at, at + n)
    at += n
    const read = known.get(found) ?? knownOf(found)
    if (read !== undefined) known.set(found, read)
    last = read
    return read
  }
  const assistant = (): Prompt.Message | undefined => {
    const by = provenance()
    const count = number(semicolon)
    if (by === undefined || count < 1 || count > end - at) return undefined
    // The slow path builds the blocks and the message by `@effect/ai`'s constructors (ADR 0065).
    const parts: Array<Prompt.AssistantMessagePart> = []
    const blocks: Array<Content.AssistantBlock> = []
    for (let i = 0; i < count; i++) {
      const kind = at < end ? body.charCodeAt(at++) : -1
      if (kind === blockText || kind === blockReasoning) {
        const content = text()
        if (content === undefined) return undefined
        if (slowPath) blocks.push({ type: kind === blockText ? "text" : "reasoning", text: content })
        else parts.push(kind === blockText ? history.textPartOf(content) : history.reasoningPartOf(content))
      } else if (kind === blockCall) {
        const callId = id()
        const name = text()
        const raw = name === undefined ? undefined : text()
        if (callId === undefined || name === undefined || raw === undefined) return undefined
        if (slowPath) blocks.push({ type: "tool-call", id: Ids.ToolCallId.make(callId), name, arguments: raw })
        else parts.push(history.toolCallPartOf(callId, name, raw))
      } else {
        return undefined
      }
    }
    return slowPath
      ? history.assistantMessageOf(blocks, by.provenance)
      : history.assistantMessageOfParts(parts, by.options)
  }
  const messages: Array<Prompt.Message> = []
  while (at < end) {
    const kind = body.charCodeAt(at++)
    let message: Prompt.Message | undefined
    if (kind === kindUser) {
      const count = number(semicolon)
      if (count >= 1 && count <= end - at) {
        const texts: Array<string> = new Array(count)
        let i = 0
        for (; i < count; i++) {
          const found = text()
          if (found === undefined) break
          texts[i] = found
        }
        if (i === count) message = history.userMessageOf(texts)
      }
    } else if (kind === kindAssistant) {
      message = assistant()
    } else if (kind === kindResult || kind === kindFailed) {
      const callId = id()
      const name = callId === undefined ? undefined : text()
      const result = name === undefined ? undefined : text()
      if (callId !== undefined && name !== undefined && result !== undefined) {
        message = history.toolMessageOf(callId, name, kind === kindFailed, result)
      }
    }
    if (message === undefined) return Either.left(`its body entry ${messages.length} is not a history entry`)
    messages.push(message)
  }
  return Either.right(messages)
}
