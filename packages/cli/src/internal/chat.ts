/**
 * `harness chat`: the interactive terminal. The prompt stays live while the agent works: Enter steers a running
 * turn (or starts one when idle), `/queue` or `+` queues a follow-up, `/inject` adds context, Esc or the first
 * Ctrl-C cancels the running turn keeping the inbox, a second Ctrl-C within a second discards the inbox (or, on an
 * idle prompt with nothing pending, exits). A badge shows the inbox; approvals for writes and `shell` are asked
 * inline and are durable (ADR 0054): the hook answers `ask`, the chat shows each pending approval (those a resumed
 * session restores too) and answers it with `agent.approve`. The answer's current line streams in a live region above the status line, and everything the chat says
 * on its own goes through one function (`emit`) that never splits a line of the answer; a queued turn starts with
 * a `▸ prompt` line. When standard output is not a terminal it prints plain lines and reads plain lines.
 */
import type { Terminal } from "@effect/platform"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import type { Hooks } from "@harness/agent"
import { type AgentEvent, type Approval as Durable, Content, type Ids, Message, MessageSource } from "@harness/domain"
import { Clock, Deferred, Duration, Effect, Exit, FiberRef, Logger, Mailbox, Option, Ref, Schedule } from "effect"
import * as readline from "node:readline"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Approval from "./approval.js"
import * as ChatAgents from "./chatAgents.js"
import * as Inbox from "./inbox.js"
import * as Keys from "./keys.js"
import { replacePrinters, safe, styles, visible } from "./output.js"
import * as Resume from "./resume.js"
import { codeOf, deltaOf, hintFor } from "./run.js"
import * as Runtime from "./runtime.js"
import * as Timeline from "./timeline.js"

/** The chat's commands, as `/help` lists them (`window`: the double-press window, in milliseconds). */
export const help = (window: number): ReadonlyArray<string> => [
  "Enter            send: steers the running turn, or starts a turn when idle",
  "/queue text, +text  queue a follow-up turn (runs after the current one)",
  "/inject text     add context the model sees at its next step (does not run the model)",
  "/compact [focus] summarise the conversation so far; later requests carry the summary instead",
  "/inbox           list pending items with numbers      /drop N   withdraw item N",
  "/promote N       turn queued item N into steering of the running turn",
  "/now text        stop the running turn (keeping the inbox) and run this next, ahead of everything queued",
  "/ifidle text     start a turn only if none is running; refused (nothing sent) while one runs",
  "/redo text       as /now, and the stopped turn is left out of what the model sees from now on (it stays logged)",
  "/move N M        put item N at place M (1 is first) among the items queued (or steering) like it",
  "/goal set <objective> | show | pause | resume | clear    keep working toward an objective over rounds",
  "Esc, Ctrl-C      cancel the running turn, keeping the inbox",
  `Ctrl-C Ctrl-C    (within ${Keys.windowWords(window)}) discard the inbox; on an idle prompt, exit; after one`,
  "                 Ctrl-C the next queued item waits until that time is up, so a second one can still stop it",
  "Up               on an empty prompt: edit the last queued item in place (Up again: the one before; Enter saves,",
  "                 Esc leaves it as it was; if the agent took it meanwhile, the text is queued as a new follow-up)",
  "/expand [N]      the full arguments and output of tool call N (default: the last one)",
  ...ChatAgents.help,
  "/sessions        list stored sessions                 /exit     leave (also Ctrl-D)",
  "Approvals: y = allow once, n = deny, a = always allow this exact shell command, or writes to files in this folder"
]

