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
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import type { Hooks } from "@harness/agent"
import { type AgentEvent, type Approval as Durable, Content, type Ids, Message } from "@harness/domain"
import { Clock, Deferred, Duration, Effect, FiberRef, Logger, Mailbox, Ref, Schedule } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Approval from "./approval.js"
import * as ChatCommands from "./chatCommands.js"
import * as ChatKeys from "./chatKeys.js"
import {
  type Call,
  type ChatContext,
  cut,
  fit,
  opening,
  type Pending,
  pendingOf,
  readLines,
  rowsOf,
  type State,
  statusLines,
  whatToDo
} from "./chatView.js"
import * as Inbox from "./inbox.js"
import * as Keys from "./keys.js"
import { replacePrinters, safe, styles, visible } from "./output.js"
import * as Resume from "./resume.js"
import { codeOf, deltaOf } from "./run.js"
import * as Runtime from "./runtime.js"
import * as Timeline from "./timeline.js"

export { help } from "./chatCommands.js"

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
    const bottom = (st: State, items: ReadonlyArray<Inbox.Item>, now: number): ReadonlyArray<string> => [
      ...(st.partial !== undefined && st.partial.text.length > 0
        ? rowsOf(st.partial.text, rowWidth(st.partial.kind)).map(styled(st.partial.kind))
        : []),
      ...statusLines(s, st, items, now, columns() - 1)
    ]
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
        if (command!.startsWith("/")) return yield* ChatCommands.run(context, st, command!, rest, argument)
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
    const context: ChatContext = {
      settings,
      backend,
      started: { agent, goal, goals, subagents },
      s,
      window,
      state,
      update,
      quit,
      gate,
      gated,
      held,
      dropped,
      summary,
      inboxItems,
      fates,
      calls,
      emit,
      redraw,
      queue,
      sendError,
      submit,
      answerApproval
    }

    // --- run --------------------------------------------------------------------------------------------------
    const events = yield* agent.subscribe
    yield* Effect.forever(Effect.flatMap(events.take, onEvent)).pipe(Effect.forkScoped)
    const label = settings.provider.value === "offline"
      ? s.yellow("offline model (a local simulator: no API key, no network)")
      : `${settings.model.value} via ${settings.provider.value}`
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
      yield* Effect.forever(Effect.flatMap(keys.take, ChatKeys.onKey(context))).pipe(
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
