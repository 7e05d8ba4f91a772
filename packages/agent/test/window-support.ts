/**
 * Helpers shared by the acceptance-window, admission, steering and hooks tests: compact views of the durable log
 * and of the model's requests, the R103 reconstruction check, a session whose store records `acceptsNextStep` at
 * the instant each row is written, and small tools that hold a turn at a chosen point.
 */
import { Tool } from "@effect/ai"
import type { Prompt } from "@effect/ai"
import { assert } from "@effect/vitest"
import type { Agent } from "@harness/agent"
import { AgentTool } from "@harness/agent"
import type { AgentEvent, Content, SessionEvent } from "@harness/domain"
import { History, LogCheck, SessionLog, SessionStore } from "@harness/session"
import type { ScriptedModel } from "@harness/testkit"
import { EventRecorder } from "@harness/testkit"
import { Deferred, Effect, Ref, Schema, TestClock } from "effect"

/** The text of a list of content blocks (text blocks only). */
export const textOf = (content: ReadonlyArray<Content.ContentBlock | Content.AssistantBlock>): string =>
  content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("")

/**
 * A compact name for a durable event: `user:<text>`, `steering:<text>`, `turn/start:1`, `turn/end:1:completed`,
 * `step/start:1.2`, `step/end:1.2`, `assistant:<text>`, `tool/call:<name>`, `tool/result:<name>[:<code>]`,
 * `request/header:<reason>`.
 */
export const describeEvent = (event: SessionEvent.SessionEvent): string => {
  switch (event.type) {
    case "user/message":
      return `user:${textOf(event.data.content)}`
    case "steering/message":
      return `steering:${textOf(event.data.content)}`
    case "turn/start":
      return `turn/start:${event.data.turn}`
    case "turn/end":
      return `turn/end:${event.data.turn}:${event.data.reason.kind}`
    case "step/start":
      return `step/start:${event.data.turn}.${event.data.step}`
    case "step/end":
      return `step/end:${event.data.turn}.${event.data.step}`
    case "assistant/message":
      return `assistant:${textOf(event.data.content)}`
    case "tool/call":
      return `tool/call:${event.data.name}`
    case "tool/result":
      return event.data.error === undefined
        ? `tool/result:${event.data.name}`
        : `tool/result:${event.data.name}:${event.data.error.code}`
    case "request/header":
      return `request/header:${event.data.reason}`
    default:
      return event.type
  }
}

/** The compact shape of a log, streamed chunks left out. */
export const shape = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  log.filter((event) => event.type !== "assistant/chunk").map(describeEvent)

/**
 * The live trace without `session/event`s for streamed chunks (they are many and say nothing here): the names of
 * `EventRecorder.describe`, with message texts on inbox events and `describeEvent` for durable ones.
 */
export const traceOf = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  events
    .filter((event) => !(event.type === "session/event" && event.event.type === "assistant/chunk"))
    .map((event) => {
      switch (event.type) {
        case "agent/inbox/enqueue":
          return `enqueue:${event.placement}:${textOf(event.message.content)}`
        case "agent/inbox/dequeue":
          return `dequeue:${textOf(event.message.content)}`
        case "session/event":
          return describeEvent(event.event)
        default:
          return EventRecorder.describe(event)
      }
    })

/** The events of one durable type. */
export const ofType = <T extends SessionEvent.SessionEventType>(
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  type: T
): ReadonlyArray<SessionEvent.SessionEventOf<T>> =>
  log.filter((event): event is SessionEvent.SessionEventOf<T> => event.type === type)

/** A `waitFor` predicate: the live republication of a durable event of `type` (and matching `where`). */
export const durable = <T extends SessionEvent.SessionEventType>(
  type: T,
  where: (event: SessionEvent.SessionEventOf<T>) => boolean = () => true
) =>
(event: AgentEvent.AgentEvent): boolean =>
  event.type === "session/event" && event.event.type === type && where(event.event as SessionEvent.SessionEventOf<T>)

/** A compact view of one prompt message: `system:<text>`, `user:<text>`, `assistant:<text>[+call:<name>]`, `tool:<name>`. */
export const describeMessage = (message: Prompt.Message): string => {
  switch (message.role) {
    case "system":
      return `system:${message.content}`
    case "user":
      return `user:${message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")}`
    case "assistant":
      return `assistant:${
        message.content.flatMap((part) =>
          part.type === "text" ? [part.text] : part.type === "tool-call" ? [`+call:${part.name}`] : []
        ).join("")
      }`
    case "tool":
      return `tool:${message.content.map((part) => part.name).join(",")}`
  }
}

