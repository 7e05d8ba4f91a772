/**
 * The agent tests' one fixtures module: `setup()` (the prelude every test repeats: an agent on the scripted model
 * with a recorder of its live events), the messages and routing options tests send, holds that keep the agent at an
 * exact point, compact views of the log, the live events and the model's requests for exact assertions, and
 * sessions whose store can be made to fail or observed as it is written.
 */
import { LanguageModel, Tool } from "@effect/ai"
import type { Prompt } from "@effect/ai"
import { assert } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import type { AgentEvent, Content, Message as MessageT, SessionEvent } from "@harness/domain"
import { Ids, Message, MessageSource, Store } from "@harness/domain"
import { History, LogCheck, SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Deferred, Effect, Layer, Ref, Schema, Stream, TestClock } from "effect"

// ---------------------------------------------------------------------------------------------------------------
// The prelude
// ---------------------------------------------------------------------------------------------------------------

/**
 * The prelude of an agent test: an agent (route label `"m"` unless `options` say otherwise) on the scripted model in
 * context, a recorder of its live events, and the scripted model's controls. Call inside the test's scope.
 */
export const setup = <R = never>(options: Agent.Options<R> = {}) =>
  Effect.gen(function*() {
    const agent = yield* Agent.make<R>({ model: "m", ...options })
    const rec = yield* EventRecorder.make(agent)
    const model = yield* S.ScriptedModel
    return { agent, rec, model }
  })

/**
 * `setup()`, then a follow-up `text` whose reply hangs after one streamed chunk: returns once that chunk is logged,
 * with the turn mid-stream. `later` replies are queued behind the hanging one.
 */
export const midStream = (text: string, ...later: ReadonlyArray<S.Reply>) =>
  Effect.gen(function*() {
    const fixture = yield* setup()
    yield* fixture.model.push(S.hanging(S.text("partial")), ...later)
    yield* fixture.agent.followup(prompt(text))
    yield* fixture.rec.waitFor(isDurable("assistant/chunk"))
    return fixture
  })

/**
 * `setup()` with a `promptSubmit` hook that holds the first admission at `hold` until the test releases it (later
 * admissions pass at once): `yield* hold.reached` returns once the first prompt is claimed and its admission runs.
 */
export const heldAdmission = Effect.gen(function*() {
  const hold = yield* makeHold
  const calls = yield* Ref.make(0)
  const fixture = yield* setup({
    hooks: {
      promptSubmit: (_, next) =>
        Effect.flatMap(Ref.getAndUpdate(calls, (n) => n + 1), (n) => n > 0 ? next : Effect.zipRight(hold.wait, next))
    }
  })
  return { ...fixture, hold }
})

/**
 * A cancel (`user`) made from inside the turn (a hook or a tool): `run` cancels, then records that `cancel` returned
 * (`returned`). It runs uninterruptibly, so a cancel that waited for the turn to unwind would deadlock there (R82).
 */
export const insideCancel = Effect.gen(function*() {
  const returned = yield* Ref.make(false)
  return {
    run: (agent: Agent.Service) =>
      Effect.uninterruptible(Effect.zipRight(Effect.orDie(agent.cancel("user")), Ref.set(returned, true))),
    returned: Ref.get(returned)
  }
})

/** A `promptSubmit` hook that waits at `hold`, then refuses the prompt (`block`). */
export const refusingAt = (hold: Hold) => () => Effect.as(hold.wait, { kind: "block", reason: "no" } as const)

/**
 * With `refusingAt(hold)` installed: sends `p1`, and while its admission waits steers `steer` and injects `ctx`, then
 * lets the admission refuse. The steering and its context stay staged (R43); returns the steering id once idle.
 */
export const stageBehindRefusal = (agent: Agent.Service, hold: Hold) =>
  Effect.gen(function*() {
    yield* agent.followup(prompt("p1"))
    yield* hold.reached
    const steering = yield* agent.steer(prompt("steer"))
    yield* agent.inject(context("ctx"))
    yield* hold.release
    yield* agent.whenIdle
    return steering
  })

/** Clears the recorder, cancels (`user`), waits until idle: returns what the cancel published. */
export const cancelAndSettle = (
  agent: Agent.Service,
  rec: EventRecorder.Recorder,
  options?: { readonly keepInbox?: boolean }
) =>
  Effect.gen(function*() {
    yield* rec.clear
    yield* agent.cancel("user", options)
    yield* agent.whenIdle
    return yield* rec.events
  })

