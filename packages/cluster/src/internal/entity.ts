/**
 * The entity's behaviour: open the session, build the agent, keep the entity alive while the agent works, and run each
 * message through `Agent.execute`.
 */
import type { LanguageModel } from "@effect/ai"
import { Entity } from "@effect/cluster"
import { Agent } from "@harness/agent"
import type { AgentEvent, Ids, Operations } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import type { Scope } from "effect"
import { Effect, Queue, Ref, Stream } from "effect"
import { stamp } from "./protocol.js"

/** How the entity builds its agent over the session's opened log. */
export type MakeAgent<R> = (log: SessionLog.Service) => Effect.Effect<Agent.Service, unknown, R | Scope.Scope>

/** The default: a plain agent over the log (the model comes from the context). */
export const defaultAgent: MakeAgent<LanguageModel.LanguageModel> = (log) => Agent.make({ session: log })

/** The session's log: opened when the store has it, created otherwise; closed with the entity's scope. */
export const openSession = (id: Ids.SessionId) =>
  Effect.acquireRelease(
    Effect.flatMap(SessionStore.SessionStore, (store) => store.header(id)).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)),
      Effect.flatMap((exists) => exists ? SessionLog.open(id) : SessionLog.make({ id }))
    ),
    (log) => Effect.ignore(log.close)
  )

/**
 * Keeps the entity alive from the agent's `running` to its `idle`: subscribed first, then the status now, then every
 * `agent/status`, so no change is missed; only changes reach the cluster.
 */
export const keepAliveWhileBusy = (agent: Agent.Service) =>
  Effect.gen(function*() {
    const events = yield* agent.subscribe
    const alive = yield* Ref.make(false)
    const apply = (status: AgentEvent.AgentStatus) =>
      Ref.getAndSet(alive, status === "running").pipe(
        Effect.flatMap((was) => was === (status === "running") ? Effect.void : Entity.keepAlive(status === "running"))
      )
    yield* Effect.flatMap(agent.status, apply)
    yield* Queue.take(events).pipe(
      Effect.flatMap((event) => event.type === "agent/status" ? apply(event.status) : Effect.void),
      Effect.forever,
      Effect.forkScoped
    )
  })

/**
 * The live events for one `Events` request: subscribed first, then the status at that instant as an `agent/status`
 * event (so the client knows it is subscribed), then — with `after` — the log's durable events after that seq, then
 * every live event until `agent/disposed`, skipping the durable ones the log already gave.
 */
export const liveEvents = (agent: Agent.Service, after?: number): Stream.Stream<AgentEvent.AgentEvent> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const queue = yield* agent.subscribe
      const status = yield* agent.status
      const past = after === undefined ? [] : (yield* agent.log).filter((event) => event.seq > after)
      const last = past.length === 0 ? after : past[past.length - 1]!.seq
      const head: Array<AgentEvent.AgentEvent> = [
        { type: "agent/status", status },
        ...past.map((event) => ({ type: "session/event" as const, event }))
      ]
      return Stream.concat(
        Stream.fromIterable(head),
        Stream.fromQueue(queue).pipe(
          Stream.takeUntil((event) => event.type === "agent/disposed"),
          Stream.filter((event) => last === undefined || event.type !== "session/event" || event.event.seq > last)
        )
      )
    })
  )

/** One operation message: its operation, stamped with the envelope's id when it has one, run against the agent. */
export const run = (agent: Agent.Service) =>
<O extends Operations.Operation>(
  request: { readonly payload: O | { readonly id: Ids.AgentMessageId; readonly operation: O } }
) => {
  const payload = request.payload
  return "operation" in payload
    ? Agent.execute(agent)(stamp(payload.operation, payload.id))
    : Agent.execute(agent)(payload)
}
