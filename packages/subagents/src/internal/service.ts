/**
 * The children registry, a child's run, the resume report and the stored tree (ADR 0055).
 */
import { LanguageModel } from "@effect/ai"
import { Agent } from "@harness/agent"
import type { Ids, Inbox, Message, SessionEvent, SessionLogError } from "@harness/domain"
import { SessionLog, Sessions, SessionStore } from "@harness/session"
import type { Scope } from "effect"
import { Effect, Option, Ref, Schema } from "effect"
import { SubagentError } from "../SubagentError.js"
import type { Child, Options, Outcome, Service, Spec, Tree } from "../Subagents.js"
import { Outcome as OutcomeSchema } from "./outcome.js"

export const childIdOf = (parent: Ids.SessionId, callSeq: number): Ids.SessionId =>
  `${parent}~${callSeq}` as Ids.SessionId // a SessionId is any non-empty string

export const parentOf = (id: Ids.SessionId): Ids.SessionId | undefined => {
  const match = /^(.+)~\d+$/.exec(id)
  return match === null ? undefined : match[1] as Ids.SessionId // the prefix of a SessionId is non-empty
}

/**
 * The `seq` of the parent's newest `tool/call` with `callId` before position `before` (a provider may reuse call ids
 * across steps: the newest is the one being answered).
 */
const callSeqOf = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  callId: Ids.ToolCallId,
  before = events.length
): number | undefined => {
  for (let i = before - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === "tool/call" && event.data.callId === callId) return event.seq
  }
  return undefined
}

/** The source of an outcome injected into a parent: it names the child, so a resume knows it was reported. */
const reportSource = (child: Ids.SessionId): Message.UserMessageData["source"] => ({
  kind: "plugin",
  plugin: `subagent:${child}`
})

const isReport = (event: SessionEvent.SessionEvent, child: Ids.SessionId): boolean =>
  event.type === "user/message" && event.data.source.kind === "plugin" &&
  event.data.source.plugin === `subagent:${child}`

/** The text a parent's model reads for a child's outcome (background, or reported on resume). */
const reportText = (outcome: Outcome): string =>
  `[subagent ${outcome.agent} · session ${outcome.session} · ${outcome.status}${
    outcome.reason === undefined ? "" : ` (${outcome.reason})`
  }]\n${outcome.answer === "" ? "(no answer)" : outcome.answer}`

const lastAnswer = (events: ReadonlyArray<SessionEvent.SessionEvent>): string => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type !== "assistant/message") continue
    const text = event.data.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("")
    if (text !== "") return text
  }
  return ""
}

type Ending = { readonly status: Outcome["status"]; readonly reason?: string }

/** How the child's last turn ended, in the outcome's words. */
const endingOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): Ending => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type !== "turn/end") continue
    const reason = event.data.reason
    switch (reason.kind) {
      case "completed":
      case "max-tokens":
        return { status: "completed" }
      case "aborted":
      case "disposed":
        return { status: "cancelled", reason: `its turn was ${reason.kind}` }
      case "interrupted":
        return { status: "interrupted", reason: "a crash cut its turn" }
      case "request-error":
        return { status: "failed", reason: reason.failure.message }
      case "error":
        return { status: "failed", reason: reason.message }
    }
  }
  return { status: "cancelled", reason: "no turn ran" }
}

const endingFromReceipt = (receipt: Inbox.Receipt): Ending | undefined => {
  switch (receipt._tag) {
    case "discarded":
      return { status: "cancelled", reason: `its task was discarded by a cancel (${receipt.cause ?? "user"})` }
    case "rejected":
      return { status: "cancelled", reason: `its task was rejected (${receipt.reason})` }
    case "withdrawn":
      return { status: "cancelled", reason: "its task was withdrawn" }
    default:
      return undefined
  }
}

const outcomeOf = (id: Ids.SessionId, agent: string, ending: Ending, answer: string): Outcome =>
  ending.reason === undefined
    ? { session: id, agent, status: ending.status, answer }
    : { session: id, agent, status: ending.status, answer, reason: ending.reason }

interface Entry {
  readonly child: Child
  readonly agent: Agent.Service | undefined
}