/** A tool call waiting for the person's answer: a durable pending approval (`agent.approvals`). */
interface Pending {
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

const pendingOf = (approval: Durable.PendingApproval): Pending => {
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
interface Call {
  readonly callId: string
  readonly name: string
  readonly args: string
  readonly result: { readonly isError: boolean; readonly text: string } | undefined
}

/** The most lines `/expand` prints of one output. */
const expandLines = 200

interface State {
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

const fit = (text: string, width: number): string =>
  text.length <= width ? text : width <= 1 ? "" : `${text.slice(0, width - 1)}…`

/** The first row of `text` at `width` and the rest, or `undefined` when it fits in one row. */
const cut = (text: string, width: number): readonly [string, string] | undefined => {
  if (text.length <= width) return undefined
  // At the last space that fits, or inside a word longer than the row.
  const space = text.lastIndexOf(" ", width)
  const at = space > 0 ? space : width
  return [text.slice(0, at), text.slice(at).replace(/^ /, "")]
}

/** `text` (one line, no newline) in rows of at most `width` characters. */
const rowsOf = (text: string, width: number): Array<string> => {
  const rows: Array<string> = []
  let rest = text
  while (true) {
    const next = cut(rest, width)
    if (next === undefined) return [...rows, rest]
    rows.push(next[0])
    rest = next[1]
  }
}

/** The session active last (`chat --continue`), where the agent lives. */
export const latest = Effect.flatMap(Runtime.Backend, (backend) => backend.latest)

/** Runs the chat on the agent of `Runtime.Backend` (here, or on a server) until the user leaves. */
export const chat = (
  settings: Settings,
  sessionId: Ids.SessionId | undefined
): Effect.Effect<void, CommandError, Runtime.Backend> =>
  Effect.scoped(Effect.gen(function*() {
    const tty = process.stdout.isTTY === true && process.stdin.isTTY === true
    const s = styles(process.stdout)
    const state = yield* Ref.make<State>({
      buffer: "",
      partial: undefined,
      open: false,
      later: [],
      running: false,
      turnStartedAt: 0,
      tokens: 0,
      spin: 0,
      approvals: [],
      lastCtrlC: undefined,
      editing: undefined,
      listed: [],
      drawn: 0,
      waiting: false
    })
    const lock = yield* Effect.makeSemaphore(1)
    const scope = yield* Effect.scope
    const quit = yield* Deferred.make<void>()
    const window = settings.doublePress.value
    /** The scopes (`Approval.scopeOf` keys) the user answered `a` for. */
    const always = yield* Ref.make<ReadonlySet<string>>(new Set())
    /** The prompt the agent claimed and that waits for the double-press window to close (see `promptSubmit`). */
    const held = yield* Ref.make<{ readonly id: Ids.AgentMessageId; readonly text: string } | undefined>(undefined)
    // A stored session's restored items wait for the user (Enter runs them, /drop N drops one): the gate opens on
    // the first thing submitted. `dropped` holds the ids dropped while the agent held them at the gate.
    const backend = yield* Runtime.Backend
    const opened = yield* backend.open(settings, sessionId)
    // Read once the session is open: crash repair has closed an interrupted turn, and `pendingInbox` is what the
    // agent restores.
    const summary = sessionId === undefined ? undefined : Resume.summarise(opened.events, opened.pendingInbox)
    const gate = yield* Deferred.make<void>()
    if (summary === undefined || summary.pending.length === 0) yield* Deferred.succeed(gate, undefined)
    const gated = Effect.map(Deferred.isDone(gate), (done) => !done)
    const dropped = yield* Ref.make<ReadonlySet<string>>(new Set())
    const calls = yield* Ref.make<ReadonlyArray<Call>>([])
    const columns = () => Math.max(20, process.stdout.columns ?? 80)
    const write = (text: string) => Effect.sync(() => void process.stdout.write(text))
    const update = (f: (st: State) => State) => Ref.update(state, f)

    const thinking = (text: string) => s.dim(`  ~ ${text}`)
    const styled = (kind: "text" | "reasoning") => (row: string) => kind === "reasoning" ? thinking(row) : row
    /** The width of the answer's rows (reasoning rows are indented). */
    const rowWidth = (kind: "text" | "reasoning") => columns() - 2 - (kind === "reasoning" ? 4 : 0)
    /**
     * How many rows of the answer's current line the live region shows; when the line grows past them, its first
     * rows go to the transcript. Without a terminal there is no live region: a line is printed when it ends.
     */
    const liveRows = () => tty ? Math.max(1, Math.floor((process.stdout.rows ?? 24) / 2) - 2) : Infinity

    // --- drawing ----------------------------------------------------------------------------------------------
    // The inbox is the agent's own (`agent.inbox`); the agent is built after the drawing code its hooks use.
    const inboxOf = yield* Ref.make<Effect.Effect<ReadonlyArray<Inbox.Item>>>(Effect.succeed([]))
    const inboxItems = Effect.flatten(Ref.get(inboxOf))
    const bottom = (st: State, items: ReadonlyArray<Inbox.Item>, now: number): ReadonlyArray<string> => {
      const width = columns() - 1
      const badge = Inbox.badge(items)
      const lines: Array<string> = st.partial !== undefined && st.partial.text.length > 0
        ? rowsOf(st.partial.text, rowWidth(st.partial.kind)).map(styled(st.partial.kind))
        : []
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
    const clearBottom = (st: State) => st.drawn === 0 ? "" : `${st.drawn > 1 ? `\x1b[${st.drawn - 1}A` : ""}\r\x1b[J`
    /**
     * Prints lines above the bottom area, then redraws it; without a terminal, just prints the lines. Must run
     * holding `lock`.
     */
    const paint = (lines: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (!tty) {
          if (lines.length > 0) yield* write(`${lines.join("\n")}\n`)
          return
        }
        const items = yield* inboxItems
        const st = yield* Ref.get(state)
        const area = bottom(st, items, yield* Clock.currentTimeMillis)
        yield* write(`${clearBottom(st)}${lines.map((l) => `${l}\n`).join("")}${area.join("\n")}`)
        yield* update((x) => ({ ...x, drawn: area.length }))
      })
    /**
     * Prints a notice: everything the chat says on its own (confirmations, listings, `/goal`, warnings, turn
     * starts) goes through here. Contract: a notice never splits a line of the streamed answer — it is printed
     * above the live region, which holds the answer's current line until it ends; when that line has outgrown the
     * live region (its first rows are already in the transcript), the notice waits and is printed right after it.
     */
    const emit = (lines: ReadonlyArray<string>) =>
      lock.withPermits(1)(Effect.gen(function*() {
        if (lines.length > 0 && (yield* Ref.get(state)).open) {
          yield* update((x) => ({ ...x, later: [...x.later, ...lines] }))
          return yield* paint([])
        }
        yield* paint(lines)
      }))
    const redraw = emit([])

    // --- the agent --------------------------------------------------------------------------------------------
    const hooks: Hooks.Hooks = {
      // A claimed prompt waits, first at the gate (restored items of a stored session, until the user runs them or
      // drops this one), then after a Ctrl-C until the double-press window closes: a second Ctrl-C inside the window
      // cancels this admission, so the prompt never reaches the model (it is discarded with the inbox).
      promptSubmit: ({ message }, next) =>
        Effect.gen(function*() {
          const text = Content.joinText(message.content)
          yield* Ref.set(held, { id: message.id, text })
          yield* Deferred.await(gate)
          if ((yield* Ref.get(dropped)).has(message.id)) {
            return { kind: "block", reason: "dropped by the user before it ran" } as const
          }
          let announced = false
          while (true) {
            const wait = Keys.holdFor((yield* Ref.get(state)).lastCtrlC, yield* Clock.currentTimeMillis, window)
            if (wait === 0) break
            if (!announced) {
              announced = true
              yield* emit([
                s.dim(`  next: “${visible(text)}” waits until the Ctrl-C window closes (Ctrl-C again discards it)`)
              ])
            }
            yield* Effect.sleep(Duration.millis(wait))
          }
          return yield* next
        }).pipe(Effect.ensuring(Ref.set(held, undefined))),
      // A call in a scope the user answered `a` for runs; any other waits for the person as a durable approval.
      toolApproval: ({ name, params }) =>
        Effect.map(
          Ref.get(always),
          (keys): Hooks.ApprovalDecision =>
            keys.has(Approval.scopeOf(name, params).key) ? { kind: "allow" } : { kind: "ask" }
        )
    }
    // Diagnostics (a provider retrying a request, …) are printed above the prompt like any other line, never over
    // the screen; the agent's fibers, forked from here on, inherit this logger.
    const logs = yield* Mailbox.make<string>()
    yield* Effect.locallyScopedWith(
      FiberRef.currentLoggers,
      replacePrinters(Logger.make(({ logLevel, message }) =>
        void logs.unsafeOffer(
          `${logLevel.label.toLowerCase()}: ${Array.isArray(message) ? message.map(String).join(" ") : String(message)}`
        )
      ))
    )
    yield* Effect.forever(Effect.flatMap(logs.take, (line) => emit([s.yellow(safe(line))]))).pipe(
      Effect.forkScoped
    )
    const { agent, goal, goals, subagents } = yield* opened.start(hooks)
    yield* Ref.set(inboxOf, Inbox.items(agent))
    const fates = yield* Inbox.track(agent)
    /**
     * The prompt submitted on an idle prompt and echoed there (`› text`): its turn needs no start line. `starting`
     * makes the submission and its echo one step, so the turn's `user/message` is never looked at in between.
     */
    const echoed = yield* Ref.make<Ids.AgentMessageId | undefined>(undefined)
    const starting = yield* Effect.makeSemaphore(1)
    const sendError = (e: { readonly message: string }) => new CommandError({ reason: "Input", message: e.message })

    // --- output of the agent's events -------------------------------------------------------------------------
    /**
     * Ends the answer's current line: returns its rows (the last one marked with `suffix`), then the notices that
     * waited for it, to print. Must run holding `lock`.
     */
    const endLine = (suffix = "") =>
      Effect.gen(function*() {
        const st = yield* Ref.get(state)
        yield* update((x) => ({ ...x, partial: undefined, open: false, later: [] }))
        const line = st.partial
        const rows = line === undefined || line.text.length === 0
          ? []
          : rowsOf(line.text, rowWidth(line.kind)).map(styled(line.kind))
        const marked = suffix === "" || rows.length === 0 ? rows : [...rows.slice(0, -1), `${rows.at(-1)}${suffix}`]
        return [...marked, ...st.later]
      })
    /**
     * Streams a delta of the answer: each line that ends leaves the live region whole (the notices that waited for
     * it follow); the line still going stays in the live region, or, once it outgrows it, has its first rows
     * printed and is open.
     */
    const stream = (kind: "text" | "reasoning", raw: string) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const delta = visible(raw)
        const before = yield* Ref.get(state)
        let done = before.partial !== undefined && before.partial.kind !== kind ? yield* endLine() : []
        const st = yield* Ref.get(state)
        let text = st.partial === undefined ? delta.replace(/^\s+/, "") : st.partial.text + delta
        let open = st.open
        let later = st.later
        const width = rowWidth(kind)
        for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n")) {
          done = [...done, ...rowsOf(text.slice(0, newline), width).map(styled(kind)), ...later]
          text = text.slice(newline + 1)
          open = false
          later = []
        }
        for (let extra = tty ? rowsOf(text, width).length - liveRows() : 0; extra > 0; extra--) {
          const [row, rest] = cut(text, width)!
          done = [...done, styled(kind)(row)]
          text = rest
          open = true
        }
        yield* update((x) => ({ ...x, partial: { kind, text }, open, later }))
        yield* paint(done)
      }))
    const onEvent = (event: AgentEvent.AgentEvent): Effect.Effect<void> =>
      Effect.gen(function*() {
        switch (event.type) {
          case "agent/status": {
            const now = yield* Clock.currentTimeMillis
            yield* update((st) => ({
              ...st,
              running: event.status === "running",
              turnStartedAt: event.status === "running" && !st.running ? now : st.turnStartedAt
            }))
            return yield* redraw
          }
          case "agent/inbox/enqueue":
          case "agent/inbox/dequeue":
          case "agent/inbox/discard":
            return yield* redraw
          case "agent/settled": {
            if (event.reason.kind === "completed") return
            const badge = Inbox.badge(yield* inboxItems)
            return yield* emit([
              event.reason.kind === "aborted"
                ? s.yellow(`turn ${event.turn} cancelled${badge === "" ? "" : `; still pending: ${badge}`}`)
                : s.red(`turn ${event.turn} failed: ${safe(event.reason.message)}${whatToDo(codeOf(event.reason))}`)
            ])
          }
          case "agent/error":
            return
          case "agent/approval/requested":
            return yield* requested(event.approval)
          case "agent/approval/answered":
            // Answers given here were shown then (and are no longer pending here); other answers are shown now.
            return yield* settled(
              event.callId,
              event.by === "timeout"
                ? "nobody answered in time: denied"
                : event.by === "cancel"
                ? "cancelled: denied"
                : `answered elsewhere: ${event.decision === "allow" ? "allowed" : "denied"}`
            )
          case "session/event":
            break
          default:
            return
        }
        const durable = event.event
        switch (durable.type) {
          case "assistant/chunk": {
            const text = deltaOf(durable.data.chunk, "text-delta")
            if (text !== undefined) return yield* stream("text", text)
            const thinking = deltaOf(durable.data.chunk, "reasoning-delta")
            if (thinking !== undefined) return yield* stream("reasoning", thinking)
            return
          }
          case "assistant/message": {
            const tokens = durable.data.usage?.outputTokens ?? 0
            yield* update((st) => ({ ...st, tokens: st.tokens + tokens }))
            return yield* lock.withPermits(1)(Effect.flatMap(endLine(), paint))
          }
          case "turn/end": {
            // An aborted stream leaves its partial line: close it where it stopped.
            yield* lock.withPermits(1)(Effect.flatMap(endLine(" …"), paint))
            // A budget stop settles as completed: say which budget ended the turn (R163).
            const reason = durable.data.reason
            if (reason.kind === "budget") {
              return yield* emit([s.yellow(`turn ${durable.data.turn} ${Timeline.budgetWords(reason)}`)])
            }
            return
          }
          case "tool/call": {
            const { arguments: args, callId, name } = durable.data
            const n = (yield* Ref.updateAndGet(calls, (all) => [...all, { callId, name, args, result: undefined }]))
              .length
            return yield* emit([s.cyan(`  ⚙ [${n}] ${Timeline.callLine(name, args)}`)])
          }
          case "tool/result": {
            const { callId, content, isError } = durable.data
            const text = content.map((b) => b.text).join("")
            // A provider may reuse call ids across steps: the result answers the newest call with that id.
            const all = yield* Ref.get(calls)
            const n = all.findLastIndex((call) => call.callId === callId) + 1
            if (n > 0) {
              yield* Ref.set(calls, all.map((call, i) => i === n - 1 ? { ...call, result: { isError, text } } : call))
            }
            return yield* emit([
              (isError ? s.yellow : s.dim)(
                `    ↳ ${n > 0 ? `[${n}] ` : ""}${Timeline.resultLine(durable.data)}${n > 0 ? ` (/expand ${n})` : ""}`
              )
            ])
          }
          case "steering/message":
            return yield* emit([
              s.dim(`  ↪ steering joined turn ${durable.data.turn}: ${visible(Content.joinText(durable.data.content))}`)
            ])
          case "user/message": {
            const text = visible(Content.joinText(durable.data.content))
            const goal = Timeline.goalLine(durable.data.source, text)
            if (goal !== undefined) return yield* emit([s.magenta(`  ◎ ${goal}`)])
            if (durable.data.source.kind !== "user") {
              return yield* emit([s.dim(`  + ${Timeline.sourceOf(durable.data.source)}: ${text}`)])
            }
            // A turn that starts with a prompt that was not echoed just before (a queued one, a restored one) says
            // which prompt it answers.
            const { messageId } = durable.data
            const echo = yield* starting.withPermits(1)(Ref.getAndSet(echoed, undefined))
            if (messageId !== undefined && messageId === echo) return
            return yield* emit([`${s.bold("▸")} ${fit(text.replace(/\s+/g, " ").trim(), columns() - 3)}`])
          }
          default:
            return
        }
      })

    // --- input ------------------------------------------------------------------------------------------------
    /**
     * Shows the approval the prompt asks about now: what a write would change, and (without a terminal, where there
     * is no prompt line) the question.
     */
    const showApproval = (pending: Pending) =>
      emit([
        ...(pending.live ? [] : [
          s.yellow(
            `${Timeline.callLine(pending.name, pending.args)} waited for your approval when the session stopped: ` +
              "allowed, it runs now and the model hears its result"
          )
        ]),
        ...Approval.preview(pending.name, pending.params).map((line) =>
          line.startsWith("  + ") ? s.green(line) : line.startsWith("  - ") ? s.red(line) : s.dim(line)
        ),
        ...(tty ? [] : [
          `allow ${Timeline.callLine(pending.name, pending.args)}? [y]es / [n]o / [a]lways ${pending.scope.words}`
        ])
      ])
    /** Adds a pending approval (once per call), and shows it when the prompt asks about it. */
    const requested = (approval: Durable.PendingApproval) =>
      Effect.gen(function*() {
        const pending = pendingOf(approval)
        // A server's agent (--remote) asks even in a scope answered `a`: its hook is the server's, so the chat answers.
        if ((yield* Ref.get(always)).has(pending.scope.key)) {
          return yield* agent.approve(pending.callId, { kind: "allow" }).pipe(Effect.ignore, Effect.forkIn(scope))
        }
        const first = yield* Ref.modify(state, (st) =>
          st.approvals.some((other) => other.callId === pending.callId)
            ? [false, st]
            : [st.approvals.length === 0, { ...st, approvals: [...st.approvals, pending] }])
        if (first) yield* showApproval(pending)
        else yield* redraw
      })
    /** Removes an answered approval; `words` say how it was answered; the next one, if any, is shown. */
    const settled = (callId: string, words: string) =>
      Effect.gen(function*() {
        const [gone, next] = yield* Ref.modify(state, (st) => {
          const gone = st.approvals.find((other) => other.callId === callId)
          const rest = st.approvals.filter((other) => other.callId !== callId)
          return [[gone, gone === st.approvals[0] ? rest[0] : undefined] as const, { ...st, approvals: rest }]
        })
        if (gone === undefined) return
        yield* emit([s.dim(`  ${words} ${gone.name}`)])
        if (next !== undefined) yield* showApproval(next)
      })
    /** Answers an approval through the agent (`agent.approve`, durable); a call a restart cut runs meanwhile. */
    const approve = (pending: Pending, answer: Durable.ApprovalAnswer) =>
      Effect.zipRight(
        settled(pending.callId, answer.kind === "allow" ? "allowed" : "denied"),
        agent.approve(pending.callId, answer).pipe(
          Effect.catchAll((e) => emit([s.yellow(`could not answer ${pending.name}: ${safe(e.message)}`)])),
          Effect.forkIn(scope)
        )
      )
    const answerApproval = (pending: Pending, key: string): Effect.Effect<void> => {
      const choice = key.trim().toLowerCase()
      if (choice === "y" || choice === "yes") return approve(pending, { kind: "allow" })
      if (choice === "a" || choice === "always") {
        // The other calls waiting in the same scope are allowed with it.
        return Effect.gen(function*() {
          yield* Ref.update(always, (keys) => new Set([...keys, pending.scope.key]))
          const same = (yield* Ref.get(state)).approvals.filter((other) => other.scope.key === pending.scope.key)
          yield* Effect.forEach(same, (other) => approve(other, { kind: "allow" }), { discard: true })
        })
      }
      if (choice === "n" || choice === "no") return approve(pending, { kind: "deny", reason: "the user said no" })
      return Effect.void
    }
    const submit = (line: string): Effect.Effect<void, CommandError> =>
      Effect.gen(function*() {
        const st = yield* Ref.get(state)
        if (st.approvals[0] !== undefined) return yield* answerApproval(st.approvals[0], line)
        const text = line.trim()
        // Restored items wait until Enter on an empty prompt or a request; commands and `+` queueing keep them waiting.
        if ((yield* gated) && !text.startsWith("/") && !text.startsWith("+")) {
          yield* Deferred.succeed(gate, undefined)
          yield* update((x) => ({ ...x, waiting: false }))
          yield* emit([s.dim("  running the restored items")])
        }
        if (text === "") return
        const [command, ...rest] = text.split(/\s+/)
        const argument = text.slice(command!.length).trim()
        if (text.startsWith("+")) return yield* queue(text.slice(1).trim())
        switch (command) {
          case "/exit":
          case "/quit":
            return yield* Effect.asVoid(Deferred.succeed(quit, undefined))
          case "/help":
            return yield* emit(help(window).map((l) => s.dim(l)))
          case "/queue":
            return yield* queue(argument)
          case "/now":
          case "/redo":
          case "/ifidle": {
            if (argument === "") return yield* emit([`usage: ${command} your request`])
            // `whenBusy` (R142): decided in the agent's own critical section, so there is no race with a turn's end.
            const sent = yield* Effect.either(
              agent.send(Message.make(argument), {
                target: "next-turn",
                wakeup: true,
                whenBusy: command === "/now" ? "interrupt" : command === "/redo" ? "rollback" : "reject"
              })
            )
            if (sent._tag === "Right") {
              const note = command === "/now" ? "(runs next)" : command === "/redo" ? "(runs next, instead)" : "(sent)"
              return yield* emit([`${s.bold("+")} ${argument} ${s.dim(note)}`])
            }
            if (sent.left._tag === "TurnRunningError") {
              return yield* emit([s.yellow(`not sent: a turn is running (/ifidle sends only to an idle agent)`)])
            }
            return yield* sendError(sent.left)
          }
          case "/inject": {
            if (argument === "") return yield* emit(["usage: /inject some context"])
            yield* agent.inject(Message.make(argument, MessageSource.plugin("chat"))).pipe(Effect.mapError(sendError))
            return yield* emit([s.dim(`  + context (the model sees it at its next step): ${argument}`)])
          }
          case "/inbox": {
            // At the gate, the restored item the agent holds is listed first: it is pending too.
            const holding = yield* Ref.get(held)
            const atGate = (yield* gated) && holding !== undefined
              ? (summary?.pending ?? []).filter((item) => item.id === holding.id)
              : []
            const items = [...atGate, ...(yield* inboxItems)]
            yield* update((x) => ({ ...x, listed: items }))
            return yield* emit(
              items.length === 0
                ? ["the inbox is empty"]
                : items.map((item, i) =>
                  `${i + 1}. ${item.placement.padEnd(8)} ${item.source === "user" ? "" : `(${item.source}) `}${
                    visible(item.label.replace(/\s+/g, " "))
                  }`
                )
            )
          }
          case "/drop": {
            // The numbers are those `/inbox` showed; before any listing, the inbox as it is now.
            const items = st.listed.length > 0 ? st.listed : yield* inboxItems
            const n = Number(rest[0])
            const item = Number.isInteger(n) ? items[n - 1] : undefined
            if (item === undefined) {
              return yield* emit([
                items.length === 0
                  ? "the inbox is empty: nothing to drop"
                  : `no item ${rest[0] ?? ""}: /drop takes a number from 1 to ${items.length} (/inbox lists them)`
              ])
            }
            const withdrew = `withdrew ${n}. ${item.placement} ${visible(item.text)} ${s.dim("(it will not run)")}`
            const gone = (fate: Inbox.Fate | undefined) =>
              s.yellow(`item ${n} is no longer pending: ${Inbox.fateWords(fate)} (${visible(item.text)})`)
            // An item the agent holds at the gate (claimed, not yet run) is dropped there, once.
            if ((yield* Ref.get(dropped)).has(item.id)) return yield* emit([gone("withdrawn")])
            const holding = yield* Ref.get(held)
            if ((yield* gated) && holding?.id === item.id) {
              yield* Ref.update(dropped, (ids) => new Set([...ids, item.id]))
              yield* fates.note(item.id, "withdrawn")
              return yield* emit([withdrew])
            }
            const result = yield* Inbox.drop(agent, fates, item.id)
            return yield* emit([result._tag === "Withdrawn" ? withdrew : gone(result.fate)])
          }
          case "/promote":
          case "/move": {
            // The numbers are those `/inbox` showed, as for `/drop`.
            const items = st.listed.length > 0 ? st.listed : yield* inboxItems
            const n = Number(rest[0])
            const item = Number.isInteger(n) ? items[n - 1] : undefined
            const usage = command === "/promote" ? "/promote N" : "/move N M"
            if (item === undefined) {
              return yield* emit([
                items.length === 0
                  ? `the inbox is empty: nothing to ${command!.slice(1)}`
                  : `no item ${rest[0] ?? ""}: ${usage} takes a number from 1 to ${items.length} (/inbox lists them)`
              ])
            }
            const m = Number(rest[1])
            if (command === "/move" && !(Number.isInteger(m) && m >= 1)) {
              return yield* emit([
                `usage: /move N M puts item N at place M (1 is first) among the ${item.placement} items`
              ])
            }
            const result = yield* (command === "/promote"
              ? Inbox.promote(agent, item.id)
              : Inbox.move(agent, item.id, m - 1)).pipe(Effect.mapError(sendError))
            if (result._tag === "Refused") {
              return yield* emit([
                s.yellow(
                  `could not ${command!.slice(1)} item ${n} (${visible(item.text)}): ${
                    Inbox.refusalWords(result.reason)
                  }`
                )
              ])
            }
            const after = (yield* inboxItems).filter((other) => other.placement === result.item.placement)
            const place = after.findIndex((other) => other.id === item.id) + 1
            return yield* emit([
              command === "/promote"
                ? `promoted ${n}. ${visible(item.text)} ${
                  s.dim("(steering: it joins the running turn at its next step)")
                }`
                : `moved ${n}. ${visible(item.text)} ${
                  s.dim(
                    `(now ${place > 0 ? `place ${place}` : "no longer pending"} of the ${result.item.placement} items)`
                  )
                }`
            ])
          }
          case "/expand": {
            const all = yield* Ref.get(calls)
            const n = rest[0] === undefined ? all.length : Number(rest[0])
            const call = Number.isInteger(n) ? all[n - 1] : undefined
            if (call === undefined) {
              return yield* emit([
                all.length === 0
                  ? "no tool calls yet"
                  : `no tool call ${rest[0] ?? ""}: /expand takes a number from 1 to ${all.length}`
              ])
            }
            const output = call.result === undefined ? ["(still running)"] : visible(call.result.text).split("\n")
            const shown = output.slice(0, expandLines)
            return yield* emit([
              s.cyan(`[${n}] ${call.name} ${visible(call.args)}`),
              ...(call.result?.isError === true ? [s.yellow("failed:")] : []),
              ...shown.map((line) => `  ${line}`),
              ...(output.length > shown.length
                ? [
                  s.dim(
                    `  … ${output.length - shown.length} more lines${
                      Option.match(Option.fromNullable(backend.flags(settings)), {
                        onNone: () => "",
                        onSome: (flags) => ` (harness sessions export --format md${flags} ${agent.id})`
                      })
                    }`
                  )
                ]
                : [])
            ])
          }
          case "/compact": {
            const started = yield* agent.compact(argument === "" ? undefined : { instruction: argument }).pipe(
              Effect.as(true),
              Effect.catchAll((e) => Effect.as(emit([`cannot compact now: ${e.message}`]), false))
            )
            if (started) yield* emit([s.dim("  compacting: the next requests carry a summary of the conversation")])
            return
          }
          case "/agents":
          case "/agent":
            return yield* emit(
              subagents === undefined
                ? ChatAgents.unavailable(goals === undefined)
                : yield* ChatAgents.run(subagents, agent, command, argument)
            )
          case "/sessions":
            return yield* emit(
              (yield* backend.list.pipe(Effect.catchAll((e) => Effect.succeed([e.message])))).map(visible)
            )
          case "/goal":
            return yield* emit(
              (yield* goal(argument).pipe(
                Effect.catchAll((e) => Effect.succeed(e.message))
              )).split("\n").map((line) => s.magenta(visible(line)))
            )
          default:
            if (command!.startsWith("/")) return yield* emit([`unknown command ${command}: /help lists the commands`])
        }
        if (st.editing !== undefined) {
          yield* update((x) => ({ ...x, editing: undefined }))
          return yield* saveEdit(st.editing, text)
        }
        if (st.running) {
          yield* agent.steer(Message.make(text)).pipe(Effect.mapError(sendError))
          return yield* emit([`${s.bold("›")} ${text} ${s.dim("(steering the running turn)")}`])
        }
        return yield* starting.withPermits(1)(Effect.gen(function*() {
          const id = yield* agent.followup(Message.make(text)).pipe(Effect.mapError(sendError))
          yield* Ref.set(echoed, id)
          yield* emit([`${s.bold("›")} ${text}`])
        }))
      })
    /**
     * Saves an edited item in place; when the agent took it meanwhile, says so and queues the edited text as a new
     * follow-up, so nothing typed is lost.
     */
    const saveEdit = (item: Inbox.Item, text: string) =>
      Effect.gen(function*() {
        const result = yield* Inbox.edit(agent, item.id, text).pipe(Effect.mapError(sendError))
        if (result._tag === "Changed") {
          return yield* emit([`${s.bold("✎")} ${text} ${s.dim("(edited in place: it keeps its place in the inbox)")}`])
        }
        yield* emit([
          s.yellow(
            `could not edit “${visible(item.text)}”: ${Inbox.refusalWords(result.reason)}; ${
              result.reason === "taken" ? "queuing your edited text as a new follow-up" : "queuing your text anew"
            }`
          )
        ])
        return yield* queue(text)
      })
    const queue = (text: string) =>
      text === ""
        ? emit(["usage: /queue your next request (or +your next request)"])
        : Effect.zipRight(
          agent.followup(Message.make(text)).pipe(Effect.mapError(sendError)),
          emit([`${s.bold("+")} ${text} ${s.dim("(queued)")}`])
        )
    const interrupt = (key: "esc" | "ctrl-c") =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const st = yield* Ref.get(state)
        const items = yield* inboxItems
        // At the gate no turn runs: the agent only holds the restored item it claimed.
        const running = st.running && !(yield* gated)
        const decided = Keys.interrupt(
          key,
          { lastCtrlC: st.lastCtrlC, running, pending: items.length },
          now,
          window
        )
        // The press is recorded before the agent is told: a prompt it claims from now on waits for the window.
        yield* update((x) => ({ ...x, lastCtrlC: decided.lastCtrlC, buffer: "" }))
        const within = Keys.windowWords(window)
        switch (decided.action) {
          case "exit":
            return yield* Deferred.succeed(quit, undefined)
          case "discard": {
            // The prompt the agent claimed and holds (waiting for the window or at the gate) goes with the inbox.
            const holding = yield* Ref.get(held)
            if (holding !== undefined) yield* fates.note(holding.id, "discarded")
            const waiting = holding === undefined ? 0 : 1
            yield* Effect.orDie(agent.cancel("user")) // a literal cause cannot be refused
            // Restored items waiting at the gate went with the inbox; what comes next runs as it comes.
            yield* Deferred.succeed(gate, undefined)
            yield* update((x) => ({ ...x, waiting: false }))
            return yield* emit([s.yellow(`cancelled; discarded ${items.length + waiting} pending item(s)`)])
          }
          case "cancel": {
            yield* Effect.orDie(agent.cancel("user", { keepInbox: true }))
            const badge = Inbox.badge(items)
            return yield* emit([
              s.yellow(
                `cancelling the turn${
                  badge === ""
                    ? ""
                    : key === "esc"
                    ? ` (keeping ${badge})`
                    : ` (keeping ${badge}; Ctrl-C again within ${within} discards them)`
                }`
              )
            ])
          }
          case "hint":
            return yield* emit([
              s.dim(
                items.length > 0
                  ? `Ctrl-C again within ${within} discards the inbox`
                  : "Ctrl-C again to exit (or /exit)"
              )
            ])
          case "nothing":
            return
        }
      })
    const onKey = (input: Terminal.UserInput): Effect.Effect<void, CommandError> =>
      Effect.gen(function*() {
        const { key } = input
        const st = yield* Ref.get(state)
        // Esc or Ctrl-C while editing abandons the edit (the item stays as it was); it cancels nothing.
        if (st.editing !== undefined && (key.name === "escape" || (key.ctrl && key.name === "c"))) {
          yield* update((x) => ({ ...x, buffer: "", editing: undefined }))
          return yield* emit([s.dim(`  edit abandoned: “${visible(st.editing.text)}” stays as it was`)])
        }
        if (key.ctrl && key.name === "c") return yield* interrupt("ctrl-c")
        if (key.name === "escape") return yield* interrupt("esc")
        if (key.ctrl && key.name === "d") {
          return Keys.ctrlDLeaves({ buffer: st.buffer, editing: st.editing !== undefined })
            ? yield* Deferred.succeed(quit, undefined)
            : undefined
        }
        if (st.approvals[0] !== undefined) {
          const char = Option.getOrElse(input.input, () => "")
          return yield* answerApproval(st.approvals[0], char)
        }
        if (key.name === "return" || key.name === "enter") {
          yield* update((x) => ({ ...x, buffer: "" }))
          yield* submit(st.buffer)
          return yield* redraw
        }
        if (key.name === "backspace") {
          yield* update((x) => ({ ...x, buffer: x.buffer.slice(0, -1) }))
          return yield* redraw
        }
        // Up on an empty prompt edits the last queued item of yours; Up again (text unchanged), the one before it.
        const editing = st.editing
        if (key.name === "up" && (st.buffer === "" || (editing !== undefined && st.buffer === editing.text))) {
          const mine = (yield* inboxItems).filter((item) => item.placement === "queued" && item.source === "user")
          // The item before the one being edited; the last one when nothing (or an item no longer pending) is.
          const at = editing === undefined ? -1 : mine.findIndex((item) => item.id === editing.id)
          const item = at === -1 ? mine.at(-1) : mine[at - 1]
          if (item === undefined) {
            return yield* emit([s.dim(editing === undefined ? "nothing queued to edit" : "no earlier queued item")])
          }
          yield* update((x) => ({ ...x, buffer: item.text, editing: item }))
          return yield* emit([
            s.dim(`  editing “${visible(item.text)}” (Enter saves it in place; Esc leaves it as it was; Up: earlier)`)
          ])
        }
        const char = Option.getOrUndefined(input.input)
        if (char !== undefined && !key.ctrl && !key.meta && printable(char)) {
          yield* update((x) => ({ ...x, buffer: x.buffer + char }))
          return yield* redraw
        }
      })

