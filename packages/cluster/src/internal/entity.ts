/**
 * The entity's behaviour: open the session, build the agent, keep the entity alive while the agent works, run each
 * message through `Agent.execute`, and delete the session.
 */
import type { LanguageModel } from "@effect/ai"
import type { ClusterError, Sharding } from "@effect/cluster"
import { Entity, MessageStorage, ShardingConfig } from "@effect/cluster"
import { Agent } from "@harness/agent"
import type { AgentEvent, Ids, Operations } from "@harness/domain"
import type { SessionStoreError } from "@harness/session"
import { SessionLog, SessionStore } from "@harness/session"
import type { Scope } from "effect"
import { Context, Duration, Effect, Option, Queue, Ref, ScopedRef, Stream } from "effect"
import type { EventsElement } from "./protocol.js"
import { stamp } from "./protocol.js"

/** How the entity builds its agent over the session's opened log. */
export type MakeAgent<R> = (log: SessionLog.Service) => Effect.Effect<Agent.Service, unknown, R | Scope.Scope>

/** The default: a plain agent over the log (the model comes from the context). */
export const defaultAgent: MakeAgent<LanguageModel.LanguageModel> = (log) => Agent.make({ session: log })

/** The session's log: opened when the store has it, created otherwise; closed with the entity's scope. */
const openSession = (id: Ids.SessionId) =>
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
const keepAliveWhileBusy = (agent: Agent.Service) =>
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

/** The entity's agent with the log it was built over. */
interface Hosted {
  readonly agent: Agent.Service
  readonly log: SessionLog.Service
}

/**
 * The live events for one `Events` request: subscribed first, then the status at that instant as an `agent/status`
 * event (so the client knows it is subscribed) carrying where the durable events start (`after`: the request's, or
 * the seq of the log's last event now, R225), then — with `after` — the log's durable events after that seq, then
 * every live event until `agent/disposed`, skipping the durable ones at or below the last seq already accounted for.
 * Every event appended after the subscription is published to it, so every durable event above that seq follows.
 */
export const liveEvents = ({ agent, log }: Hosted, after?: number): Stream.Stream<typeof EventsElement.Type> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const queue = yield* agent.subscribe
      const status = yield* agent.status
      const past = after === undefined ? [] : (yield* agent.log).filter((event) => event.seq > after)
      const last = after === undefined
        ? (yield* log.cursors).appended - 1
        : past.length === 0
        ? after
        : past[past.length - 1]!.seq
      const head: Array<typeof EventsElement.Type> = [
        { type: "agent/status", status, after: after ?? last },
        ...past.map((event) => ({ type: "session/event" as const, event }))
      ]
      return Stream.concat(
        Stream.fromIterable(head),
        Stream.fromQueue(queue).pipe(
          Stream.takeUntil((event) => event.type === "agent/disposed"),
          Stream.filter((event) => event.type !== "session/event" || event.event.seq > last)
        )
      )
    })
  )

/** One operation message: its operation, stamped with the envelope's id when it has one, run against the agent. */
export const run = (current: Effect.Effect<Agent.Service>) =>
<O extends Operations.Operation>(
  request: { readonly payload: O | { readonly id: Ids.AgentMessageId; readonly operation: O } }
) => {
  const payload = request.payload
  return Effect.flatMap(
    current,
    (agent) =>
      "operation" in payload
        ? Agent.execute(agent)(stamp(payload.operation, payload.id))
        : Agent.execute(agent)(payload)
  )
}

/** The entity's agent, and how the entity deletes its session. */
interface Host {
  /** The agent, built over the session's log (created when the store has none) if the entity has none yet. */
  readonly agent: Effect.Effect<Agent.Service>
  /** The agent as {@link agent} gives it, with its log. */
  readonly hosted: Effect.Effect<Hosted>
  /** Drops the agent and deletes the session and the entity's stored messages; whether a session was deleted. */
  readonly remove: Effect.Effect<boolean, SessionStoreError.SessionStoreError | ClusterError.PersistenceError>
}