export const make = (options?: Options) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const scope = yield* Effect.scope
    const entries = yield* Ref.make<ReadonlyArray<Entry>>([])
    const approval = options?.approval

    const update = (id: Ids.SessionId, f: (entry: Entry) => Entry) =>
      Ref.update(entries, (all) => all.map((entry) => entry.child.id === id ? f(entry) : entry))

    /** Runs one child to its end, in the caller's scope; answers its outcome. */
    const run = (
      spec: Spec,
      task: string,
      link: { readonly parent: Agent.Service; readonly callId: Ids.ToolCallId },
      id: Ids.SessionId,
      background: boolean
    ): Effect.Effect<Outcome, never, Scope.Scope | LanguageModel.LanguageModel> =>
      Effect.gen(function*() {
        const model = spec.languageModel ?? (yield* LanguageModel.LanguageModel)
        const started = yield* Effect.gen(function*() {
          const log = yield* Effect.acquireRelease(
            SessionLog.make({ id, title: `${spec.name}: ${task.slice(0, 60)}` }),
            (log) => Effect.ignore(log.close)
          )
          const agent = yield* Agent.make({
            session: log,
            system: spec.system,
            model: spec.model,
            provider: spec.provider,
            tools: spec.tools,
            maxParallelToolCalls: spec.maxParallelToolCalls,
            hooks: approval === undefined ? undefined : { toolApproval: (input, next) => approval(input, next) }
          }).pipe(Effect.provideService(LanguageModel.LanguageModel, model))
          return agent
        }).pipe(
          Effect.provideService(SessionStore.SessionStore, store),
          Effect.either
        )
        if (started._tag === "Left") {
          return outcomeOf(id, spec.name, { status: "failed", reason: started.left.message }, "")
        }
        const agent = started.right
        const child: Child = {
          id,
          parent: link.parent.id,
          callId: link.callId,
          agent: spec.name,
          background,
          state: "running"
        }
        yield* Ref.update(entries, (all) => [...all, { child, agent }])
        const finish = (outcome: Outcome) =>
          update(id, (entry) => ({ child: { ...entry.child, state: outcome.status }, agent: undefined }))
        const prompt = yield* agent.followup({
          content: [{ type: "text", text: task }],
          source: { kind: "subagent", parent: link.parent.id, callId: link.callId, agent: spec.name }
        }).pipe(Effect.either)
        if (prompt._tag === "Left") {
          const outcome = outcomeOf(id, spec.name, { status: "failed", reason: prompt.left.message }, "")
          yield* finish(outcome)
          return outcome
        }
        yield* agent.whenIdle.pipe(
          Effect.onInterrupt(() =>
            agent.cancel("parent").pipe(
              Effect.ignore,
              Effect.zipRight(agent.whenIdle),
              Effect.zipRight(
                finish(outcomeOf(id, spec.name, { status: "cancelled", reason: "its parent cancelled" }, ""))
              )
            )
          )
        )
        const receipt = yield* agent.receipt(prompt.right).pipe(Effect.orElseSucceed(() => undefined))
        const events = yield* agent.log
        const ending = (receipt === undefined ? undefined : endingFromReceipt(receipt)) ?? endingOf(events)
        const outcome = outcomeOf(id, spec.name, ending, lastAnswer(events))
        yield* finish(outcome)
        return outcome
      })

    const spawn: Service["spawn"] = (spec, task, link) =>
      Effect.gen(function*() {
        // The call was logged (and flushed) before its handler started.
        const seq = callSeqOf(yield* link.parent.log, link.callId)
        if (seq === undefined) {
          return yield* Effect.dieMessage(
            `Subagents.spawn: the parent's log has no tool/call ${JSON.stringify(link.callId)}: spawn is what a ` +
              `subagent tool's handler calls, with its own call id`
          )
        }
        const id = childIdOf(link.parent.id, seq)
        if (spec.background !== true) return yield* Effect.scoped(run(spec, task, link, id, false))
        const model = spec.languageModel ?? (yield* LanguageModel.LanguageModel)
        yield* Effect.scoped(
          run(spec, task, link, id, true).pipe(
            Effect.flatMap((outcome) =>
              link.parent.inject({ content: [{ type: "text", text: reportText(outcome) }], source: reportSource(id) })
            ),
            Effect.ignore
          )
        ).pipe(
          Effect.provideService(LanguageModel.LanguageModel, model),
          Effect.forkIn(scope)
        )
        return { session: id, agent: spec.name, status: "started", answer: "" } satisfies Outcome
      })

    const list = Effect.map(Ref.get(entries), (all) => all.map((entry) => entry.child))

    const get = (id: Ids.SessionId) =>
      Effect.flatMap(Ref.get(entries), (all) => {
        const entry = all.find((entry) => entry.child.id === id)
        return entry === undefined
          ? Effect.fail(new SubagentError({ reason: "unknown", id }))
          : entry.agent === undefined
          ? Effect.fail(new SubagentError({ reason: "finished", id }))
          : Effect.succeed(entry.agent)
      })

    const resume = (parent: Agent.Service): Effect.Effect<ReadonlyArray<Outcome>, SessionLogError.SessionLogError> =>
      Effect.gen(function*() {
        const events = yield* parent.log
        const stored = new Set((yield* Sessions.list).map((info) => info.id))
        const owed = unanswered(parent.id, events).filter((id) => stored.has(id))
        const reported: Array<Outcome> = []
        for (const id of owed) {
          const log = yield* SessionLog.open(id)
          const childEvents = yield* log.events.pipe(Effect.ensuring(Effect.ignore(log.close)))
          const link = linkOf(childEvents)
          if (link === undefined || link.parent !== parent.id) continue
          const outcome = outcomeOf(id, link.agent, endingOf(childEvents), lastAnswer(childEvents))
          yield* parent.inject({ content: [{ type: "text", text: reportText(outcome) }], source: reportSource(id) })
            .pipe(Effect.orDie) // the text and source are built here and valid; only a disposed parent refuses
          reported.push(outcome)
        }
        return reported
      }).pipe(Effect.provideService(SessionStore.SessionStore, store))

    return { spawn, list, get, resume } satisfies Service
  })

