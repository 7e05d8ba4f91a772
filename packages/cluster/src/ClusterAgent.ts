/**
 * The agent of a session on the cluster as the same `Agent.Service` an in-process agent is: every operation goes to
 * the session's entity through a `RemoteAgent`, the live events are the entity's `Events`, and the log is read from
 * the shared `SessionStore` without taking the session's writer lease (the runner hosting the entity holds it). Code
 * written against `Agent.Service` — the CLI, the HTTP server — switches to the cluster by layer (R246).
 *
 * @since 0.0.0
 */
import type { Sharding } from "@effect/cluster"
import type { Agent } from "@harness/agent"
import type { AgentEvent, Ids, SessionEvent } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import type { Scope } from "effect"
import { Cause, Deferred, Effect, Queue, Stream } from "effect"
import * as RemoteAgent from "./RemoteAgent.js"

/** What the cluster's transport adds to an operation dies with it: the `Agent.Service` failures are the operation's. */
const own = <A, E>(
  effect: Effect.Effect<A, E>
): Effect.Effect<A, Exclude<E, Extract<E, RemoteAgent.RemoteAgentError>>> =>
  Effect.catchIf(
    effect,
    (e): e is Extract<E, RemoteAgent.RemoteAgentError> => e instanceof RemoteAgent.RemoteAgentError,
    (e) => Effect.die(e)
  )

/**
 * The agent of session `id` on the cluster of the context's `Sharding` (a runner, or a client-only node), reading
 * its log from the context's `SessionStore` (the store the runners write).
 *
 * Contract: each operation is one message to the session's entity (mutating ones persisted, their ids minted here,
 * sent one at a time in call order: R184, R191) and answers as the in-process agent would; a failure of the cluster's
 * transport (`RemoteAgentError`) is a defect, mapped by the caller at its edge. `sendAll` is one `batch`.
 * `acceptsNextStep` is the entity's status being `running` (the entity has no finer predicate across the wire, as for
 * `@harness/server`'s `RemoteAgent`). `subscribe` is subscribed when it returns (the entity's opening `agent/status`
 * has arrived, and is not passed on); every durable event appended after it then comes once and in seq order, even
 * across a cut before the first of them (R225), following the session across runners (R214: a runner's
 * `agent/disposed` is not passed on, so the queue lasts as long as its scope); when the cluster can no longer carry
 * the subscription (R215) the failure is logged and the queue shut down (what it held is dropped), so a reader sees
 * an end (a resuming reader picks up from its last durable seq) rather than waiting forever. `events` is `subscribe`
 * as a stream. `log` opens the
 * session read-only (`SessionLog.open` with `readOnly`: no lease, nothing repaired) and answers its durable events;
 * a session not stored yet has none. The log is the store's: a runner that commits write-behind shows its events
 * there once they are durable.
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (
  id: Ids.SessionId
): Effect.Effect<Agent.Service, never, Sharding.Sharding | SessionStore.SessionStore> =>
  Effect.gen(function*() {
    const remote = yield* RemoteAgent.make(id)
    const store = yield* SessionStore.SessionStore

    const status = own(remote.status)

    const subscribe: Effect.Effect<Queue.Dequeue<AgentEvent.AgentEvent>, never, Scope.Scope> = Effect.gen(
      function*() {
        const queue = yield* Effect.acquireRelease(Queue.unbounded<AgentEvent.AgentEvent>(), Queue.shutdown)
        const ready = yield* Deferred.make<void, RemoteAgent.RemoteAgentError>()
        const opened = yield* Deferred.make<boolean>()
        yield* remote.events.pipe(
          Stream.takeUntil((event) => event.type === "agent/disposed"),
          Stream.runForEach((event) =>
            // The first event is the entity's acknowledgement (the status when it subscribed): it is not passed on.
            Effect.flatMap(
              Deferred.succeed(opened, true),
              (first) => first ? Deferred.succeed(ready, undefined) : Queue.offer(queue, event)
            )
          ),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.void : Effect.all([
              Deferred.failCause(ready, cause),
              Effect.logWarning(
                `the events of session ${id} ended: the cluster cannot carry them`,
                Cause.pretty(cause)
              ),
              Queue.shutdown(queue)
            ], { discard: true })
          ),
          Effect.forkScoped
        )
        yield* Effect.orDie(Deferred.await(ready))
        return queue
      }
    )

    const log: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>> = store.header(id).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)),
      Effect.flatMap((stored) =>
        stored
          ? Effect.scoped(
            Effect.flatMap(
              Effect.acquireRelease(SessionLog.open(id, { readOnly: true }), (opened) => Effect.ignore(opened.close)),
              (opened) => opened.events
            )
          )
          : Effect.succeed([])
      ),
      Effect.provideService(SessionStore.SessionStore, store),
      Effect.orDie
    )

    const service: Agent.Service = {
      id,
      send: (message, options) => own(remote.send(message, options)),
      followup: (message, options) => own(remote.followup(message, options)),
      steer: (message, options) => own(remote.steer(message, options)),
      inject: (message, options) => own(remote.inject(message, options)),
      batch: (operations) => own(remote.batch(operations)),
      sendAll: (items) =>
        Effect.map(
          own(remote.batch(items.map((send) => ({ send })))),
          (results) => results.flatMap((result) => result === undefined ? [] : [result])
        ),
      cancel: (cause, options) => own(remote.cancel(cause, options)),
      retry: own(remote.retry),
      compact: (options) => own(remote.compact(options)),
      inbox: own(remote.inbox),
      withdraw: (target) => own(remote.withdraw(target)),
      edit: (target, message) => own(remote.edit(target, message)),
      move: (target, position) => own(remote.move(target, position)),
      promote: (target) => own(remote.promote(target)),
      demote: (target) => own(remote.demote(target)),
      receipt: (target) => own(remote.receipt(target)),
      awaitReceipt: (target) => own(remote.awaitReceipt(target)),
      approvals: own(remote.approvals),
      approve: (callId, answer) => own(remote.approve(callId, answer)),
      whenIdle: own(remote.whenIdle),
      status,
      acceptsNextStep: Effect.map(status, (now) => now === "running"),
      subscribe,
      events: Stream.unwrapScoped(Effect.map(subscribe, Stream.fromQueue)).pipe(
        Stream.takeUntil((event) => event.type === "agent/disposed")
      ),
      log
    }
    return service
  })
