/**
 * The offline model's decisions: which reply a prompt gets, and how it is cut into stream parts.
 */
import type { LanguageModel, Prompt, Response } from "@effect/ai"

/** One piece of a reply. */
export type Piece =
  | { readonly _tag: "reasoning"; readonly text: string }
  | { readonly _tag: "text"; readonly text: string }
  | { readonly _tag: "tool-call"; readonly name: string; readonly params: Record<string, unknown> }

type Request = Pick<LanguageModel.ProviderOptions, "prompt" | "tools">

const textOf = (message: Prompt.Message): string => {
  if (message.role === "system") return message.content
  return message.content.map((part) => (part.type === "text" ? part.text : "")).join("")
}

const words = (text: string): number => text.split(/\s+/).filter((w) => w.length > 0).length

const quote = (text: string, max = 80): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return `“${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}”`
}

/** The conversation since the model last spoke: its user texts and tool results. */
const tailOf = (prompt: Prompt.Prompt) => {
  const messages = prompt.content
  let last = -1
  messages.forEach((message, i) => {
    if (message.role === "assistant") last = i
  })
  const tail = messages.slice(last + 1)
  const users = tail.filter((m) => m.role === "user").map(textOf).filter((t) => t.trim().length > 0)
  const all = tail.flatMap((m) =>
    m.role === "tool"
      ? m.content.map((part) => ({
        name: part.name,
        failed: part.isFailure,
        text: typeof part.result === "string" ? part.result : JSON.stringify(part.result)
      }))
      : []
  )
  // A concluding tool (update_goal) ends its turn without a reply: when people speak after it, they start a new
  // turn, and its result is not what they want summarised.
  const concluded = all.length > 0 && all.every((r) => concluding.has(r.name)) && users.length > 0
  return { users, results: concluded ? [] : all }
}

/** Tools whose call ends the turn (the goal round's `update_goal`). */
const concluding: ReadonlySet<string> = new Set(["update_goal"])

const clean = (path: string): string => path.replace(/^[`"'“]+|[`"'”.,;:!?]+$/g, "")

/** The tool a request asks for, if any (and if that tool is advertised). */
const intent = (
  text: string,
  advertised: ReadonlySet<string>
): { readonly name: string; readonly params: Record<string, unknown> } | undefined => {
  const run = /\brun\s+`([^`]+)`/i.exec(text)
  if (run && advertised.has("shell")) return { name: "shell", params: { command: run[1]! } }
  const write = /\bwrite\s+(?:to\s+|a file\s+|the file\s+)?(\S+?):\s*([\s\S]+)$/i.exec(text)
  if (write && advertised.has("write_file")) {
    return { name: "write_file", params: { path: clean(write[1]!), content: `${write[2]!.trim()}\n` } }
  }
  const read = /\b(?:read|open|show me|cat)\s+(?:the file\s+|file\s+)?(\S+\.\w+|\S*\/\S+)/i.exec(text)
  if (read && advertised.has("read_file")) return { name: "read_file", params: { path: clean(read[1]!) } }
  const grep = /\b(?:grep|search)\s+(?:for\s+)?(?:`([^`]+)`|"([^"]+)"|(\S+))/i.exec(text)
  if (grep && advertised.has("grep")) {
    return { name: "grep", params: { pattern: clean(grep[1] ?? grep[2] ?? grep[3]!), maxMatches: 20 } }
  }
  const listing = /\b(?:list|ls|what files|which files)\b/i.exec(text)
  if (listing && advertised.has("list_dir")) {
    // Only an "in …"/"under …" in the request's own clause names a place: "list the files in src" lists `src`;
    // "list the files, then confirm the workspace is in order" and "…in the workspace, in order" list the root.
    const where = /^[^.,;:!?]*?\b(?:in|under)\s+(\S+)/i.exec(text.slice(listing.index))
    const place = where ? clean(where[1]!) : ""
    const path = /^(the|this|my|our|a|your)$/i.test(place) ? "" : place
    return { name: "list_dir", params: path === "" || /^(workspace|repo|project)$/i.test(path) ? {} : { path } }
  }
  return undefined
}

