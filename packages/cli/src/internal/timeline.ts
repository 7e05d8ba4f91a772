/**
 * Readable renderings of events: one line per durable event or inbox record (for `sessions show` and the demo),
 * a Markdown transcript (for `sessions export --format md`), and short forms of tool calls and results.
 */
import type { Json, Message, Turn } from "@harness/domain"
import { SessionEvent, Store } from "@harness/domain"
import { Schema } from "effect"
import { visible } from "./output.js"

/** Any record a store holds, from its JSON text: a durable event or an inbox record. */
export const StoreRecordFromJson = Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord))

const oneLine = (text: string, max = 100): string => {
  const flat = visible(text.replace(/\s+/g, " ").trim())
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

const textOf = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  content.map((block) => block.text ?? "").join("")

/** Who a message is from, in words. */
export const sourceOf = (source: Message.AgentMessage["source"]): string => {
  switch (source.kind) {
    case "user":
      return "user"
    case "plugin":
      return `context from ${source.plugin}`
    case "goal":
      return "goal"
    case "subagent":
      return `parent ${source.parent} (${source.agent})`
  }
}

/**
 * A goal message in words: a change (round 0) as `goal <operation> → <phase>: <objective>`, a round prompt as
 * `goal round <n>: <objective>`. Other messages give `undefined`.
 */
export const goalLine = (
  source: Message.AgentMessage["source"],
  text: string
): string | undefined => {
  if (source.kind !== "goal") return undefined
  if (source.round > 0) {
    const objective = /^Objective: (.*)$/m.exec(text)?.[1]
    return `goal round ${source.round}${objective === undefined ? "" : `: ${oneLine(parseQuoted(objective), 80)}`}`
  }
  const change = source.change ?? {}
  const operation = typeof change.operation === "string" ? change.operation : "change"
  const goal = change.goal
  const fields: { readonly [key: string]: Json.JsonValue } = isObject(goal) ? goal : {}
  const phase = typeof fields.phase === "string" ? ` → ${fields.phase}` : ""
  const objective = typeof fields.objective === "string" ? `: ${oneLine(fields.objective, 80)}` : ""
  return `goal ${operation}${phase}${objective} (revision ${source.revision})`
}

const isObject = (value: Json.JsonValue | undefined): value is { readonly [key: string]: Json.JsonValue } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const parseQuoted = (text: string): string => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "string" ? value : text
  } catch {
    return text
  }
}

/** A tool call on one line: `name(args)`. */
export const callLine = (name: string, args: string): string => `${name}(${oneLine(args === "{}" ? "" : args, 80)})`

/** A tool result on one line: its outcome and first line. */
export const resultLine = (
  result: { readonly isError: boolean; readonly content: ReadonlyArray<{ readonly text: string }> }
): string => {
  const text = result.content.map((b) => b.text).join("")
  const lines = text.split("\n").filter((l) => l.trim().length > 0)
  const head = oneLine(lines[0] ?? "(empty)", 80)
  return result.isError
    ? `failed: ${head}`
    : `ok, ${lines.length} line${lines.length === 1 ? "" : "s"}: ${head}`
}

const depthOf = (event: SessionEvent.SessionEvent | Store.InboxRecord, open: { turn: boolean; step: boolean }) => {
  switch (event.type) {
    case "turn/start":
    case "turn/end":
      return 0
    case "step/start":
    case "step/end":
      return 1
    default:
      return open.step ? 2 : open.turn ? 1 : 0
  }
}

/** A budget stop in words (R163): which budget, what was used of it, after which step. */
export const budgetWords = (reason: Turn.BudgetReason): string => {
  const after = reason.step === 0 ? "before its first step" : `after step ${reason.step}`
  switch (reason.budget) {
    case "steps":
      return `stopped at its step limit (${reason.limit} step${reason.limit === 1 ? "" : "s"})`
    case "tokens":
      return `stopped ${after}: the ${reason.scope} used ${reason.used} tokens of its ${reason.limit}-token budget`
    case "cost":
      return `stopped ${after}: the ${reason.scope} cost ${
        Number(reason.used.toPrecision(4))
      } of its budget of ${reason.limit}`
    case "deadline":
      return `stopped in step ${reason.step}: the turn reached its deadline (${reason.limit / 1000} s)`
  }
}

/**
 * One durable event or inbox record in words; `undefined` for streamed chunks. `accepted` maps message ids to their
 * text, so a settled inbox record can say which message it was.
 */