/**
 * While a turn or its admission runs: steers `steer`, injects context `ctx` and sends the follow-up `p2`, in that
 * order; returns the steering's and the follow-up's ids.
 */
export const stageSteerContextFollowup = (agent: Agent.Service) =>
  Effect.gen(function*() {
    const steering = yield* agent.steer(prompt("steer"))
    yield* agent.inject(context("ctx"))
    const followup = yield* agent.followup(prompt("p2"))
    return { steering, followup }
  })

/** Waits until the agent is idle, then reads its log. */
export const idleLog = (agent: Agent.Service) => Effect.zipRight(agent.whenIdle, agent.log)

// ---------------------------------------------------------------------------------------------------------------
// Messages and routing options
// ---------------------------------------------------------------------------------------------------------------

/** A user message with one text block. */
export const prompt = (text: string): MessageT.UserMessageData => Message.make(text)

/** The same, under the name the routing tests read better with. */
export const user = prompt

/** A plugin-sourced message (injected context usually has a non-user source). */
export const context = (text: string, plugin = "test"): MessageT.UserMessageData =>
  Message.make(text, MessageSource.plugin(plugin))

/** The same, under the routing tests' short name. */
export const ctx = context

/** A caller-supplied message id. */
export const mid = (id: string): Ids.AgentMessageId => Ids.AgentMessageId.make(id)

/** The four cells of the routing table (R28), each under the name of the call that sends with it (`park`: parked). */
export const routes: Record<"followup" | "steer" | "inject" | "park", MessageT.SendOptions> = {
  followup: { target: "next-turn", wakeup: true },
  steer: { target: "next-step", wakeup: true },
  inject: { target: "next-step", wakeup: false },
  park: { target: "next-turn", wakeup: false }
}

/**
 * Sends the user messages `texts` in one `batch`, each with its routing cell (`followup`, `steer`, `inject` or
 * `park`); returns the ids in order.
 */
export const sendBatch = (agent: Agent.Service, ...sends: ReadonlyArray<readonly [string, keyof typeof routes]>) =>
  agent.batch(sends.map(([text, route]) => ({ send: [user(text), routes[route]] as const })))

/**
 * Passes a value through the type system unchecked: the tests use it to hand `send` what a lying caller would
 * (the API is typed, but the agent must decode its input anyway).
 */
export const lie = <A>(value: unknown): A => value as A

// ---------------------------------------------------------------------------------------------------------------
// Holds, sleepers and tools that stop a turn at a chosen point
// ---------------------------------------------------------------------------------------------------------------

/**
 * A point the agent stops at until the test releases it: `wait` (used inside a hook) signals `reached` and then
 * blocks until `release`.
 */
export interface Hold {
  readonly wait: Effect.Effect<void>
  readonly reached: Effect.Effect<void>
  readonly release: Effect.Effect<void>
  readonly isReached: Effect.Effect<boolean>
}

export const makeHold: Effect.Effect<Hold> = Effect.gen(function*() {
  const reached = yield* Deferred.make<void>()
  const gate = yield* Deferred.make<void>()
  return {
    wait: Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(gate)),
    reached: Deferred.await(reached),
    release: Effect.asVoid(Deferred.succeed(gate, undefined)),
    isReached: Deferred.isDone(reached)
  }
})

/** `setup()` whose agent holds in turn 1's first step hook until `hold.release`; the setup and the hold. */
export const heldFirstStep = Effect.gen(function*() {
  const hold = yield* makeHold
  const made = yield* setup({
    hooks: { step: ({ step, turn }) => (turn === 1 && step === 1 ? hold.wait : Effect.void) }
  })
  return { ...made, hold }
})

/**
 * Waits until some fiber sleeps on the `TestClock` (e.g. a `ScriptedModel.delayed` reply started its request), so
 * that a following `TestClock.adjust` wakes it. Yields between checks; never sleeps for real.
 */
