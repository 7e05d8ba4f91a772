/** The chat's state, what it shows (rows, the opening of a stored session) and what its parts work on. */
import { type Approval as Durable, type Ids } from "@harness/domain"
import type { Context, Deferred, Ref } from "effect"
import { Effect, Exit, Mailbox } from "effect"
import * as readline from "node:readline"
import type { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Approval from "./approval.js"
import * as Inbox from "./inbox.js"
import { styles, visible } from "./output.js"
import type * as Resume from "./resume.js"
import { hintFor } from "./run.js"
import type * as Runtime from "./runtime.js"
import * as Timeline from "./timeline.js"

/** A tool call waiting for the person's answer: a durable pending approval (`agent.approvals`). */
export interface Pending {
  readonly callId: Ids.ToolCallId
  readonly name: string
  readonly args: string
  /** The arguments as JSON (`undefined` when they do not parse), for the scope and the preview. */
  readonly params: unknown
  /** What `a` (always) allows from then on. */
  readonly scope: Approval.Scope
  /** `false` for a call a restart cut: allowed, it runs now and the model hears its result in a new turn. */
  readonly live: boolean
}

export const pendingOf = (approval: Durable.PendingApproval): Pending => {
  const params = parseArguments(approval.arguments)
  return {
    callId: approval.callId,
    name: approval.name,
    args: approval.arguments,
    params,
    scope: Approval.scopeOf(approval.name, params),
    live: approval.live
  }
}

const parseArguments = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A tool call as the chat shows it, numbered from 1 in the order the calls were made. */
export interface Call {
  readonly callId: string
  readonly name: string
  readonly args: string
  readonly result: { readonly isError: boolean; readonly text: string } | undefined
}

/** The most lines `/expand` prints of one output. */
export const expandLines = 200

export interface State {
  readonly buffer: string
  /**
   * The streamed answer's current line (up to its next newline) as far as it is not yet in the transcript: the
   * live region shows it, wrapped, until the line ends.
   */
  readonly partial: { readonly kind: "text" | "reasoning"; readonly text: string } | undefined
  /**
   * The answer's current line is open in the transcript: it outgrew the live region, so its first rows were
   * printed above, and a notice printed now would split it.
   */
  readonly open: boolean
  /** Notices that wait for the open answer line to end (printed right after it). */
  readonly later: ReadonlyArray<string>
  readonly running: boolean
  readonly turnStartedAt: number
  readonly tokens: number
  readonly spin: number
  /** The pending approvals in request order; the prompt asks about the first. */
  readonly approvals: ReadonlyArray<Pending>
  /** When Ctrl-C was last pressed (`Clock` millis); Esc never sets it. */
  readonly lastCtrlC: number | undefined
  /**
   * The queued item being edited in the prompt (Up): it stays in the inbox, where it was, until Enter saves the
   * text in place (`agent.edit`); Esc or Ctrl-C leaves it as it was.
   */
  readonly editing: Inbox.Item | undefined
  /** The items as `/inbox` last numbered them: `/drop N` means the N-th of these, even if the inbox moved since. */
  readonly listed: ReadonlyArray<Inbox.Item>
  /** How many lines the bottom area (partial, status, prompt) took when last drawn; 0 before the first draw. */
  readonly drawn: number
  /** Restored items wait for the user (a stored session's inbox, until the first Enter). */
  readonly waiting: boolean
}

const spinner = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

export const fit = (text: string, width: number): string =>
  text.length <= width ? text : width <= 1 ? "" : `${text.slice(0, width - 1)}…`

/** The first row of `text` at `width` and the rest, or `undefined` when it fits in one row. */
export const cut = (text: string, width: number): readonly [string, string] | undefined => {
  if (text.length <= width) return undefined
  // At the last space that fits, or inside a word longer than the row.
  const space = text.lastIndexOf(" ", width)
  const at = space > 0 ? space : width
  return [text.slice(0, at), text.slice(at).replace(/^ /, "")]
}

/** `text` (one line, no newline) in rows of at most `width` characters. */
export const rowsOf = (text: string, width: number): Array<string> => {
  const rows: Array<string> = []
  let rest = text
  while (true) {
    const next = cut(rest, width)
    if (next === undefined) return [...rows, rest]
    rows.push(next[0])
    rest = next[1]
  }
}

/** The opening lines of a stored session: the conversation so far, interrupted turns, the restored items. */
export const opening = (summary: Resume.Summary): ReadonlyArray<string> => {
  const s = styles(process.stdout)
  return [
    s.dim(
      `${summary.turns} turn${summary.turns === 1 ? "" : "s"} so far${
        summary.earlier > 0 ? ` (the last messages; ${summary.earlier} earlier)` : ""
      }:`
    ),
    ...summary.conversation.map((line) => s.dim(line)),
    ...summary.interrupted.map((turn) =>
      s.yellow(
        `turn ${turn} was interrupted: the chat stopped before it finished (it was closed when the session opened)`
      )
    ),
    ...(summary.pending.length === 0 ? [] : [
      s.yellow(`restored ${summary.pending.length} pending item(s); they wait for you:`),
      ...summary.pending.map((item, i) =>
        `${i + 1}. ${item.placement.padEnd(8)} ${visible(item.label.replace(/\s+/g, " "))}`
      ),
      s.dim("Enter runs them · /drop N drops one · Up edits the last one · /inbox lists them")
    ])
  ]
}

export const whatToDo = (code: string | undefined): string => {
  const hint = hintFor(code)
  return hint !== "" ? hint : code === undefined ? "" : ` (${code})`
}

/** Whether typed input is printable text (no control characters). */
export const printable = (text: string): boolean =>
  [...text].every((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f)

/** Standard input as lines, in a mailbox that ends with the input. */
export const readLines = Effect.gen(function*() {
  const mailbox = yield* Mailbox.make<string>()
  const rl = readline.createInterface({ input: process.stdin })
  rl.on("line", (line) => void mailbox.unsafeOffer(line))
  rl.on("close", () => void mailbox.unsafeDone(Exit.void))
  yield* Effect.addFinalizer(() => Effect.sync(() => rl.close()))
  return mailbox
})

/** The status line (what runs, tokens, the inbox badge, a hint) and the prompt line (or the approval asked about). */
export const statusLines = (
  s: ReturnType<typeof styles>,
  st: State,
  items: ReadonlyArray<Inbox.Item>,
  now: number,
  width: number
): ReadonlyArray<string> => {
  const badge = Inbox.badge(items)
  const lines: Array<string> = []
  const status = st.waiting
    ? "waiting for you"
    : st.running
    ? `${spinner[st.spin % spinner.length]} working ${((now - st.turnStartedAt) / 1000).toFixed(1)}s`
    : "idle"
  const hint = st.editing
    ? "editing a queued item: Enter queues it again"
    : st.waiting
    ? "Enter runs the restored items"
    : st.running
    ? "Esc/Ctrl-C cancels"
    : "/help"
  const held = st.later.length === 0
    ? ""
    : `${st.later.length} line${st.later.length === 1 ? "" : "s"} held until this line ends`
  const parts = [status, `${st.tokens} tokens`, badge, held, hint]
  lines.push(s.dim(fit(parts.filter((p) => p !== "").join(" · "), width)))
  const asking = st.approvals[0]
  const prompt = asking !== undefined
    ? `${
      s.yellow(`allow ${Timeline.callLine(asking.name, asking.args)}?`)
    } [y]es / [n]o / [a]lways ${asking.scope.words}: `
    : `› ${st.buffer.length > width - 3 ? st.buffer.slice(st.buffer.length - (width - 3)) : st.buffer}`
  lines.push(prompt)
  return lines
}

/** What the chat's commands and keys work on: its state, the agent, and how the chat prints. */
export interface ChatContext {
  readonly settings: Settings
  readonly backend: Context.Tag.Service<Runtime.Backend>
  readonly started: Runtime.Started
  readonly s: ReturnType<typeof styles>
  /** The double-press window, in milliseconds. */
  readonly window: number
  readonly state: Ref.Ref<State>
  readonly update: (f: (st: State) => State) => Effect.Effect<void>
  readonly quit: Deferred.Deferred<void>
  readonly gate: Deferred.Deferred<void>
  readonly gated: Effect.Effect<boolean>
  readonly held: Ref.Ref<{ readonly id: Ids.AgentMessageId; readonly text: string } | undefined>
  readonly dropped: Ref.Ref<ReadonlySet<string>>
  readonly summary: Resume.Summary | undefined
  readonly inboxItems: Effect.Effect<ReadonlyArray<Inbox.Item>>
  readonly fates: Inbox.Fates
  readonly calls: Ref.Ref<ReadonlyArray<Call>>
  readonly emit: (lines: ReadonlyArray<string>) => Effect.Effect<void>
  readonly redraw: Effect.Effect<void>
  readonly queue: (text: string) => Effect.Effect<void, CommandError>
  readonly sendError: (e: { readonly message: string }) => CommandError
  readonly submit: (line: string) => Effect.Effect<void, CommandError>
  readonly answerApproval: (pending: Pending, key: string) => Effect.Effect<void>
}
