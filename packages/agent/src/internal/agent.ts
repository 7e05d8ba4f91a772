/**
 * Builds an agent: validates its options (`options.ts`), captures its context, and wires the public `Service` —
 * acceptance (`accept.ts`), quiescence, status and events — onto the shared environment (`env.ts`); owns restoration
 * of a stored inbox and disposal.
 */
import { LanguageModel, Tokenizer } from "@effect/ai"
import { SessionLog, type SessionStore } from "@harness/session"
import {
  Context,
  Duration,
  Effect,
  ExecutionStrategy,
  Fiber,
  FiberMap,
  Option,
  PubSub,
  type Queue,
  Ref,
  Scope,
  Stream,
  Tracer
} from "effect"
import type { Options, Service } from "../Agent.js"
import type { AgentConfigError } from "../AgentError.js"
import { StopGrace } from "../StopGrace.js"
import * as Accept from "./accept.js"
import * as Approvals from "./approvals.js"
import * as CutCalls from "./cutCalls.js"
import { flushContext } from "./driver.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import * as InboxOps from "./inboxOps.js"
import * as Lifecycle from "./lifecycle.js"
import { livePubSub, publish } from "./live.js"
import { validate } from "./options.js"
import * as Receipts from "./receipt.js"
import * as Spans from "./spans.js"
import type { State } from "./state.js"
import { locked, read, transition } from "./state.js"
/** Reports each store fault the log's writer met (and retries) as `agent/error` (`SESSION_STORE`, ADR 0008). */
const reportFaults = (env: Env, faults: Queue.Dequeue<SessionStore.SessionStoreError>): Effect.Effect<void> =>
  Stream.runForEach(Stream.fromQueue(faults), (error) => reportFault(env, error))

const reportFault = Effect.fnUntraced(function*(env: Env, error: SessionStore.SessionStoreError) {
  const activity = Lifecycle.activity((yield* read(env)).lifecycle)
  const progress = activity === undefined ? undefined : yield* Ref.get(activity.progress)
  const turn = progress?.turn ?? (yield* env.log.state).lastTurn
  yield* publish(env, {
    type: "agent/error",
    turn,
    step: progress?.step ?? 0,
    error: {
      message: `the session store refused a commit; it is retried, nothing is lost: ${error.message}`,
      code: "SESSION_STORE"
    }
  })
})

/** `whenIdle`: waits until no driver runs (a driver started meanwhile is waited for too). */
const waitIdle = Effect.fnUntraced(function*(state: Ref.Ref<State>) {
  while (true) {
    const driving = Lifecycle.driving((yield* Ref.get(state)).lifecycle)
    if (driving === undefined) return
    yield* driving.idle.await
  }
})

/** The live events from now until `agent/disposed`; none after disposal. */
const liveEvents = Effect.fnUntraced(function*(env: Env) {
  if (Lifecycle.isDisposed((yield* read(env)).lifecycle)) return Stream.empty
  const queue = yield* PubSub.subscribe(yield* livePubSub(env))
  return Stream.fromQueue(queue).pipe(Stream.takeUntil((event) => event.type === "agent/disposed"))
})

/**
 * Disposal (R86), after a graceful stop when `grace` is above zero (R224): record `disposed` (unless an earlier cause
 * won), discard pending work, let the driver close the turn, log staged context, make the log durable, then publish
 * `agent/disposed`, the last event.
 */
const dispose = Effect.fnUntraced(function*(env: Env, grace: Duration.Duration) {
  if (Duration.greaterThan(grace, Duration.zero)) yield* stop(env, grace)
  const driver = yield* locked(env, (tx) => disposeLocked(env, tx))
  if (driver !== undefined) yield* Fiber.await(driver)
  yield* locked(env, (tx) => flushContext(env, tx))
  yield* env.log.flush.pipe(
    Effect.catchAll((error) => Effect.logWarning("the session log could not be flushed at disposal", error))
  )
  yield* publish(env, { type: "agent/disposed" })
})

const disposeLocked = Effect.fnUntraced(function*(env: Env, tx: SessionLog.Transaction) {
  yield* Accept.cancelLocked(env, tx, "disposed", false)
  // After a graceful stop disposal has begun already: only the cancel above was left to do.
  if (!Lifecycle.isDisposed((yield* read(env)).lifecycle)) yield* transition(env, "disposed", Lifecycle.disposed)
  return Lifecycle.driving((yield* read(env)).lifecycle)?.driver
})

