/**
 * A session's events as Server-Sent Events: the durable events after a seq from the session log, then the live
 * ones as they happen, with no gap and no duplicate; live-only events marked; a bounded buffer per subscriber that
 * ends the stream with a reason instead of ever slowing the agent.
 */
import { Sse } from "@effect/experimental"
import type { Agent } from "@harness/agent"
import { AgentEvent, SessionEvent } from "@harness/domain"
import { Deferred, Duration, Effect, Option, Queue, Schedule, Schema, Stream } from "effect"

const encodeDurable = Schema.encodeSync(SessionEvent.SessionEvent)
const encodeLive = Schema.encodeSync(AgentEvent.AgentEvent)
const utf8 = new TextEncoder()

/** A durable event: the default event type, `id:` its seq. */
const durableFrame = (event: SessionEvent.SessionEvent): string =>
  Sse.encoder.write({
    _tag: "Event",
    event: "message",
    id: String(event.seq),
    data: JSON.stringify(encodeDurable(event))
  })

/** A live-only event: `event: live`, no id (it cannot be resumed: it is not in the log). */
export const liveFrame = (event: AgentEvent.AgentEvent): string =>
  Sse.encoder.write({ _tag: "Event", event: "live", id: undefined, data: JSON.stringify(encodeLive(event)) })

/** A control event of this stream (`ready`, `overflow`): no id. */
const controlFrame = (event: "ready" | "overflow", data: object): string =>
  Sse.encoder.write({ _tag: "Event", event, id: undefined, data: JSON.stringify(data) })

/** A comment line: clients ignore it; it keeps proxies and idle timers from closing a quiet stream. */
const heartbeatFrame = ": heartbeat\n\n"

/** A live event's frame; a durable one's only when its seq is after `last` (the log gave the others). */
const frameOf = (last: number) => (event: AgentEvent.AgentEvent): Option.Option<string> => {
  if (event.type !== "session/event") return Option.some(liveFrame(event))
  return event.event.seq > last ? Option.some(durableFrame(event.event)) : Option.none()
}

/**
 * The event stream of `agent` after seq `after` (-1: from the start).
 *
 * Contract: subscribed to the live events before the log is read, so every durable event after `after` is sent
 * exactly once and in seq order — from the log up to where it ended when read, then from the live subscription
 * (skipping what the log already gave). The first frame is `event: ready` (`{ after }`: the seq the stream resumes
 * after), sent once the subscription exists. Live events wait in a buffer of `capacity` events; when it is full the
 * subscription is dropped at once (the agent never waits for a subscriber), the events already buffered are sent,
 * then `event: overflow` (`{ reason: "slow-subscriber", capacity }`), and the stream ends. It also ends after
 * `agent/disposed`. With a `heartbeat`, a comment frame (`: heartbeat`) is sent after every `heartbeat` of time on
 * `Clock` (the first one a `heartbeat` after the stream opened) for as long as the stream lasts.
 */
export const stream = (
  agent: Agent.Service,
  after: number,
  capacity: number,
  heartbeat?: Duration.Duration | undefined
): Stream.Stream<Uint8Array> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const live = yield* agent.subscribe
    const buffer = yield* Queue.dropping<AgentEvent.AgentEvent>(capacity)
    const overflow = yield* Deferred.make<void>()
    const forward: Effect.Effect<void> = Effect.flatMap(Queue.take(live), (event) =>
      Effect.flatMap(Queue.offer(buffer, event), (offered) => {
        if (!offered) {
          return Effect.zipRight(Queue.shutdown(live), Deferred.succeed(overflow, undefined))
        }
        return event.type === "agent/disposed" ? Effect.void : forward
      }))
    yield* Effect.forkScoped(forward)

    const log = yield* agent.log
    const past = log.filter((event) =>
      event.seq > after
    )
    const last = past.length === 0 ? after : past[past.length - 1]!.seq

    const frames = Stream.fromQueue(buffer).pipe(
      Stream.takeUntil((event) => event.type === "agent/disposed"),
      Stream.filterMap(frameOf(last))
    )
    // Once the buffer overflowed, what it holds is sent, then the reason.
    const untilOverflow = Stream.merge(
      frames,
      Stream.fromEffect(Deferred.await(overflow)).pipe(Stream.drain),
      { haltStrategy: "either" }
    )
    const tail = Stream.unwrap(Effect.gen(function*() {
      if (!(yield* Deferred.isDone(overflow))) return Stream.empty
      const held = yield* Queue.takeAll(buffer)
      const rest = Array.from(held).flatMap((event) => Option.toArray(frameOf(last)(event)))
      return Stream.fromIterable([...rest, controlFrame("overflow", { reason: "slow-subscriber", capacity })])
    }))
    const frames_ = Stream.make(controlFrame("ready", { after })).pipe(
      Stream.concat(Stream.fromIterable(past.map(durableFrame))),
      Stream.concat(untilOverflow),
      Stream.concat(tail)
    )
    const beating = heartbeat === undefined || Duration.toMillis(heartbeat) <= 0
      ? frames_
      : Stream.merge(
        frames_,
        Stream.fromSchedule(Schedule.spaced(heartbeat)).pipe(Stream.as(heartbeatFrame)),
        { haltStrategy: "left" }
      )
    return Stream.map(beating, (text) => utf8.encode(text))
  }))
