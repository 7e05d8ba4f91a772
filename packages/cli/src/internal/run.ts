/**
 * `harness run`: one prompt, printed as it streams (or every live and durable event as NDJSON), until the agent is
 * idle again. The answer goes to standard output; tool calls, the session and failures to standard error.
 */
import type { Hooks } from "@harness/agent"
import { AgentEvent, Message, type Turn } from "@harness/domain"
import type { Ids, Json } from "@harness/domain"

import { Effect, Fiber, Option, Queue, Ref, Schema } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import { err, out, safe, styles, visible } from "./output.js"
import * as Runtime from "./runtime.js"
import * as Timeline from "./timeline.js"

const encodeEvent = Schema.encodeSync(AgentEvent.AgentEvent)

/**
 * A `toolApproval` hook for non-interactive use: allow all (`--yes`) or deny with what to do. Each denied call is
 * added to `denied` (as `name(args)`), so the command can end with a non-zero exit.
 */
export const approvals = (yes: boolean, denied?: Ref.Ref<ReadonlyArray<string>>): Hooks.Hooks => ({
  toolApproval: ({ arguments: args, name }) =>
    yes
      ? Effect.succeed<Hooks.ApprovalDecision>({ kind: "allow" })
      : Effect.as(
        denied === undefined ? Effect.void : Ref.update(denied, (all) => [...all, Timeline.callLine(name, args)]),
        { kind: "deny", reason: `${name} needs approval: run again with --yes to allow writes and shell commands` }
      )
})

/**
 * The `toolApproval` hook of an agent nobody is at a terminal for (`harness serve`, a cluster's runner): with `ask`
 * (and not `yes`) a call waits for a client's durable answer; otherwise {@link approvals}.
 */
export const unattended = (yes: boolean, ask: boolean): Hooks.Hooks =>
  ask && !yes ? { toolApproval: () => Effect.succeed({ kind: "ask" as const }) } : approvals(yes)

/** The text of a streamed chunk of the given kind (`text-delta`, `reasoning-delta`), if it is one. */
export const deltaOf = (chunk: Json.JsonValue, kind: "text-delta" | "reasoning-delta"): string | undefined => {
  if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk)) return undefined
  const part = chunk as { readonly [key: string]: Json.JsonValue } // a JSON object, checked above
  return part.type === kind && typeof part.delta === "string" ? part.delta : undefined
}

