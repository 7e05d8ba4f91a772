/**
 * `harness demo`: a scripted walkthrough on the offline model that prints a readable timeline of the live and
 * durable events — a tool call on the real workspace, a follow-up queued while a turn runs, a steer landing at
 * the next step, an injection that does not run the model, a withdraw, `cancel` with `keepInbox`, and a goal that
 * takes two rounds — and ends with where the session is stored and the command to look at it.
 */
import { type AgentEvent, Content, Message, MessageSource } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Clock, Effect, Fiber, Queue, Stream, SubscriptionRef } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Inbox from "./inbox.js"
import { out, styles } from "./output.js"
import { approvals, openSession } from "./run.js"
import * as Runtime from "./runtime.js"
import { showStore } from "./settings.js"
import * as Timeline from "./timeline.js"

const preview = (text: string, max = 60) => JSON.stringify(text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** An inbox item in the timeline: its text quoted, or what a goal message is. */
const itemText = (message: Message.AgentMessage): string => {
  const text = Content.joinText(message.content)
  return Timeline.goalLine(message.source, text) ?? preview(text)
}

/** The timeline line of a live event, or `undefined` when it is not shown. */
export const liveLine = (event: AgentEvent.AgentEvent): string | undefined => {
  switch (event.type) {
    case "agent/inbox/enqueue":
      return `inbox: + ${event.placement} ${itemText(event.message)}`
    case "agent/inbox/dequeue":
      return `inbox: claimed ${itemText(event.message)}`
    case "agent/inbox/discard":
      return event.reason === "withdraw"
        ? `inbox: withdrew ${event.messages.map(itemText).join(", ")}`
        : `inbox: discarded ${event.messages.length} item(s) (${event.reason})`
    case "agent/cancel-requested":
      return `cancel requested (${event.cause})`
    case "agent/settled":
      return `turn ${event.turn} settled: ${event.reason.kind}`
    case "agent/error":
      return `error: ${event.error.message}`
    case "agent/status":
    case "agent/disposed":
      return undefined
    case "session/event": {
      const durable = event.event
      if (durable.type === "step/end" || durable.type === "request/header") return undefined
      if (durable.type === "assistant/message") {
        const text = durable.data.content.filter((b) => b.type === "text").map((b) => b.text).join("").trim()
        const calls = durable.data.content.flatMap((b) =>
          b.type === "tool-call" ? [`[calls ${Timeline.callLine(b.name, b.arguments)}]`] : []
        )
        return `assistant: ${[text.replace(/\n/g, "\n              "), ...calls].filter((s) => s !== "").join(" ")}`
      }
      return Timeline.describe(durable)
    }
  }
}

const demoAgent = (settings: Settings) =>
  Effect.gen(function*() {
    const log = yield* openSession(undefined)
    return yield* Runtime.makeAgent(settings, log, approvals(false))
  })

/** The `--store` a follow-up command needs: none for the default store, the store otherwise (secrets redacted). */
const storeFlag = (settings: Settings): string => {
  if (settings.store.origin.startsWith("default")) return ""
  const shown = showStore(settings.store.value)
  return ` --store ${/\s/.test(shown) ? JSON.stringify(shown) : shown}`
}

const failed = (e: { readonly message: string }) => new CommandError({ reason: "Input", message: e.message })

/** Runs the walkthrough against the store and model in context. */
export const demo = (settings: Settings) =>
  Effect.scoped(Effect.gen(function*() {
    const s = styles(process.stdout)
    const { agent, goals } = yield* demoAgent(settings)
    const start = yield* Clock.currentTimeMillis
    const stamp = Effect.map(Clock.currentTimeMillis, (now) => `+${((now - start) / 1000).toFixed(2)}s`.padStart(7))
    const say = (text: string) => Effect.flatMap(stamp, (t) => out(`${s.dim(t)}  ${s.bold(`▸ ${text}`)}\n`))

    yield* out(
      `${s.bold("Harness demo")} — ${
        s.yellow("offline model")
      } (a local simulator: no API key, no network; words stream at ${settings.pace.value} ms)\n` +
        `workspace ${settings.workspace.value}\nstore     ${showStore(settings.store.value)}\nsession   ${agent.id}\n\n`
    )

    // The printer shows every live event in order and records the last durable seq it printed.
    const printed = yield* SubscriptionRef.make(-1)
    const shown = yield* agent.subscribe
    const watched = yield* agent.subscribe
    const printer = yield* Effect.forever(Effect.gen(function*() {
      const event = yield* Queue.take(shown)
      const line = liveLine(event)
      if (line !== undefined) {
        const depth = event.type === "session/event" && !event.event.type.startsWith("turn/") ? "    " : "  "
        yield* out(`${s.dim(yield* stamp)}  ${depth}${line.startsWith("assistant") ? s.cyan(line) : line}\n`)
      }
      if (event.type === "session/event") yield* SubscriptionRef.set(printed, event.event.seq)
    })).pipe(Effect.forkScoped)
    const waitFor = (predicate: (event: AgentEvent.AgentEvent) => boolean) =>
      Effect.gen(function*() {
        while (!predicate(yield* Queue.take(watched))) {
          // skip
        }
      })
    /** Waits until the printer has shown every durable event logged so far. */
    const caughtUp = Effect.gen(function*() {
      const last = (yield* agent.log).at(-1)?.seq ?? -1
      yield* printed.changes.pipe(Stream.takeUntil((seq) => seq >= last), Stream.runDrain)
    })
    const isDurable = (type: string, check: (data: Record<string, unknown>) => boolean = () => true) =>
    (
      event: AgentEvent.AgentEvent
    ) => event.type === "session/event" && event.event.type === type && check(event.event.data)

    yield* say("1. Ask about the workspace: the offline model calls the real list_dir tool.")
    yield* agent.followup(Message.make("List the files in the workspace."))
    yield* waitFor(isDurable("tool/call"))

    yield* say("2. While the tool runs: queue a follow-up (its own turn, later) …")
    yield* agent.followup(Message.make("Now tell me a long story."))
    yield* say("   … steer the running turn (it lands at the next step) …")
    yield* agent.steer(Message.make("Keep it brief, please."))
    yield* say("   … and inject context (model-visible, never runs the model by itself).")
    yield* agent.inject(Message.make("The user is watching the demo in a terminal.", MessageSource.plugin("demo")))
    yield* waitFor((e) => e.type === "agent/settled")

    yield* waitFor(isDurable("assistant/chunk", (d) => d.turn === 2))
    yield* say("3. The story streams. Queue two more follow-ups, then withdraw the second.")
    yield* agent.followup(Message.make("Read README.md"))
    const extra = yield* agent.followup(Message.make("What is a dog?"))
    yield* say(`   The inbox now holds: ${Inbox.badge(yield* Inbox.items(agent))}.`)
    const withdrawn = yield* Inbox.withdraw(agent, extra)
    yield* say(
      withdrawn._tag === "Withdrawn"
        ? `   Withdrawn (it will never run); the inbox holds: ${Inbox.badge(yield* Inbox.items(agent))}.`
        : "   Too late to withdraw: the agent had already taken it."
    )

    for (let i = 0; i < 12; i++) yield* waitFor(isDurable("assistant/chunk", (d) => d.turn === 2))
    yield* say("4. Cancel the story, keeping the inbox: the turn ends aborted and the queue runs next.")
    yield* agent.cancel("user", { keepInbox: true })
    yield* agent.whenIdle
    yield* caughtUp

    yield* say("5. A goal: the agent keeps working in rounds until the goal is complete (two rounds here).")
    const goal = yield* goals.create({
      objective: "List the files, then confirm the workspace is in order.",
      maxGoalRounds: 5
    }).pipe(Effect.mapError(failed))
    yield* goals.settled
    yield* caughtUp
    const view = yield* Effect.mapError(goals.get, failed)
    yield* say(`   Goal ${goal.id} is ${view.goal?.phase ?? "cleared"} after ${view.roundsStarted} round(s).`)

    const events = yield* agent.log
    yield* Fiber.interrupt(printer)

    const violations = LogCheck.checkLog(events)
    const turns = events.filter((e) => e.type === "turn/start").length
    yield* out(
      `\n${s.bold("Done.")} ${turns} turns, ${events.length} durable events; ${
        violations.length === 0 ? s.green("the log checks clean") : s.red(`${violations.length} log problems`)
      }.\n` +
        (settings.store.value._tag === "memory"
          ? "The session was kept in memory and is gone now (run without --store memory to keep it).\n"
          : `The session is stored in ${showStore(settings.store.value)}\n` +
            `Look at it:   npx harness sessions show ${agent.id}${storeFlag(settings)}\n` +
            `Talk to it:   npx harness sessions resume ${agent.id}${storeFlag(settings)}\n`)
    )
  })).pipe(
    Effect.mapError((e) => e._tag === "CommandError" ? e : new CommandError({ reason: "Input", message: e.message }))
  )
