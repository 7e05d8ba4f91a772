/**
 * Helpers shared by the acceptance-and-routing tests (routing, batch, parking, turns): messages, holds that keep
 * the agent at an exact point (inside admission, inside a step hook, inside a delayed model request), and compact
 * views of the log, the live events and the model's requests for exact assertions.
 */
import type { AgentEvent, Message as MessageT, SessionEvent } from "@harness/domain"
import { Ids, Message, MessageSource } from "@harness/domain"
import type { EventRecorder, ScriptedModel } from "@harness/testkit"
import { Chunk, Deferred, Effect, TestClock } from "effect"

/** A user message with one text block. */
export const user = (text: string): MessageT.UserMessageData => Message.make(text)

/** A plugin-sourced message (injected context usually has a non-user source). */
export const ctx = (text: string, plugin = "test"): MessageT.UserMessageData =>
  Message.make(text, MessageSource.plugin(plugin))

/** A caller-supplied message id. */
export const mid = (id: string): Ids.AgentMessageId => Ids.AgentMessageId.make(id)

/** The four cells of the routing table (R28). */
export const followupOpts: MessageT.SendOptions = { target: "next-turn", wakeup: true }
export const steerOpts: MessageT.SendOptions = { target: "next-step", wakeup: true }
export const injectOpts: MessageT.SendOptions = { target: "next-step", wakeup: false }
export const parkOpts: MessageT.SendOptions = { target: "next-turn", wakeup: false }

/**
 * Passes a value through the type system unchecked: the tests use it to hand `send` what a lying caller would
 * (the API is typed, but the agent must decode its input anyway).
 */
export const lie = <A>(value: unknown): A => value as A

/** The text of a message's content. */
export const textOf = (content: ReadonlyArray<{ readonly type: string }>): string =>
  content.map((block) => ("text" in block && typeof block.text === "string" ? block.text : `<${block.type}>`)).join("")

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

/** The conversation a model request carried, compactly: `role:text` per message. */
export const conversation = (request: ScriptedModel.Request): ReadonlyArray<string> =>
  request.prompt.content.map((message) =>
    `${message.role}:${
      typeof message.content === "string"
        ? message.content
        : message.content.map((
          part
        ) => ("text" in part && typeof part.text === "string" ? part.text : `<${part.type}>`)).join("")
    }`
  )

/** The inbox events (enqueue, dequeue, discard) among `events`. */
export const inboxEvents = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.filter((event) =>
    event.type === "agent/inbox/enqueue" || event.type === "agent/inbox/dequeue" || event.type === "agent/inbox/discard"
  )

/** `placement@text` for every enqueue among `events`. */
export const enqueues = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  events.flatMap((event) =>
    event.type === "agent/inbox/enqueue" ? [`${event.placement}@${textOf(event.message.content)}`] : []
  )

/** The live `agent/status` values among `events`. */
export const statuses = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  events.flatMap((event) => (event.type === "agent/status" ? [event.status] : []))

/** The trace without `assistant/chunk` and `request/header` (their number depends on the script, not the rule). */
export const coarseTrace = (recorder: EventRecorder.Recorder): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(recorder.trace, (trace) => trace.filter((name) => name !== "assistant/chunk" && name !== "request/header"))

/** Is this live event the durable event of type `type` (optionally matching `where`)? */
export const isDurable = <T extends SessionEvent.SessionEvent["type"]>(
  type: T,
  where: (event: Extract<SessionEvent.SessionEvent, { readonly type: T }>) => boolean = () => true
) =>
(event: AgentEvent.AgentEvent): boolean =>
  event.type === "session/event" && event.event.type === type &&
  where(event.event as Extract<SessionEvent.SessionEvent, { readonly type: T }>) // narrowed by the type check

/** Waits for `agent/settled` of the given turn. */
export const settledTurn = (recorder: EventRecorder.Recorder, turn: number) =>
  recorder.waitFor((event) => event.type === "agent/settled" && event.turn === turn)
