/**
 * `harness run`: one prompt, printed as it streams (or every live and durable event as NDJSON), until the agent is
 * idle again. The answer goes to standard output; tool calls, the session and failures to standard error.
 */
import type { LanguageModel } from "@effect/ai"
import type { Agent, Hooks } from "@harness/agent"
import { AgentEvent, Message, type Turn } from "@harness/domain"
import type { Ids, Json } from "@harness/domain"
import { SessionLog, type SessionStore } from "@harness/session"
import { Effect, Queue, Schema } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Inbox from "./inbox.js"
import { err, out, styles } from "./output.js"
import * as Runtime from "./runtime.js"
import { showStore } from "./settings.js"
import * as Timeline from "./timeline.js"

const encodeEvent = Schema.encodeSync(AgentEvent.AgentEvent)

/** A `toolApproval` hook for non-interactive use: allow all (`--yes`) or deny with what to do. */
export const approvals = (yes: boolean): Hooks.Hooks => ({
  toolApproval: ({ name }) =>
    Effect.succeed<Hooks.ApprovalDecision>(
      yes
        ? { kind: "allow" }
        : { kind: "deny", reason: `${name} needs approval: run again with --yes to allow writes and shell commands` }
    )
})

/** The text of a streamed chunk of the given kind (`text-delta`, `reasoning-delta`), if it is one. */
export const deltaOf = (chunk: Json.JsonValue, kind: "text-delta" | "reasoning-delta"): string | undefined => {
  if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk)) return undefined
  const part = chunk as { readonly [key: string]: Json.JsonValue } // a JSON object, checked above
  return part.type === kind && typeof part.delta === "string" ? part.delta : undefined
}

/** How one live event is printed by `run` (human mode). */
export const printEvent = (event: AgentEvent.AgentEvent): Effect.Effect<void> => {
  const e = styles(process.stderr)
  if (event.type === "agent/error") return err(e.red(`error: ${event.error.message}\n`))
  if (event.type !== "session/event") return Effect.void
  const durable = event.event
  switch (durable.type) {
    case "assistant/chunk": {
      const delta = deltaOf(durable.data.chunk, "text-delta")
      return delta === undefined ? Effect.void : out(delta)
    }
    case "assistant/message":
      return durable.data.content.some((b) => b.type === "text" && b.text.length > 0) ? out("\n") : Effect.void
    case "tool/call":
      return err(e.cyan(`  → ${Timeline.callLine(durable.data.name, durable.data.arguments)}\n`))
    case "tool/result":
      return err(
        (durable.data.isError ? e.yellow : e.dim)(`  ← ${durable.data.name}: ${Timeline.resultLine(durable.data)}\n`)
      )
    case "turn/end":
      return durable.data.reason.kind === "completed"
        ? Effect.void
        : err(e.red(`turn ${durable.data.turn} ${Timeline.describe(durable)?.replace(/^turn \d+ /, "")}\n`))
    default:
      return Effect.void
  }
}

/**
 * Reads events until the agent is idle after at least one settled turn; returns every settle reason, in order.
 */
export const consume = (
  events: Queue.Dequeue<AgentEvent.AgentEvent>,
  onEvent: (event: AgentEvent.AgentEvent) => Effect.Effect<void>
): Effect.Effect<ReadonlyArray<Turn.SettleReason>> =>
  Effect.gen(function*() {
    const settled: Array<Turn.SettleReason> = []
    while (true) {
      const event = yield* Queue.take(events)
      yield* onEvent(event)
      if (event.type === "agent/settled") settled.push(event.reason)
      if (event.type === "agent/status" && event.status === "idle" && settled.length > 0) return settled
      if (event.type === "agent/disposed") return settled
    }
  })

/** Opens (or creates) the session a command works on. */
export const openSession = (id: Ids.SessionId | undefined) =>
  (id === undefined ? SessionLog.make() : SessionLog.open(id)).pipe(
    Effect.mapError((e) =>
      new CommandError({
        reason: "Store",
        message: id === undefined
          ? `cannot create a session: ${e.message}`
          : `cannot open session ${id}: ${e.message}`
      })
    )
  )

/** Runs one prompt to idle. Fails with `CommandError { TurnFailed }` when a turn did not complete. */
export const run = (
  settings: Settings,
  options: {
    readonly prompt: string
    readonly json: boolean
    readonly yes: boolean
    readonly session?: Ids.SessionId | undefined
  }
): Effect.Effect<void, CommandError, SessionStore.SessionStore | LanguageModel.LanguageModel> =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* openSession(options.session)
    const agent: Agent.Service = yield* Runtime.makeAgent(settings, log, approvals(options.yes))
    const inbox = yield* Inbox.make(agent)
    const events = yield* agent.subscribe
    const print = options.json
      ? (event: AgentEvent.AgentEvent) => out(`${JSON.stringify(encodeEvent(event))}\n`)
      : printEvent
    yield* agent.followup(Message.make(options.prompt)).pipe(
      Effect.mapError((e) => new CommandError({ reason: "Input", message: e.message }))
    )
    const settled = yield* consume(events, (event) => Effect.zipRight(inbox.track(event), print(event)))
    const e = styles(process.stderr)
    if (!options.json) {
      yield* err(
        e.dim(`session ${agent.id} · ${showStore(settings.store.value)} · harness sessions show ${agent.id}\n`)
      )
    }
    const failed = settled.find((reason) => reason.kind !== "completed")
    if (failed !== undefined) {
      return yield* new CommandError({
        reason: "TurnFailed",
        message: failed.kind === "error"
          ? `the turn failed: ${failed.message}${failed.code === undefined ? "" : ` (${failed.code})`}`
          : `the turn ended ${failed.kind}`
      })
    }
  }))