export const awaitSleeper: Effect.Effect<void> = Effect.gen(function*() {
  for (let i = 0; i < 10_000; i++) {
    if (Chunk.size(yield* TestClock.sleeps()) > 0) return
    yield* Effect.yieldNow()
  }
  return yield* Effect.dieMessage("no fiber went to sleep on the TestClock")
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

// ---------------------------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------------------------

/** The scripted model plus a memory store whose appends can be made to fail (provide around the whole test). */
export const layerWithFaults = (replies: ReadonlyArray<S.Reply> = []) =>
  Layer.merge(S.layer(replies), SessionStore.layerMemoryWithFaults)

/** A fresh session in the fault-injecting store, and the fault controls. */
export const faultySession = Effect.all({ session: SessionLog.make(), faults: SessionStore.StoreFaults })

/** `setup()` over a fresh session in the fault-injecting store (`layerWithFaults`), with the fault controls. */
export const setupWithFaults = Effect.gen(function*() {
  const { faults, session } = yield* faultySession
  return { ...(yield* setup({ session })), faults }
})

/**
 * R57's setting: one turn answered "hi" whose `turn/end` the store refuses, awaited to idle. Returns the agent, the
 * faults (still failing `turn/end`), the model and the agent's live events so far.
 */
export const refusedTurnEnd = Effect.gen(function*() {
  const { agent, faults, model, rec } = yield* setupWithFaults
  yield* model.push(S.textResponse("hi"))
  yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "turn/end"))
  yield* agent.followup(prompt("go"))
  yield* agent.whenIdle
  return { agent, faults, model, events: yield* rec.events }
})

/**
 * A memory store that behaves as a durable one: write-behind, not volatile (so the session log runs a writer fiber
 * and the agent places its durability barriers).
 */
export const durableStore: Effect.Effect<SessionStore.Service> = Effect.map(
  SessionStore.makeMemory,
  (memory): SessionStore.Service => ({ ...memory, commitMode: "write-behind", volatile: false })
)

/** An agent over `log` (options `options`) with a scripted model answering `replies`; the agent and the model. */
export const agentOn = (
  log: SessionLog.Service,
  replies: ReadonlyArray<S.Reply>,
  options?: Partial<Agent.Options>
) =>
  Effect.gen(function*() {
    const [model, controls] = yield* S.make(replies)
    const agent = yield* Agent.make({ model: "m", session: log, ...options }).pipe(
      Effect.provideService(LanguageModel.LanguageModel, model)
    )
    return { agent, model: controls }
  })

/** Runs `f` with one durable store as the current `SessionStore`: every process it starts shares it. */
export const withDurableStore = <A, E>(
  f: (store: SessionStore.Service) => Effect.Effect<A, E, SessionStore.SessionStore>
) => Effect.flatMap(durableStore, (store) => Effect.provideService(f(store), SessionStore.SessionStore, store))

/**
 * Runs `during` on an agent over a durable store whose first turn (prompt `p`) never ends, ends that process, and runs
 * `after` on an agent reopened over the same session with its restored inbox parked: what each answered.
 */
export const acrossRestart = <A, B>(
  session: Ids.SessionId,
  during: (agent: Agent.Service) => Effect.Effect<A, unknown>,
  after: (agent: Agent.Service, reopened: SessionLog.Service) => Effect.Effect<B, unknown>
): Effect.Effect<{ readonly before: A; readonly after: B }, unknown> =>
  withDurableStore(() =>
    Effect.gen(function*() {
      const before = yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: session })
        const { agent } = yield* agentOn(log, [S.hanging(S.text("…"))])
        const rec = yield* EventRecorder.make(agent)
        yield* agent.followup(prompt("p"), { id: mid("p") })
        yield* rec.waitFor(isDurable("step/start"))
        return yield* during(agent)
      }))
      const reopened = yield* SessionLog.open(session)
      const { agent } = yield* agentOn(reopened, [], { restoredInbox: "park" })
      return { before, after: yield* after(agent, reopened) }
    }).pipe(Effect.scoped)
  )

const decodeStored = Schema.decodeSync(
  Schema.parseJson(Schema.Union(Store.InboxRecord, Schema.Struct({ type: Schema.String })))
)

/**
 * The inbox records `store` holds for session `id`, in order, as `accepted:<placement>[/parked]:<id>` and
 * `settled:<fate>:<id>`.
 */