export const describe = (
  record: SessionEvent.SessionEvent | Store.InboxRecord,
  accepted: ReadonlyMap<string, string> = new Map()
): string | undefined => {
  switch (record.type) {
    case "turn/start":
      return `turn ${record.data.turn} starts (${
        record.data.trigger.kind === "message"
          ? `message from ${sourceOf(record.data.trigger.source)}`
          : record.data.trigger.kind
      })`
    case "turn/end": {
      const reason = record.data.reason
      const detail = reason.kind === "error"
        ? `: ${reason.message}`
        : reason.kind === "request-error"
        ? `: ${reason.failure.message}`
        : reason.kind === "budget"
        ? `: ${budgetWords(reason)}`
        : ""
      return `turn ${record.data.turn} ends: ${reason.kind}${detail}`
    }
    case "step/start":
      return `step ${record.data.step}`
    case "step/end":
      return `step ${record.data.step} ends`
    case "user/message":
      return goalLine(record.data.source, textOf(record.data.content)) ??
        `${record.data.source.kind === "user" ? "user" : sourceOf(record.data.source)}: ${
          oneLine(textOf(record.data.content))
        }`
    case "steering/message":
      return `steering (${sourceOf(record.data.source)}): ${oneLine(textOf(record.data.content))}`
    case "assistant/chunk":
      return undefined
    case "assistant/message": {
      const parts = record.data.content.map((block) =>
        block.type === "tool-call"
          ? `[calls ${callLine(block.name, block.arguments)}]`
          : block.type === "reasoning"
          ? `(thinking: ${oneLine(block.text, 60)})`
          : oneLine(block.text)
      )
      const tokens = record.data.usage?.outputTokens
      return `assistant: ${parts.join(" ")}${tokens === undefined ? "" : ` [${tokens} tokens]`}`
    }
    case "tool/call":
      return `tool call ${callLine(record.data.name, record.data.arguments)}`
    case "tool/result":
      return `tool result ${record.data.name}: ${resultLine(record.data)}`
    case "request/header":
      return `request to ${record.data.header.config.model} (${record.data.reason})`
    case "compaction":
      return `compaction (${record.data.reason}): seqs 0–${record.data.through} (${record.data.messages} messages, ~${record.data.estimate} tokens) summarised by ${record.data.model}: ${
        oneLine(record.data.summary)
      }`
    case "turn/rollback":
      return `rolled back: turn ${record.data.turn} is left out of later requests (messages ${record.data.from}–${record.data.through} and what it adds until it ends), by ${record.data.by}`
    case "inbox/accepted": {
      const text = textOf(record.message.content)
      const what = goalLine(record.message.source, text) ?? `“${oneLine(text, 60)}”`
      return `inbox: accepted ${record.placement}${record.wakeup ? "" : " (no wake-up)"} ${what}`
    }
    case "inbox/settled": {
      const text = accepted.get(record.id)
      return `inbox: ${record.fate} ${text === undefined ? record.id : `“${oneLine(text, 60)}”`}`
    }
    case "inbox/revised": {
      const text = accepted.get(record.id)
      const what = text === undefined ? record.id : `“${oneLine(text, 60)}”`
      const change = record.change
      return change._tag === "edit"
        ? `inbox: edited ${what} to “${oneLine(textOf(change.content), 60)}”`
        : change._tag === "move"
        ? `inbox: moved ${what}${change.before === undefined ? " to the end" : ` before ${change.before}`}`
        : `inbox: ${change.placement === "steering" ? "promoted" : "demoted"} ${what}`
    }
  }
}

/** The timeline of a session: one indented line per record, numbered by `seq` (chunks collapsed into a count). */
export const render = (
  records: ReadonlyArray<SessionEvent.SessionEvent | Store.InboxRecord>
): ReadonlyArray<string> => {
  const out: Array<string> = []
  const open = { turn: false, step: false }
  const start = records.find((r) => "time" in r)?.time ?? 0
  let chunks = 0
  const accepted = new Map<string, string>()
  for (const record of records) {
    if (record.type === "inbox/accepted") accepted.set(record.message.id, textOf(record.message.content))
    if (record.type === "assistant/chunk") {
      chunks++
      continue
    }
    const text = describe(record, accepted)
    if (record.type === "inbox/revised" && record.change._tag === "edit") {
      accepted.set(record.id, textOf(record.change.content))
    }
    if (text === undefined) continue
    if (record.type === "turn/end" || record.type === "step/end") {
      open[record.type === "turn/end" ? "turn" : "step"] = false
    }
    const seq = "seq" in record ? `#${record.seq}` : "  "
    const elapsed = `+${((record.time - start) / 1000).toFixed(2)}s`
    const suffix = record.type === "assistant/message" && chunks > 0 ? ` (${chunks} chunks)` : ""
    if (record.type === "assistant/message") chunks = 0
    out.push(`${seq.padStart(5)} ${elapsed.padStart(8)}  ${"  ".repeat(depthOf(record, open))}${text}${suffix}`)
    if (record.type === "turn/start") open.turn = true
    if (record.type === "step/start") open.step = true
  }
  return out
}

/** The session as a Markdown transcript. */
export const markdown = (id: string, events: ReadonlyArray<SessionEvent.SessionEvent>): string => {
  const out: Array<string> = [`# Session ${id}`, ""]
  for (const event of events) {
    switch (event.type) {
      case "turn/start":
        out.push(`## Turn ${event.data.turn}`, "")
        break
      case "user/message": {
        const goal = goalLine(event.data.source, textOf(event.data.content))
        out.push(
          goal !== undefined
            ? `_${goal}_`
            : `**${event.data.source.kind === "user" ? "User" : sourceOf(event.data.source)}:** ${
              textOf(event.data.content)
            }`,
          ""
        )
        break
      }
      case "steering/message":
        out.push(`**Steering (${sourceOf(event.data.source)}):** ${textOf(event.data.content)}`, "")
        break
      case "assistant/message": {
        const text = event.data.content.filter((b) => b.type === "text").map((b) => b.text).join("")
        if (text.trim().length > 0) out.push(`**Assistant:** ${text}`, "")
        for (const block of event.data.content) {
          if (block.type === "tool-call") out.push(`Tool call \`${block.name}\`: \`${block.arguments}\``, "")
        }
        break
      }
      case "tool/result":
        out.push(
          `Result of \`${event.data.name}\`${event.data.isError ? " (error)" : ""}:`,
          "",
          "```",
          textOf(event.data.content),
          "```",
          ""
        )
        break
      case "turn/end":
        if (event.data.reason.kind !== "completed") {
          const reason = event.data.reason
          out.push(
            `_Turn ${event.data.turn} ended: ${reason.kind}${
              reason.kind === "budget" ? ` (${budgetWords(reason)})` : ""
            }._`,
            ""
          )
        }
        break
      default:
        break
    }
  }
  return out.join("\n")
}
