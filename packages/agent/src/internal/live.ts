/**
 * The agent's live part: what exists only while it runs and is never logged — the live events' PubSub and every
 * publish to it, the running tool handlers, the scope its fibers live in, and the context its hooks and tools run
 * under. Durable appends republish through here, so the log and the live events keep one order.
 */
import type { AgentEvent, SessionEvent } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import type { FiberMap, Scope } from "effect"
import { Context, Effect, FiberRef, PubSub } from "effect"

/**
 * The running tool handlers, keyed by tool call id, one `FiberMap` per cancel policy: a close interrupts exactly
 * the `interrupt` calls still running and waits for the `finish` ones. A handler leaves its map when its fiber
 * exits. The maps live as long as the agent (its fiber scope closes them, interrupting what is left); only the
 * current activity's calls are ever in them, since an activity settles only after its close.
 */
interface Handlers {
  readonly interrupt: FiberMap.FiberMap<string, void, never>
  readonly finish: FiberMap.FiberMap<string, void, never>
}

/** The agent's live part, as its environment (`env.ts`) holds it. */
export interface LiveParts {
  /**
   * The live events' PubSub, made by the first subscriber (ADR 0038): until then nobody can receive an event, so
   * none is built or published. Set once, in one synchronous step.
   */
  pubsub: PubSub.PubSub<AgentEvent.AgentEvent> | undefined
  /** The scope of the agent's fibers (the driver, activities, tool handlers), closed after disposal. */
  readonly fibers: Scope.Scope
  /** The running tool handlers (none for an agent without tools: it never runs one). */
  readonly handlers: Handlers | undefined
  /** The context captured at creation: what tools, hooks and the system prompt need. */
  readonly context: Context.Context<never>
}

/**
 * Provides the context captured at creation to an effect of a tool, hook or system prompt.
 */
export const provide = <A, E>(env: LiveParts, effect: Effect.Effect<A, E, unknown>): Effect.Effect<A, E> =>
  // `Agent.make` required `R` and captured that context, so every requirement of `effect` is in `env.context`;
  // the options are stored with `R` erased to `unknown`, which is why the type has to be restored here.
  Effect.provide(effect as Effect.Effect<A, E>, env.context)

/**
 * `provide` for the first effect of a fiber of its own (a tool handler's): `env.context` is merged into the fiber's
 * context once, with no region to put the old one back — the fiber ends after what follows, and what follows (the
 * agent's own bookkeeping) reads nothing from the context (ADR 0033).
 */
export const provideFiber = <A, E>(env: LiveParts, effect: Effect.Effect<A, E, unknown>): Effect.Effect<A, E> =>
  Effect.zipRight(
    FiberRef.update(FiberRef.currentContext, (context) => Context.merge(context, env.context)),
    effect as Effect.Effect<A, E>
  )

/**
 * Publishes a live event, if anyone ever subscribed (ADR 0038). Never blocks (the PubSub is unbounded). Succeeds
 * with `PubSub.publish`'s boolean, which callers ignore: an `asVoid` would cost two interpreter steps a publish.
 */
export const publish = (env: LiveParts, event: AgentEvent.AgentEvent): Effect.Effect<unknown> =>
  env.pubsub === undefined ? Effect.void : PubSub.publish(env.pubsub, event)

/** Publishes live events in order, if anyone ever subscribed; `events` is only called then (ADR 0038). */
export const publishAll = (
  env: LiveParts,
  events: () => Iterable<AgentEvent.AgentEvent>
): Effect.Effect<unknown> => env.pubsub === undefined ? Effect.void : PubSub.publishAll(env.pubsub, events())

/** Publishes appended events live, each as `session/event`. */
export const publishAppended = (
  env: LiveParts,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<unknown> =>
  env.pubsub === undefined
    ? Effect.void
    : events.length === 1
    ? PubSub.publish(env.pubsub, { type: "session/event", event: events[0]! })
    : PubSub.publishAll(env.pubsub, events.map((event) => ({ type: "session/event" as const, event })))

/** The live events' PubSub, made now if nobody subscribed before (ADR 0038). */
export const livePubSub = (env: LiveParts): Effect.Effect<PubSub.PubSub<AgentEvent.AgentEvent>> =>
  Effect.suspend(() =>
    env.pubsub !== undefined ? Effect.succeed(env.pubsub) : Effect.map(
      PubSub.unbounded<AgentEvent.AgentEvent>(),
      // A concurrent first subscriber may have made one meanwhile: its PubSub wins, this one is dropped.
      (made) => (env.pubsub ??= made)
    )
  )

/**
 * Appends a durable event and republishes it live as `session/event`. Validated, unless the caller checked it
 * (`trust`: see `content.isValidMessage`).
 */
export const append = <E extends SessionEvent.SessionEventInput>(
  env: LiveParts,
  tx: SessionLog.Transaction,
  input: E,
  trust = false
) =>
  Effect.flatMap(
    trust ? tx.appendTrusted([input]) : tx.appendAll([input]),
    (events) =>
      Effect.as(
        publishAppended(env, events),
        // The appended event is the validated copy of `input` with `seq` and `time`, so its `type` is `input.type`.
        events[0] as Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>
      )
  )

/**
 * Appends events the agent built itself, in typed code, from values validated where they entered (`appendTrusted`,
 * ADR 0023: no schema pass, the enclosure rules still checked), as one unit, and republishes each live as
 * `session/event`. For `turn/*` and `step/*` records, accepted input and a turn's closers (`close.ts`: the results
 * in them are the tool runtime's own rendering); anything else carrying a hook's or the model's output goes through
 * {@link append}.
 */
export const appendOwn = (
  env: LiveParts,
  tx: SessionLog.Transaction,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>
): Effect.Effect<unknown, SessionLog.SessionLogError> =>
  // Succeeds with the publish's result, not the events: no caller reads them, and handing them back costs two steps.
  Effect.flatMap(tx.appendTrusted(inputs), (events) => publishAppended(env, events))

/** Reports a refusal of the session log that no caller sees as `agent/error` (`SESSION_LOG`). */
export const reportLogError = (
  env: LiveParts,
  turn: number,
  step: number,
  error: SessionLog.SessionLogError
): Effect.Effect<void> =>
  publish(env, { type: "agent/error", turn, step, error: { message: error.message, code: "SESSION_LOG" } })