export const storedInbox = (store: SessionStore.Service, id: Ids.SessionId) =>
  store.load(id).pipe(
    Stream.map((record) => decodeStored(record.text)),
    Stream.runCollect,
    Effect.map((records) =>
      Chunk.toReadonlyArray(records).flatMap((r) =>
        r.type === "inbox/accepted" && "placement" in r
          ? [`accepted:${r.placement}${r.wakeup || r.placement !== "queued" ? "" : "/parked"}:${r.message.id}`]
          : r.type === "inbox/settled" && "fate" in r
          ? [`settled:${r.fate}:${r.id}`]
          : []
      )
    )
  )

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

// ---------------------------------------------------------------------------------------------------------------
// Selecting events
// ---------------------------------------------------------------------------------------------------------------

/** The events of the log of one type. */
export const ofType = <T extends SessionEvent.SessionEventType>(
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  type: T
): ReadonlyArray<SessionEvent.SessionEventOf<T>> =>
  log.filter((event): event is SessionEvent.SessionEventOf<T> => event.type === type)

/** The reasons of the `agent/settled` events among `events`, in order. */
export const settledReasons = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  live(events, "agent/settled").map((event) => event.reason)

/** The live events of one type. */
export const live = <T extends AgentEvent.AgentEvent["type"]>(
  events: ReadonlyArray<AgentEvent.AgentEvent>,
  type: T
): ReadonlyArray<Extract<AgentEvent.AgentEvent, { readonly type: T }>> =>
  events.filter((event): event is Extract<AgentEvent.AgentEvent, { readonly type: T }> => event.type === type)

/** A `waitFor` predicate: the live republication of a durable event of `type` (and matching `where`). */
export const isDurable = <T extends SessionEvent.SessionEventType>(
  type: T,
  where: (event: SessionEvent.SessionEventOf<T>) => boolean = () => true
) =>
(event: AgentEvent.AgentEvent): boolean =>
  event.type === "session/event" && event.event.type === type && where(event.event as SessionEvent.SessionEventOf<T>)

/** A `waitFor` predicate: a live event of the given type. */
export const isLive = (type: AgentEvent.AgentEvent["type"]) => (event: AgentEvent.AgentEvent): boolean =>
  event.type === type

/** The inbox events (enqueue, dequeue, discard) among `events`. */
export const inboxEvents = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.filter((event) =>
    event.type === "agent/inbox/enqueue" || event.type === "agent/inbox/dequeue" || event.type === "agent/inbox/discard"
  )

// ---------------------------------------------------------------------------------------------------------------
// Compact views
// ---------------------------------------------------------------------------------------------------------------

/** The text of a message's content (a non-text block shows as `<type>`). */
export const textOf = (content: ReadonlyArray<{ readonly type: string }>): string =>
  content.map((block) => ("text" in block && typeof block.text === "string" ? block.text : `<${block.type}>`)).join("")

/** The text blocks of a list of content blocks, joined (other blocks left out). */
export const textBlocksOf = (content: ReadonlyArray<Content.ContentBlock | Content.AssistantBlock>): string =>
  content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("")

/** Collapses each run of consecutive `assistant/chunk` names into one `assistant/chunk*`. */
const squash = (trace: ReadonlyArray<string>): ReadonlyArray<string> =>
  trace.flatMap((name, i) =>
    name === "assistant/chunk"
      ? trace[i - 1] === "assistant/chunk" ? [] : ["assistant/chunk*"]
      : [name]
  )

/** The squashed compact trace of events. */
export const compact = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  squash(EventRecorder.trace(events))

/** The text of a `user/message` or `steering/message`, or `undefined`. */
const messageTextOf = (event: SessionEvent.SessionEvent): string | undefined =>
  event.type === "user/message" || event.type === "steering/message"
    ? event.data.content.map((block) => block.type === "text" ? block.text : "").join("")
    : undefined

/**
 * The log as compact names where user and steering messages show their text: `user/message:go`,
 * `steering/message:s`; chunk runs are squashed.
 */
export const logTrace = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  squash(log.map((event) => {
    const text = messageTextOf(event)
    return text === undefined ? EventRecorder.describeDurable(event) : `${event.type}:${text}`
  }))

/**
 * The shape of a log, without chunks and request headers: `user:<text>` (with `@<id>` when `ids` is set),
 * `steer:<text>`, `assistant:<text>`, `turn/start:<n>`, `turn/end:<n>:<reason>`, `step/start:<n>`, `step/end:<n>`.
 */