const decodeOutcome = Schema.decodeUnknownOption(Schema.parseJson(OutcomeSchema))

/**
 * The children a parent's log owes an answer: a spawn call cut by a crash (answered `TOOL_OUTCOME_UNKNOWN`) or a
 * background child started and never reported.
 */
const unanswered = (parent: Ids.SessionId, events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const owed: Array<Ids.SessionId> = []
  for (const [i, event] of events.entries()) {
    if (event.type !== "tool/result") continue
    const seq = callSeqOf(events, event.data.callId, i)
    if (seq === undefined) continue
    const id = childIdOf(parent, seq)
    const cut = event.data.error?.code === "TOOL_OUTCOME_UNKNOWN"
    const started = !event.data.isError && Option.exists(
      decodeOutcome(event.data.content.map((block) => block.text).join("")),
      (outcome) => outcome.status === "started" && outcome.session === id
    )
    if ((cut || started) && !events.some((later) => isReport(later, id))) owed.push(id)
  }
  return owed
}

/** The `subagent` source of a child's first prompt: its durable link to its parent. */
const linkOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  for (const event of events) {
    if (event.type === "user/message" && event.data.source.kind === "subagent") return event.data.source
  }
  return undefined
}

const lastOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): Tree["last"] => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === "turn/end") return event.data.reason.kind
    if (event.type === "turn/start") return "open"
  }
  return "none"
}

export const tree = (
  id: Ids.SessionId
): Effect.Effect<Tree, SessionLogError.SessionLogError, SessionStore.SessionStore> =>
  Effect.gen(function*() {
    const stored = new Set((yield* Sessions.list).map((info) => info.id))
    const visit = (
      id: Ids.SessionId
    ): Effect.Effect<Tree, SessionLogError.SessionLogError, SessionStore.SessionStore> =>
      Effect.gen(function*() {
        const log = yield* SessionLog.open(id, { readOnly: true })
        const events = yield* log.events
        const link = linkOf(events)
        const children: Array<Tree> = []
        for (const event of events) {
          if (event.type !== "tool/call") continue
          const child = childIdOf(id, event.seq)
          if (stored.has(child)) children.push(yield* visit(child))
        }
        return {
          id,
          agent: link?.agent,
          spawnedBy: link === undefined ? undefined : { parent: link.parent, callId: link.callId },
          last: lastOf(events),
          children
        }
      })
    return yield* visit(id)
  })
