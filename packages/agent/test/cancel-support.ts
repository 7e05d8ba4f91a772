/**
 * Helpers shared by the cancellation, disposal, request-failure and event-order tests: compact views of the log,
 * the live events and the requests the scripted model received, and a session whose appends can be made to fail.
 */
import type { Prompt } from "@effect/ai"
import { assert } from "@effect/vitest"
import type { AgentEvent, SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Layer } from "effect"

/** Collapses each run of consecutive `assistant/chunk` names into one `assistant/chunk*`. */
export const squash = (trace: ReadonlyArray<string>): ReadonlyArray<string> =>
  trace.flatMap((name, i) =>
    name === "assistant/chunk"
      ? trace[i - 1] === "assistant/chunk" ? [] : ["assistant/chunk*"]
      : [name]
  )

/** The squashed compact trace of events. */
export const compact = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  squash(EventRecorder.trace(events))

/** The squashed compact names of durable events. */
export const durableTrace = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  squash(log.map(EventRecorder.describeDurable))

/** The text of a `user/message` or `steering/message`, or `undefined`. */
export const textOf = (event: SessionEvent.SessionEvent): string | undefined =>
  event.type === "user/message" || event.type === "steering/message"
    ? event.data.content.map((block) => block.type === "text" ? block.text : "").join("")
    : undefined

/**
 * The log as compact names where user and steering messages show their text: `user/message:go`,
 * `steering/message:s`; chunk runs are squashed.
 */
export const logTrace = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  squash(log.map((event) => {
    const text = textOf(event)
    return text === undefined ? EventRecorder.describeDurable(event) : `${event.type}:${text}`
  }))

/** The events of the log of one type. */
export const ofType = <T extends SessionEvent.SessionEvent["type"]>(
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  type: T
): ReadonlyArray<Extract<SessionEvent.SessionEvent, { readonly type: T }>> =>
  log.filter((event): event is Extract<SessionEvent.SessionEvent, { readonly type: T }> => event.type === type)

/** The texts of the user messages of one request the scripted model received. */
export const userTexts = (request: S.Request): ReadonlyArray<string> =>
  request.prompt.content.flatMap((message: Prompt.Message) =>
    message.role === "user"
      ? [message.content.map((part) => part.type === "text" ? part.text : "").join("")]
      : []
  )

/** Whether a live event is the durable event of the given type (as republished `session/event`). */
export const isDurable = (type: SessionEvent.SessionEvent["type"]) => (event: AgentEvent.AgentEvent): boolean =>
  event.type === "session/event" && event.event.type === type

/** Whether a live event is of the given type. */
export const isLive = (type: AgentEvent.AgentEvent["type"]) => (event: AgentEvent.AgentEvent): boolean =>
  event.type === type

/** The live events of one type. */
export const live = <T extends AgentEvent.AgentEvent["type"]>(
  events: ReadonlyArray<AgentEvent.AgentEvent>,
  type: T
): ReadonlyArray<Extract<AgentEvent.AgentEvent, { readonly type: T }>> =>
  events.filter((event): event is Extract<AgentEvent.AgentEvent, { readonly type: T }> => event.type === type)

/** Asserts the log keeps every enclosure rule. */
export const assertWellFormed = (log: ReadonlyArray<SessionEvent.SessionEvent>): void =>
  assert.deepStrictEqual(LogCheck.checkLog(log), [])

/** The scripted model plus a memory store whose appends can be made to fail (provide around the whole test). */
export const layerWithFaults = (replies: ReadonlyArray<S.Reply> = []) =>
  Layer.merge(S.layer(replies), SessionStore.layerMemoryWithFaults)

/** A fresh session in the fault-injecting store, and the fault controls. */
export const faultySession = Effect.all({ session: SessionLog.make(), faults: SessionStore.StoreFaults })
