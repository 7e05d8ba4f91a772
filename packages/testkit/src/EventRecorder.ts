/**
 * Records an agent's live and durable events for assertions: subscribe before acting, then read what happened,
 * wait for a given event, or compare a compact trace of the event order.
 *
 * @since 0.0.0
 */
import type { AgentEvent, SessionEvent } from "@harness/domain"
import type { Scope } from "effect"
import { Effect, Queue, Ref } from "effect"

/**
 * What a recorder offers.
 *
 * @since 0.0.0
 * @category models
 */
export interface Recorder {
  /** Every event received so far, live and durable (`session/event`), in publication order. */
  readonly events: Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent>>
  /** The durable events received so far. */
  readonly durable: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>>
  /** The compact trace of every event so far (see {@link trace}). */
  readonly trace: Effect.Effect<ReadonlyArray<string>>
  /**
   * Waits until an event matching `predicate` has been received (including before the call) and returns the
   * first such event.
   */
  readonly waitFor: <E extends AgentEvent.AgentEvent>(
    predicate: ((event: AgentEvent.AgentEvent) => event is E) | ((event: AgentEvent.AgentEvent) => boolean)
  ) => Effect.Effect<E>
  /** Forgets what was received so far. */
  readonly clear: Effect.Effect<void>
}

/**
 * The compact name of one event: live events by their short name (`status:running`, `enqueue:queued`,
 * `dequeue`, `discard:2`, `edit`, `move:0`, `place:steering`, `approval-requested:<callId>`, `approval-answered:allow`, `cancel-requested:user`, `settled:completed`, `error`, `disposed`), durable events by
 * their wire name, with the turn/end reason (`turn/end:aborted`) and the tool result's error code
 * (`tool/result:ABORTED`).
 *
 * @since 0.0.0
 * @category rendering
 */
export const describe = (event: AgentEvent.AgentEvent): string => {
  switch (event.type) {
    case "agent/status":
      return `status:${event.status}`
    case "agent/inbox/enqueue":
      return `enqueue:${event.placement}`
    case "agent/inbox/dequeue":
      return "dequeue"
    case "agent/inbox/discard":
      return `discard:${event.messages.length}`
    case "agent/inbox/edit":
      return "edit"
    case "agent/inbox/move":
      return `move:${event.position}`
    case "agent/inbox/place":
      return `place:${event.placement}`
    case "agent/approval/requested":
      return `approval-requested:${event.approval.callId}`
    case "agent/approval/answered":
      return `approval-answered:${event.decision}`
    case "agent/cancel-requested":
      return `cancel-requested:${event.cause}`
    case "agent/settled":
      return `settled:${event.reason.kind}`
    case "agent/error":
      return "error"
    case "agent/disposed":
      return "disposed"
    case "session/event":
      return describeDurable(event.event)
  }
}

/**
 * The compact name of one durable event.
 *
 * @since 0.0.0
 * @category rendering
 */
export const describeDurable = (event: SessionEvent.SessionEvent): string => {
  switch (event.type) {
    case "turn/end":
      return `turn/end:${event.data.reason.kind}`
    case "tool/result":
      return event.data.error === undefined ? "tool/result" : `tool/result:${event.data.error.code}`
    default:
      return event.type
  }
}

/**
 * A compact trace of events, e.g. `["enqueue:queued", "status:running", "dequeue", "turn/start", …]`.
 *
 * @since 0.0.0
 * @category rendering
 */
export const trace = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> => events.map(describe)

/**
 * Records the events of an agent from now on. Contract: subscribed when it returns.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  agent: { readonly subscribe: Effect.Effect<Queue.Dequeue<AgentEvent.AgentEvent>, never, Scope.Scope> }
): Effect.Effect<Recorder, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* agent.subscribe
    const received = yield* Ref.make<ReadonlyArray<AgentEvent.AgentEvent>>([])
    // Moves whatever the subscription holds into `received`, without waiting.
    const pull = Effect.flatMap(Queue.takeAll(queue), (chunk) =>
      chunk.length === 0 ? Ref.get(received) : Ref.updateAndGet(received, (all) => [...all, ...chunk]))
    const events = pull
    const waitFor = <E extends AgentEvent.AgentEvent>(
      predicate: ((event: AgentEvent.AgentEvent) => event is E) | ((event: AgentEvent.AgentEvent) => boolean)
    ): Effect.Effect<E> =>
      Effect.gen(function*() {
        let all = yield* pull
        let checked = 0
        while (true) {
          for (; checked < all.length; checked++) {
            const event = all[checked]!
            // the caller's predicate is a type guard for `E`, or a plain predicate whose `E` is the default
            if (predicate(event)) {
              return event as E
            }
          }
          const next = yield* Queue.take(queue)
          all = yield* Ref.updateAndGet(received, (all) => [...all, next])
        }
      })
    return {
      events,
      durable: Effect.map(events, (all) =>
        all.flatMap((e) => (e.type === "session/event" ? [e.event] : []))),
      trace: Effect.map(events, trace),
      waitFor,
      clear: Effect.zipRight(pull, Ref.set(received, []))
    }
  })