/** What each request the model received looked like, compactly. */
export const requestViews = (
  requests: ReadonlyArray<ScriptedModel.Request>
): ReadonlyArray<ReadonlyArray<string>> => requests.map((request) => request.prompt.content.map(describeMessage))

/**
 * R103: the messages of the request of step n equal the derivation of the log strictly before that step's
 * `step/start` (and there is exactly one request per step). `from` skips a seeded prefix (its steps made no
 * request of this model).
 */
export const assertReconstructable = (
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  requests: ReadonlyArray<ScriptedModel.Request>,
  options: { readonly from?: number } = {}
): void => {
  const from = options.from ?? 0
  const starts = log.flatMap((event, index) => (event.type === "step/start" && index >= from ? [index] : []))
  assert.strictEqual(requests.length, starts.length, "one model request per step")
  starts.forEach((index, n) => {
    const expected = History.deriveMessages(log.slice(0, index))
    const actual = requests[n]!.prompt.content.filter((message) => message.role !== "system")
    assert.deepStrictEqual(actual, expected, `request ${n + 1} ≠ derivation of the log before its step/start`)
  })
}

/** Every scenario ends with a well-formed log. */
export const assertCleanLog = (agent: Agent.Service): Effect.Effect<void> =>
  Effect.map(agent.log, (log) => assert.deepStrictEqual(LogCheck.checkLog(log), []))

/** The status transitions of a recorded run. */
export const statuses = (recorder: EventRecorder.Recorder): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(recorder.events, (events) => events.flatMap((e) => (e.type === "agent/status" ? [e.status] : [])))

/**
 * A fresh memory session whose store records, at the instant each row is written (inside the agent's critical
 * section that appends it), what `acceptsNextStep` says. `attach` names the agent to observe.
 */
export const probedSession = Effect.gen(function*() {
  const probe = yield* Ref.make<Effect.Effect<boolean> | undefined>(undefined)
  const seen = yield* Ref.make<ReadonlyArray<string>>([])
  const memory = yield* SessionStore.makeMemory
  const store: SessionStore.Service = {
    ...memory,
    append: (id, commit, options) =>
      Effect.gen(function*() {
        const read = yield* Ref.get(probe)
        if (read !== undefined) {
          for (const event of commit.events) {
            const open = yield* read
            yield* Ref.update(seen, (all) => [...all, `${event.type}:${open ? "open" : "closed"}`])
          }
        }
        return yield* memory.append(id, commit, options)
      })
  }
  const session = yield* SessionLog.make().pipe(Effect.provideService(SessionStore.SessionStore, store))
  return {
    session,
    attach: (agent: Agent.Service) => Ref.set(probe, agent.acceptsNextStep),
    /** `"<row type>:open|closed"` per written row, streamed chunks left out. */
    seen: Effect.map(Ref.get(seen), (all) => all.filter((s) => !s.startsWith("assistant/chunk:")))
  }
})

/** Waits until something sleeps on the `TestClock` (e.g. a delayed scripted reply has started its delay). */
export const awaitSleeper: Effect.Effect<void> = Effect.gen(function*() {
  while ((yield* TestClock.sleeps()).length === 0) yield* Effect.yieldNow()
})

/** A tool that does nothing (to make a step with a tool call). */
export const noop = AgentTool.make(
  Tool.make("noop", { description: "does nothing", success: Schema.String }),
  { handler: () => Effect.succeed("ok"), parallel: true }
)

/**
 * A tool that reports it started, then waits for `release` before answering `"released"`; `during` runs inside the
 * handler right after it started (e.g. to steer from inside the tool).
 */
export const gatedTool = (
  name: string,
  options: {
    readonly started: Deferred.Deferred<void>
    readonly release: Deferred.Deferred<void>
    readonly during?: (agent: Agent.Service) => Effect.Effect<void, unknown>
  }
) =>
  AgentTool.make(
    Tool.make(name, { success: Schema.String }),
    {
      parallel: true,
      handler: (_, context) =>
        Effect.gen(function*() {
          if (options.during !== undefined) yield* Effect.orDie(options.during(context.agent))
          yield* Deferred.succeed(options.started, undefined)
          yield* Deferred.await(options.release)
          return "released"
        })
    }
  )