export const shape = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  options: { readonly ids?: boolean } = {}
): ReadonlyArray<string> =>
  events.flatMap((event): ReadonlyArray<string> => {
    switch (event.type) {
      case "user/message":
        return [
          `user:${textOf(event.data.content)}${
            options.ids === true && event.data.messageId !== undefined ? `@${event.data.messageId}` : ""
          }`
        ]
      case "steering/message":
        return [`steer:${textOf(event.data.content)}${options.ids === true ? `@${event.data.messageId}` : ""}`]
      case "assistant/message":
        return [`assistant:${textOf(event.data.content)}`]
      case "turn/start":
        return [`turn/start:${event.data.turn}`]
      case "turn/end":
        return [`turn/end:${event.data.turn}:${event.data.reason.kind}`]
      case "step/start":
        return [`step/start:${event.data.step}`]
      case "step/end":
        return [`step/end:${event.data.step}`]
      case "assistant/chunk":
      case "request/header":
        return []
      default:
        return [event.type]
    }
  })

/**
 * A compact name for a durable event: `user:<text>`, `steering:<text>`, `turn/start:1`, `turn/end:1:completed`,
 * `step/start:1.2`, `step/end:1.2`, `assistant:<text>`, `tool/call:<name>`, `tool/result:<name>[:<code>]`,
 * `request/header:<reason>`.
 */
const describeEvent = (event: SessionEvent.SessionEvent): string => {
  switch (event.type) {
    case "user/message":
      return `user:${textBlocksOf(event.data.content)}`
    case "steering/message":
      return `steering:${textBlocksOf(event.data.content)}`
    case "turn/start":
      return `turn/start:${event.data.turn}`
    case "turn/end":
      return `turn/end:${event.data.turn}:${event.data.reason.kind}`
    case "step/start":
      return `step/start:${event.data.turn}.${event.data.step}`
    case "step/end":
      return `step/end:${event.data.turn}.${event.data.step}`
    case "assistant/message":
      return `assistant:${textBlocksOf(event.data.content)}`
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

/** The log as `describeEvent` names, streamed chunks left out (turn and step numbers qualified: `step/start:1.2`). */
export const logShape = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
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
          return `enqueue:${event.placement}:${textBlocksOf(event.message.content)}`
        case "agent/inbox/dequeue":
          return `dequeue:${textBlocksOf(event.message.content)}`
        case "session/event":
          return describeEvent(event.event)
        default:
          return EventRecorder.describe(event)
      }
    })

/** The trace without `assistant/chunk` and `request/header` (their number depends on the script, not the rule). */
export const coarseTrace = (recorder: EventRecorder.Recorder): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(recorder.trace, (trace) => trace.filter((name) => name !== "assistant/chunk" && name !== "request/header"))

/** The prompts of each turn in the log: turn number → the texts of its `user/message`s. */
export const promptsByTurn = (
  events: ReadonlyArray<SessionEvent.SessionEvent>
): ReadonlyArray<readonly [number, ReadonlyArray<string>]> => {
  const out: Array<[number, Array<string>]> = []
  let open: [number, Array<string>] | undefined
  for (const event of events) {
    if (event.type === "turn/start") {
      open = [event.data.turn, []]
      out.push(open)
    } else if (event.type === "turn/end") {
      open = undefined
    } else if (event.type === "user/message" && open !== undefined) {
      open[1].push(textOf(event.data.content))
    }
  }
  return out
}

/** The live `agent/status` values among `events`. */
export const statuses = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  events.flatMap((event) => (event.type === "agent/status" ? [event.status] : []))

/** The status transitions a recorder has seen so far. */
export const statusTrace = (recorder: EventRecorder.Recorder): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(recorder.events, statuses)

// ---------------------------------------------------------------------------------------------------------------
// The model's requests
// ---------------------------------------------------------------------------------------------------------------

/** The texts of the user messages of one request the scripted model received. */
export const userTexts = (request: S.Request): ReadonlyArray<string> =>
  request.prompt.content.flatMap((message: Prompt.Message) =>
    message.role === "user"
      ? [message.content.map((part) => part.type === "text" ? part.text : "").join("")]
      : []
  )

