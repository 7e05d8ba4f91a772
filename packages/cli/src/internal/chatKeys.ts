/** The chat's keys: Esc and Ctrl-C (cancel, discard, exit), Ctrl-D, Enter, Backspace, Up (edit a queued item). */
import type { Terminal } from "@effect/platform"
import { Clock, Deferred, Effect, Option, Ref } from "effect"
import type { CommandError } from "../CliError.js"
import { type ChatContext, printable } from "./chatView.js"
import * as Inbox from "./inbox.js"
import * as Keys from "./keys.js"
import { visible } from "./output.js"

const interrupt = (context: ChatContext, key: "esc" | "ctrl-c") =>
  Effect.gen(function*() {
    const { emit, fates, gate, gated, held, inboxItems, quit, s, state, update, window } = context
    const { agent } = context.started
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

/** Handles a key pressed at the prompt. */
export const onKey = (context: ChatContext) => (input: Terminal.UserInput): Effect.Effect<void, CommandError> =>
  Effect.gen(function*() {
    const { answerApproval, emit, inboxItems, quit, redraw, s, state, submit, update } = context
    const { key } = input
    const st = yield* Ref.get(state)
    // Esc or Ctrl-C while editing abandons the edit (the item stays as it was); it cancels nothing.
    if (st.editing !== undefined && (key.name === "escape" || (key.ctrl && key.name === "c"))) {
      yield* update((x) => ({ ...x, buffer: "", editing: undefined }))
      return yield* emit([s.dim(`  edit abandoned: “${visible(st.editing.text)}” stays as it was`)])
    }
    if (key.ctrl && key.name === "c") return yield* interrupt(context, "ctrl-c")
    if (key.name === "escape") return yield* interrupt(context, "esc")
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