    // --- run --------------------------------------------------------------------------------------------------
    const events = yield* agent.subscribe
    yield* Effect.forever(Effect.flatMap(events.take, onEvent)).pipe(Effect.forkScoped)
    const label = settings.provider.value === "offline"
      ? s.yellow("offline model (a local simulator: no API key, no network)")
      : `${settings.model.value} via chat-completions`
    yield* emit([
      `${s.bold("harness chat")} — ${label}`,
      s.dim(
        `${sessionId === undefined ? "new session" : "continuing session"} ${agent.id} · ${
          backend.where(settings)
        } · workspace ${settings.workspace.value}`
      ),
      ...(summary === undefined ? [] : opening(summary)),
      s.dim("Type a request and press Enter. While the agent works, Enter steers it; +text queues; /help for more.")
    ])
    if (summary !== undefined && summary.pending.length > 0) {
      yield* update((st) => ({ ...st, listed: summary.pending, waiting: true }))
    }
    // The approvals a resumed session restores (R173), read after subscribing: none is missed, none shown twice.
    const restored = yield* agent.approvals
    if (restored.length > 0) {
      yield* emit([s.yellow(`${restored.length} tool call(s) wait for your approval:`)])
      yield* Effect.forEach(restored, requested, { discard: true })
    }
    if (tty) {
      yield* redraw.pipe(
        Effect.zipRight(update((st) => ({ ...st, spin: st.spin + 1 }))),
        Effect.repeat(Schedule.spaced("120 millis")),
        Effect.forkScoped
      )
      const terminal = yield* NodeTerminal.make(() => false)
      const keys = yield* terminal.readInput
      yield* Effect.forever(Effect.flatMap(keys.take, onKey)).pipe(
        Effect.catchTag("NoSuchElementException", () => Deferred.succeed(quit, undefined)),
        Effect.catchAll((e) => emit([s.red(e.message)])),
        Effect.forkScoped
      )
    } else {
      const lines = yield* readLines
      yield* Effect.forever(
        Effect.flatMap(lines.take, (line) => Effect.catchAll(submit(line), (e) => emit([e.message])))
      ).pipe(
        Effect.catchTag("NoSuchElementException", () =>
          // Standard input ended: finish what was asked, then leave.
          Effect.zipRight(agent.whenIdle, Deferred.succeed(quit, undefined))),
        Effect.forkScoped
      )
    }
    yield* Deferred.await(quit)
    yield* lock.withPermits(1)(Effect.gen(function*() {
      // What was streamed of a line that did not end, and the notices that waited for it, stay on the screen.
      const rest = yield* endLine()
      const st = yield* Ref.get(state)
      yield* write(`${tty ? clearBottom(st) : ""}${rest.map((line) => `${line}\n`).join("")}`)
      yield* update((x) => ({ ...x, drawn: 0 }))
    }))
    const flags = backend.flags(settings)
    yield* write(
      flags === undefined
        ? `bye — session ${agent.id} was in memory: it is gone\n`
        : `bye — session ${agent.id}: harness sessions show${flags} ${agent.id}\n`
    )
  }))

/** The opening lines of a stored session: the conversation so far, interrupted turns, the restored items. */
const opening = (summary: Resume.Summary): ReadonlyArray<string> => {
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

const whatToDo = (code: string | undefined): string => {
  const hint = hintFor(code)
  return hint !== "" ? hint : code === undefined ? "" : ` (${code})`
}

/** Whether typed input is printable text (no control characters). */
const printable = (text: string): boolean => [...text].every((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f)

/** Standard input as lines, in a mailbox that ends with the input. */
const readLines = Effect.gen(function*() {
  const mailbox = yield* Mailbox.make<string>()
  const rl = readline.createInterface({ input: process.stdin })
  rl.on("line", (line) => void mailbox.unsafeOffer(line))
  rl.on("close", () => void mailbox.unsafeDone(Exit.void))
  yield* Effect.addFinalizer(() => Effect.sync(() => rl.close()))
  return mailbox
})