/** The conversation a model request carried, compactly: `role:text` per message. */
export const conversation = (request: S.Request): ReadonlyArray<string> =>
  request.prompt.content.map((message) =>
    `${message.role}:${
      typeof message.content === "string"
        ? message.content
        : message.content.map((
          part
        ) => ("text" in part && typeof part.text === "string" ? part.text : `<${part.type}>`)).join("")
    }`
  )

/** A compact view of one prompt message: `system:<text>`, `user:<text>`, `assistant:<text>[+call:<name>]`, `tool:<name>`. */
const describeMessage = (message: Prompt.Message): string => {
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
  requests: ReadonlyArray<S.Request>
): ReadonlyArray<ReadonlyArray<string>> => requests.map((request) => request.prompt.content.map(describeMessage))

// ---------------------------------------------------------------------------------------------------------------
// Whole-log checks
// ---------------------------------------------------------------------------------------------------------------

/** Asserts the log keeps every enclosure rule. */
export const assertWellFormed = (log: ReadonlyArray<SessionEvent.SessionEvent>): void =>
  assert.deepStrictEqual(LogCheck.checkLog(log), [])

/** Every scenario ends with a well-formed log. */
export const assertCleanLog = (agent: Agent.Service): Effect.Effect<void> => Effect.map(agent.log, assertWellFormed)

/**
 * R103: the messages of the request of step n equal the derivation of the log strictly before that step's
 * `step/start` (and there is exactly one request per step). `from` skips a seeded prefix (its steps made no
 * request of this model).
 */
export const assertReconstructable = (
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  requests: ReadonlyArray<S.Request>,
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

// ---------------------------------------------------------------------------------------------------------------
// Recurring stretches of traces (spread them into an expected trace)
// ---------------------------------------------------------------------------------------------------------------

/** `compact`: a follow-up accepted and claimed by an idle agent. */
export const claimed = ["enqueue:queued", "status:running", "dequeue"] as const

/** `compact` / `durableTrace`: a turn opened on its prompt and its first request sent. */
export const opened = ["turn/start", "user/message", "step/start", "request/header"] as const

/** `logTrace`: a turn opened on the prompt `text` and its first request sent. */
export const openedWith = (text: string) => ["turn/start", `user/message:${text}`, "step/start", "request/header"]

/** `compact` / `logTrace`: a step whose streamed answer was committed, then closed. */
export const streamedStep = ["assistant/chunk*", "assistant/message", "step/end"] as const

/**
 * `compact`: what `stageSteerContextFollowup` staged opens the next turn: the steering is dequeued and logged first,
 * then the follow-up is dequeued and logged after the context, and the step starts.
 */
export const stagedTurnOpens = [
  "dequeue",
  "turn/start",
  "steering/message",
  "dequeue",
  "user/message",
  "user/message",
  "step/start"
] as const

/** `compact` / `logTrace`: a step cut mid-stream by a cancel: chunks stay, the step and the turn close aborted. */
export const abortedMidStream = ["assistant/chunk*", "step/end", "turn/end:aborted"] as const

/** `compact`: the turn completed and the agent settled back to idle. */
export const completedIdle = ["turn/end:completed", "settled:completed", "status:idle"] as const

/**
 * `coarseTrace`: a whole turn on one prompt that completed in one step, up to its `settled` (the status events
 * around it depend on what else is queued).
 */
export const coarseTurn = [
  "turn/start",
  "user/message",
  "step/start",
  "assistant/message",
  "step/end",
  "turn/end:completed",
  "settled:completed"
] as const

/** `n` text replies answering `a1`, `a2`, … in order. */
export const replies = (n: number) => Array.from({ length: n }, (_, i) => S.textResponse(`a${i + 1}`))

/** `logShape` / `traceOf`: turn 1 opened on the prompt `text` and its first step's initial request sent. */
export const firstRequest = (text: string) =>
  ["turn/start:1", `user:${text}`, "step/start:1.1", "request/header:initial"] as const

/** `traceOf`: turn 1 answered `text` in its one step, completed, and the agent settled back to idle. */
export const firstAnswer = (text: string) =>
  [`assistant:${text}`, "step/end:1.1", "turn/end:1:completed", "settled:completed", "status:idle"] as const