/**
 * The grace a closing entity gives its agent's running turn (R216, R224): `stopGrace` when given, else four fifths of
 * the runner's `entityTerminationTimeout` (the cluster's default when the context has no `ShardingConfig`).
 */
const graceOf = (stopGrace: Duration.DurationInput | undefined) =>
  stopGrace === undefined
    ? Effect.map(
      Effect.serviceOption(ShardingConfig.ShardingConfig),
      (config) =>
        Duration.times(
          Duration.decode(
            Option.getOrElse(config, () => ShardingConfig.defaults).entityTerminationTimeout
          ),
          0.8
        )
    )
    : Effect.succeed(Duration.decode(stopGrace))

/**
 * The entity's agent as a resource it can drop: built at activation when the store holds the session (so a stored
 * inbox resumes with no new message, R190), else at the first message that needs it; `remove` disposes it at once (the
 * log closed, its lease given up), deletes the session from the store and the entity's messages from the cluster's
 * storage (when the runner has one), and releases the entity's keep-alive so that it is passivated when idle. Both
 * run under one lock, so a message never sees a half-deleted session. Any other close of the entity (its shard
 * handed over, its runner stopping, passivation) stops the agent gracefully: its running turn gets `stopGrace` to end
 * on its own, and nothing queued is started (R216, R224). The agent is built in the activation's context: a lazy build
 * runs in a handler's fiber, where the cluster's entity services are not all present.
 */
export const makeHost = <R>(id: Ids.SessionId, makeAgent: MakeAgent<R>, stopGrace?: Duration.DurationInput) =>
  Effect.gen(function*() {
    const activation = yield* Effect.context<
      R | SessionStore.SessionStore | Sharding.Sharding | Entity.CurrentAddress
    >()
    const store = Context.get(activation, SessionStore.SessionStore)
    const address = Context.get(activation, Entity.CurrentAddress)
    const storage = yield* Effect.serviceOption(MessageStorage.MessageStorage)
    const current = yield* ScopedRef.make<Option.Option<Hosted>>(() => Option.none())
    const lock = yield* Effect.makeSemaphore(1)
    const grace = yield* graceOf(stopGrace)
    // Set while `remove` drops the agent: a deleted session's turn is not waited for (R219).
    const deleting = yield* Ref.make(false)
    const closingGrace = Effect.map(Ref.get(deleting), (now) => now ? Duration.zero : grace)
    const build = Effect.gen(function*() {
      const log = yield* openSession(id)
      const agent = yield* makeAgent(log)
      yield* keepAliveWhileBusy(agent)
      return Option.some<Hosted>({ agent, log })
    }).pipe(
      Effect.provideService(Agent.StopGrace, closingGrace),
      Effect.mapInputContext((context: Context.Context<Scope.Scope>) => Context.merge(activation, context)),
      Effect.orDie,
      // `ScopedRef.set` acquires uninterruptibly, and fibers inherit that: the agent's driver and turns must stay
      // interruptible, or cancelling and disposing them would wait forever.
      Effect.interruptible
    )
    const exists = store.header(id).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false))
    )
    if (yield* Effect.orDie(exists)) yield* ScopedRef.set(current, build)
    const hosted = lock.withPermits(1)(
      Effect.flatMap(ScopedRef.get(current), (found) =>
        Option.match(found, {
          onSome: Effect.succeed,
          onNone: () =>
            ScopedRef.set(current, build).pipe(
              Effect.zipRight(ScopedRef.get(current)),
              Effect.map(Option.getOrThrow)
            )
        }))
    )
    const remove = lock.withPermits(1)(Effect.gen(function*() {
      yield* Ref.set(deleting, true)
      yield* Effect.ensuring(ScopedRef.set(current, Effect.succeed(Option.none())), Ref.set(deleting, false))
      yield* Effect.provide(Entity.keepAlive(false), activation)
      const removed = yield* store.remove(id).pipe(
        Effect.as(true),
        Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false))
      )
      if (Option.isSome(storage)) yield* storage.value.clearAddress(address)
      return removed
    }))
    return { agent: Effect.map(hosted, (each) => each.agent), hosted, remove } satisfies Host
  })