/** How one live event is printed by `run` (human mode). */
export const printEvent = (event: AgentEvent.AgentEvent): Effect.Effect<void> => {
  const e = styles(process.stderr)
  if (event.type === "agent/error") return err(e.red(`error: ${safe(event.error.message)}\n`))
  if (event.type !== "session/event") return Effect.void
  const durable = event.event
  switch (durable.type) {
    case "assistant/chunk": {
      const delta = deltaOf(durable.data.chunk, "text-delta")
      return delta === undefined ? Effect.void : out(visible(delta))
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
        : err(
          e.red(`turn ${durable.data.turn} ${visible(Timeline.describe(durable)?.replace(/^turn \d+ /, "") ?? "")}\n`)
        )
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

/** Opens (or creates) the session a command works on, holding its writer lease (see `Runtime.openSession`). */
export const openSession = Runtime.openSession

/**
 * Runs one prompt to idle — or, with `goal`, makes the prompt a goal's objective and runs its rounds until the goal
 * settles. Fails with `CommandError { TurnFailed }` when a turn did not complete, `{ GoalNotDone }` when the goal
 * ended blocked or paused.
 */
export const run = (
  settings: Settings,
  options: {
    readonly prompt: string
    readonly json: boolean
    readonly yes: boolean
    readonly session?: Ids.SessionId | undefined
    readonly goal?: { readonly maxRounds: number | undefined } | undefined
  }
): Effect.Effect<void, CommandError, Runtime.Backend> =>
  Effect.scoped(Effect.gen(function*() {
    const backend = yield* Runtime.Backend
    const opened = yield* backend.open(settings, options.session)
    const denied = yield* Ref.make<ReadonlyArray<string>>([])
    const { agent, goals } = yield* opened.start(approvals(options.yes, denied))
    const events = yield* agent.subscribe
    if (options.json) {
      const store = backend.where(settings)
      yield* out(`${JSON.stringify({ type: "run/session", session: agent.id, store })}\n`)
    }
    const print = options.json
      ? (event: AgentEvent.AgentEvent) => out(`${JSON.stringify(encodeEvent(event))}\n`)
      : printEvent
    const e = styles(process.stderr)
    const inputError = (e: { readonly message: string }) => new CommandError({ reason: "Input", message: e.message })
    let settled: ReadonlyArray<Turn.SettleReason>
    if (options.goal === undefined) {
      yield* agent.followup(Message.make(options.prompt)).pipe(Effect.mapError(inputError))
      settled = yield* consume(events, print)
    } else {
      if (goals === undefined) {
        return yield* new CommandError({ reason: "Input", message: "--goal is not available with --remote yet" })
      }
      const goal = yield* goals.create({ objective: options.prompt, maxGoalRounds: options.goal.maxRounds }).pipe(
        Effect.mapError((e) => new CommandError({ reason: "Input", message: `cannot create the goal: ${e.message}` }))
      )
      if (!options.json) {
        yield* err(e.dim(`goal ${goal.id}: ${goal.objective} (at most ${goal.maxGoalRounds} rounds)\n`))
      }
      settled = yield* consumeUntil(events, print, goals.settled)
    }
    const flags = backend.flags(settings)
    if (!options.json) {
      yield* err(e.dim(
        flags === undefined
          ? `session ${agent.id} · memory (gone when this command ends)\n`
          : `session ${agent.id} · ${backend.where(settings)} · harness sessions show${flags} ${agent.id}\n`
      ))
    }
    const failed = settled.find((reason) => reason.kind !== "completed")
    if (options.goal !== undefined && goals !== undefined) {
      const view = yield* goals.get.pipe(Effect.mapError(inputError))
      const goal = view.goal
      if (!options.json) {
        yield* err(
          goal === undefined ?
            "the goal was cleared\n" :
            `goal ${goal.phase} after ${view.roundsStarted} round(s)${
              goal.blockedReason === undefined ? "" : `: ${goal.blockedReason.code} — ${goal.blockedReason.message}`
            }\n`
        )
      }
      if (goal !== undefined && goal.phase !== "complete") {
        return yield* new CommandError({
          reason: "GoalNotDone",
          message: `the goal is ${goal.phase}${
            goal.blockedReason === undefined ? "" : ` (${goal.blockedReason.message})`
          }${
            flags === undefined
              ? ""
              : `: look at it with harness sessions show${flags} ${agent.id}, continue it with harness chat${flags} ` +
                `--session ${agent.id} and /goal resume`
          }`
        })
      }
      return
    }
    if (failed !== undefined) {
      const code = failed.kind === "error" ? codeOf(failed) : undefined
      return yield* new CommandError({
        reason: "TurnFailed",
        message: failed.kind === "error"
          ? `the turn failed: ${failed.message}${code === undefined ? "" : ` (${code})`}${hintFor(code)}`
          : `the turn ended ${failed.kind}`
      })
    }
    const refused = yield* Ref.get(denied)
    if (refused.length > 0) {
      return yield* new CommandError({
        reason: "Denied",
        message: `${refused.length === 1 ? "a call was" : `${refused.length} calls were`} denied: ${
          refused.join(", ")
        } — run again with --yes to allow writes and shell commands`
      })
    }
  }))

/** Reads events until `done` completes, then prints what is left; returns every settle reason, in order. */
const consumeUntil = (
  events: Queue.Dequeue<AgentEvent.AgentEvent>,
  onEvent: (event: AgentEvent.AgentEvent) => Effect.Effect<void>,
  done: Effect.Effect<void>
): Effect.Effect<ReadonlyArray<Turn.SettleReason>> =>
  Effect.gen(function*() {
    const settled: Array<Turn.SettleReason> = []
    const handle = (event: AgentEvent.AgentEvent) =>
      Effect.zipRight(
        Effect.sync(() => {
          if (event.type === "agent/settled") settled.push(event.reason)
        }),
        onEvent(event)
      )
    const finished = yield* Effect.fork(done)
    while (true) {
      const next = yield* Effect.raceFirst(
        Effect.map(Queue.take(events), Option.some),
        Effect.as(Fiber.join(finished), Option.none())
      )
      if (Option.isNone(next)) break
      yield* handle(next.value)
    }
    // `done` means the agent is idle: everything it published is already in the queue.
    for (const event of yield* Queue.takeAll(events)) yield* handle(event)
    return settled
  })

/** The failure code of a turn that ended in error: its own, or its model request's (`LlmFailure.code`). */
export const codeOf = (
  reason: { readonly code?: string | undefined; readonly failure?: { readonly code: string } | undefined }
): string | undefined => reason.code ?? reason.failure?.code

/** What to do about a provider failure, by its code (empty when there is nothing specific to say). */
export const hintFor = (code: string | undefined): string => {
  switch (code) {
    case "AUTH":
    case "UNAUTHORIZED":
      return " — check the API key (harness config shows where it comes from)"
    case "RATE_LIMIT":
    case "QUOTA":
      return " — the provider is limiting requests; wait a moment and try again"
    case "NETWORK":
    case "TIMEOUT":
      return " — check the network or --base-url (harness config shows it), then try again"
    case "OVERLOADED":
    case "SERVER":
      return " — the provider had a problem on its side; try again in a while"
    case "CONTEXT_LENGTH":
      return " — the conversation is too long for the model: start a new session, or fork an earlier point " +
        "(harness sessions fork <id> --at <seq>)"
    case "BAD_REQUEST":
      return " — the provider refused the request; check --model and --base-url (harness config)"
    default:
      return ""
  }
}