const story = [
  "Once upon a time, a small agent lived in a terminal.",
  "Every morning it read the session log from the first event to the last, because everything it knew was there.",
  "People talked to it while it worked: they queued questions, nudged it in a new direction, and slipped it notes",
  "that it read at the next step without being asked to run.",
  "When someone pressed Ctrl-C, it stopped mid-sentence, closed the turn neatly, and kept the queue for later.",
  "And because nothing it saw lived anywhere but the log, it could be replayed, resumed, and audited, forever after."
].join(" ")

const answer = (request: string): string => {
  if (/^\s*(hi|hello|hey)\b/i.test(request)) {
    return "Hello! I am Harness's offline model: a local simulator that needs no API key. " +
      "Ask me to list, read or grep files in the workspace, or to tell a story."
  }
  if (/\b(story|long)\b/i.test(request)) return story
  if (/\b(brief|short|terse)\b/i.test(request)) return `Understood: I will keep it brief. (${quote(request, 60)})`
  return `You said ${quote(request)}. I am the offline model: I answer from the conversation, and I can list, ` +
    "read and grep files in the workspace when you ask (try “list the files” or “grep TODO”)."
}

const summarise = (
  results: ReadonlyArray<{ readonly name: string; readonly failed: boolean; readonly text: string }>
): string =>
  results.map(({ failed, name, text }) => {
    if (failed) return `The ${name} call failed: ${quote(text, 160)}.`
    const lines = text.split("\n").filter((l) => l.trim().length > 0)
    const shown = lines.slice(0, 6).map((l) => `  ${l.length > 100 ? `${l.slice(0, 99)}…` : l}`).join("\n")
    const more = lines.length > 6 ? `\n  … and ${lines.length - 6} more lines.` : ""
    return `${name} returned ${lines.length} line${lines.length === 1 ? "" : "s"}:\n${shown}${more}`
  }).join("\n")

/** How a user text is acknowledged in the next reply: goal state changes briefly, the rest quoted. */
const note = (text: string): string => {
  const change = /^<goal_state>([\s\S]*)<\/goal_state>$/.exec(text.trim())
  if (change === null) return `Noted: ${quote(text)}.`
  try {
    const body: unknown = JSON.parse(change[1]!)
    const goal = typeof body === "object" && body !== null && "goal" in body ? body.goal : undefined
    const phase = typeof goal === "object" && goal !== null && "phase" in goal ? goal.phase : undefined
    return typeof phase === "string" ? `Noted: the goal is ${phase}.` : "Noted: the goal was cleared."
  } catch {
    return "Noted: the goal changed."
  }
}

/** A goal round prompt's objective and round number, if the text is one. */
const goalRound = (text: string): { readonly objective: string; readonly round: number } | undefined => {
  if (!text.includes("<goal_round>")) return undefined
  const objective = /^Objective: (.*)$/m.exec(text)?.[1]
  const round = /^Round: (\d+)\//m.exec(text)?.[1]
  if (objective === undefined || round === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(objective)
    return typeof parsed === "string" ? { objective: parsed, round: Number(round) } : undefined
  } catch {
    return undefined
  }
}

/**
 * A goal round's reply: the first round of an objective works on it (with a workspace tool when the objective
 * asks for one); a later round, finding that work in the conversation, declares the goal complete with
 * `update_goal`. So a goal takes two rounds on the offline model.
 */