/**
 * The graceful stop (R224): disposal begins without a cancel — a running driver finishes its activity and claims
 * nothing (`Disposing`), an idle agent is `Disposed` — and the driver is waited for, for at most `grace`. The wait is
 * made interruptible inside the uninterruptible disposal, or the timeout could not interrupt it; an interruption of
 * the closing fiber ends the wait, not the disposal.
 */
const stop = Effect.fnUntraced(function*(env: Env, grace: Duration.Duration) {
  const driver = yield* locked(env, () =>
    Effect.zipRight(
      transition(env, "stopping", Lifecycle.disposed),
      Effect.map(read(env), (state) => Lifecycle.driving(state.lifecycle)?.driver)
    ))
  if (driver === undefined) return
  yield* Effect.exit(Effect.interruptible(Effect.timeoutOption(Fiber.await(driver), grace)))
})

/**
 * The service: its effects and stream built each time they are read, its operations each time they are read, all
 * getters on one prototype, so an idle agent holds none of them (ADR 0040, ADR 0076). Getters of an object literal
 * would cost more than the prebuilt values they replace (V8 keeps such an object's properties in a dictionary). An
 * operation read is a fresh closure over the agent's environment: a destructured service works (destructuring reads
 * the getter), and so does `agent.followup(…)`; a spread copy (`{ ...agent }`) has none of them.
 */
class AgentService implements Service {
  readonly id: SessionLog.Service["id"]
  readonly #env: () => Env
  constructor(id: SessionLog.Service["id"], env: () => Env) {
    this.id = id
    this.#env = env
  }
  get send(): Service["send"] {
    const env = this.#env()
    return (input, sendOptions) => Accept.send(env, input, sendOptions)
  }
  get followup(): Service["followup"] {
    const env = this.#env()
    return (input, presetOptions) => Accept.preset(env, "next-turn", true)(input, presetOptions)
  }
  get steer(): Service["steer"] {
    const env = this.#env()
    return (input, presetOptions) => Accept.preset(env, "next-step", true)(input, presetOptions)
  }
  get inject(): Service["inject"] {
    const env = this.#env()
    return (input, presetOptions) => Accept.preset(env, "next-step", false)(input, presetOptions)
  }
  get batch(): Service["batch"] {
    const env = this.#env()
    return (ops) => Accept.batch(env, ops)
  }
  get sendAll(): Service["sendAll"] {
    const env = this.#env()
    return (items) => Accept.sendAll(env, items)
  }
  get cancel(): Service["cancel"] {
    const env = this.#env()
    return (cause, cancelOptions) => Accept.cancel(env, cause, cancelOptions)
  }
  get compact(): Service["compact"] {
    const env = this.#env()
    return (compactOptions) => Accept.compact(env, compactOptions)
  }
  get withdraw(): Service["withdraw"] {
    const env = this.#env()
    return (id) => InboxOps.withdraw(env, id)
  }
  get edit(): Service["edit"] {
    const env = this.#env()
    return (id, message) => InboxOps.edit(env, id, message)
  }
  get move(): Service["move"] {
    const env = this.#env()
    return (id, position) => InboxOps.move(env, id, position)
  }
  get promote(): Service["promote"] {
    const env = this.#env()
    return (id) => InboxOps.promote(env, id)
  }
  get demote(): Service["demote"] {
    const env = this.#env()
    return (id) => InboxOps.demote(env, id)
  }
  get receipt(): Service["receipt"] {
    const env = this.#env()
    return (id) => Receipts.receipt(env, id)
  }
  get awaitReceipt(): Service["awaitReceipt"] {
    const env = this.#env()
    return (id) => Receipts.awaitReceipt(env, id)
  }
  get approve(): Service["approve"] {
    const env = this.#env()
    return (callId, answer) => CutCalls.approve(env, callId, answer)
  }
  get retry() {
    return Accept.retry(this.#env())
  }
  get whenIdle() {
    return waitIdle(this.#env().state)
  }
  get inbox() {
    return InboxOps.inbox(this.#env())
  }
  get approvals() {
    return Approvals.list(this.#env())
  }
  get status() {
    return Effect.map(Ref.get(this.#env().state), (s) => Lifecycle.status(s.lifecycle))
  }
  get acceptsNextStep() {
    return Effect.map(Ref.get(this.#env().state), (s) => Lifecycle.windowOpen(s.lifecycle))
  }
  get subscribe() {
    return Effect.flatMap(livePubSub(this.#env()), PubSub.subscribe)
  }
  get events() {
    return Stream.unwrapScoped(liveEvents(this.#env()))
  }
  get log() {
    return this.#env().log.events
  }
}

/**
 * Builds an agent in the current scope.
 */
export const make: <R>(
  options?: Options<R>
) => Effect.Effect<Service, AgentConfigError, Scope.Scope | LanguageModel.LanguageModel | R> = Effect.fnUntraced(
  function*<R>(options: Options<R> = {}) {
    const erased: Options<unknown> = options
    const { advertised, bound, budget, compaction, maxParallel, maxToolResult, tools } = yield* validate(erased)
    // A fresh memory session cannot be refused (its store is new and empty).
    const log = options.session ?? (yield* Effect.orDie(SessionLog.memory()))
    const model = yield* LanguageModel.LanguageModel
    // A provider layer may give a `Tokenizer`: the compaction estimate counts with it (R220).
    const tokenizer = compaction === undefined
      ? undefined
      : Option.getOrUndefined(yield* Effect.serviceOption(Tokenizer.Tokenizer))
    // Without the creator's span: tools and hooks run under the agent's own spans (ADR 0024). A context without one
    // is kept as it is (a copy was ≈ 0.2 KB of every idle agent).
    const created = yield* Effect.context<R>()
    const context = Option.isNone(Context.getOption(created, Tracer.ParentSpan))
      ? created
      : Context.omit(Tracer.ParentSpan)(created)
    const scope = yield* Effect.scope
    const stopGrace = yield* StopGrace
    // Fibers live in a child scope created before the disposal finalizer, so disposal runs first (it waits for
    // the driver to close the turn) and the fibers are interrupted only after it.
    const fibers = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const initial: State = { lifecycle: Lifecycle.initial, unclosed: undefined, header: undefined, usage: undefined }
    // Only an agent with tools runs handlers. Each map's finalizer keeps the creating fiber's `FiberRefs`: for an
    // agent without tools that was ≈ 2 KB of its idle heap for nothing.
    const handlers = tools.size === 0 ? undefined : {
      interrupt: yield* Scope.extend(FiberMap.make<string, void, never>(), fibers),
      finish: yield* Scope.extend(FiberMap.make<string, void, never>(), fibers)
    }
    const state = yield* Ref.make(initial)
    const inbox = yield* Inbox.make

    const service: Service = new AgentService(log.id, () => env)

    const traced = yield* Spans.tracing
    const env: Env = {
      traced,
      options: erased,
      service,
      log,
      model,
      context,
      fibers,
      handlers,
      state,
      inbox,
      approvals: yield* Approvals.make,
      pubsub: undefined,
      tools,
      toolkit: advertised?.toolkit,
      descriptors: advertised?.descriptors,
      defaultConfig: options.provider === undefined
        ? { model: options.model ?? "default" }
        : { model: options.model ?? "default", provider: options.provider },
      maxParallel,
      maxToolResult,
      budget,
      bound,
      compaction: compaction === undefined || tokenizer === undefined ? compaction : { ...compaction, tokenizer }
    }

    if (log.commitMode === "write-behind") {
      // Subscribed here, before the agent is used, so no fault is missed; reported by a fiber of the agent's own.
      const faults = yield* Scope.extend(log.subscribeFaults, fibers)
      yield* Effect.forkIn(reportFaults(env, faults), fibers)
    }
    // Approvals a restart left pending (ADR 0054); a session with no turn yet has none.
    if ((yield* log.state).lastTurn > 0) {
      yield* Approvals.restore(env, (pending, answered) => CutCalls.resolveCut(env, pending, answered)).pipe(
        Effect.catchAll((error) => Effect.logError("the pending approvals could not be read", error))
      )
      // Calls a crash cut whose tools are safe to repeat run again, on the agent's own fibers (R172).
      yield* Effect.forkIn(
        CutCalls.replayCut(env).pipe(
          Effect.catchAllCause((cause) => Effect.logError("the calls a crash cut could not be replayed", cause))
        ),
        fibers
      )
    }
    if (log.pendingInbox.length > 0) {
      yield* locked(env, (tx) => Accept.restoreLocked(env, tx, log.pendingInbox, options.restoredInbox ?? "wake"))
    }

    // Disposal is added to the scope itself: `Effect.addFinalizer` would keep the creating fiber's `FiberRefs` for as
    // long as the agent lives. Uninterruptible, as `Effect.addFinalizer` runs its finalizer: whoever closes the scope
    // cannot cut disposal short. Built when it runs: prebuilt, the disposal effect was ≈ 0.3 KB of every agent.
    // The grace is asked for when the scope closes (R224): the host decides per close.
    yield* Scope.addFinalizerExit(
      scope,
      () => Effect.uninterruptible(Effect.flatMap(stopGrace, (grace) => dispose(env, Duration.decode(grace))))
    )
    return service
  }
)