const goalReply = (
  goal: { readonly objective: string; readonly round: number },
  prompt: Prompt.Prompt,
  context: ReadonlyArray<string>,
  advertised: ReadonlySet<string>
): ReadonlyArray<Piece> => {
  const earlier =
    prompt.content.filter((m) => m.role === "user" && goalRound(textOf(m))?.objective === goal.objective).length - 1
  if (earlier > 0 && advertised.has("update_goal")) {
    return [
      { _tag: "reasoning", text: `Round ${goal.round}: the work of the earlier round is in the conversation.` },
      {
        _tag: "text",
        text: [...context, `The objective ${quote(goal.objective, 60)} is met by the earlier round's work.`].join(" ")
      },
      { _tag: "tool-call", name: "update_goal", params: { action: "complete" } }
    ]
  }
  const tool = intent(goal.objective, advertised)
  const opening = `Round ${goal.round}: working on ${quote(goal.objective, 60)}.`
  if (tool !== undefined) {
    return [
      { _tag: "reasoning", text: `The objective needs the workspace: calling ${tool.name}.` },
      { _tag: "text", text: [...context, opening, `Let me use ${tool.name}.`].join(" ") },
      { _tag: "tool-call", ...tool }
    ]
  }
  return [
    { _tag: "reasoning", text: "Working toward the goal from the conversation." },
    { _tag: "text", text: [...context, opening, "I have made a first pass; the next round will check it."].join(" ") }
  ]
}

/** The reply to one request. */
export const reply = (request: Request): ReadonlyArray<Piece> => {
  const advertised = new Set(request.tools.map((tool) => tool.name))
  const { results, users } = tailOf(request.prompt)
  const pieces: Array<Piece> = []
  if (results.length > 0) {
    const noted = users.map(note).join(" ")
    pieces.push({ _tag: "reasoning", text: "Summarising what the tools returned." })
    pieces.push({ _tag: "text", text: `${noted.length > 0 ? `${noted}\n` : ""}${summarise(results)}` })
    return pieces
  }
  const request_ = users.at(-1)
  if (request_ === undefined) {
    pieces.push({ _tag: "text", text: "There is nothing new to answer: the conversation ends with my last reply." })
    return pieces
  }
  const context = users.slice(0, -1).map(note)
  const goal = goalRound(request_)
  if (goal !== undefined) return goalReply(goal, request.prompt, context, advertised)
  if (/^<goal_state>/.test(request_.trim())) {
    pieces.push({ _tag: "text", text: [...context, note(request_)].join(" ") })
    return pieces
  }
  const tool = intent(request_, advertised)
  if (tool !== undefined) {
    pieces.push({ _tag: "reasoning", text: `The request needs the workspace: calling ${tool.name}.` })
    pieces.push({ _tag: "text", text: [...context, `Let me use ${tool.name}.`].join(" ") })
    pieces.push({ _tag: "tool-call", ...tool })
    return pieces
  }
  pieces.push({ _tag: "reasoning", text: "Answering from the conversation." })
  pieces.push({ _tag: "text", text: [...context, answer(request_)].join(" ") })
  return pieces
}

/** Splits text into word-sized deltas that concatenate back to the text. */
const deltas = (text: string): ReadonlyArray<string> => text.match(/\s*\S+/g) ?? []

/** The stream parts of a request's reply. */
export const parts = (request: Request): ReadonlyArray<Response.StreamPartEncoded> => {
  const pieces = reply(request)
  const out: Array<Response.StreamPartEncoded> = []
  let hasCall = false
  let output = 0
  pieces.forEach((piece, i) => {
    // Unique in a session: the prompt grows with every step.
    const id = `offline-${request.prompt.content.length}-${i}`
    switch (piece._tag) {
      case "text":
      case "reasoning": {
        const kind = piece._tag
        out.push({ type: `${kind}-start`, id })
        for (const delta of deltas(piece.text)) out.push({ type: `${kind}-delta`, id, delta })
        out.push({ type: `${kind}-end`, id })
        output += words(piece.text)
        break
      }
      case "tool-call": {
        hasCall = true
        const args = JSON.stringify(piece.params)
        out.push({ type: "tool-params-start", id, name: piece.name })
        out.push({ type: "tool-params-delta", id, delta: args })
        out.push({ type: "tool-params-end", id })
        out.push({ type: "tool-call", id, name: piece.name, params: piece.params })
        output += words(args)
        break
      }
    }
  })
  const input = request.prompt.content.reduce((n, message) => n + words(textOf(message)), 0)
  out.push({
    type: "finish",
    reason: hasCall ? "tool-calls" : "stop",
    usage: { inputTokens: input, outputTokens: output, totalTokens: input + output }
  })
  return out
}
