/**
 * The agent's shared environment: its state (one immutable record in a `Ref` — the lifecycle value, ADR 0021, and
 * what survives across turns — changed only inside the log's transactions, the acceptance window: a critical section
 * is a `SessionLog` transaction, so the section and its appends take one permit, ADR 0028, ADR 0051), the inbox, and
 * the helpers every part of the agent uses to append to the log (through the section's transaction `tx`) and publish
 * live events in one true order.
 */
import type { LanguageModel, Tool, Toolkit } from "@effect/ai"
import type { AgentEvent, Approval, Ids, Message, SessionEvent, Turn } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import type { Deferred, Fiber, FiberMap, Scope, Tracer } from "effect"
import { Cause, Chunk, Context, Effect, FiberRef, Option, PubSub, Ref } from "effect"
import type { Options, Service } from "../Agent.js"
import type * as AgentTool from "../AgentTool.js"
import type { RequestConfig } from "../Hooks.js"
import type * as Compaction from "./compaction.js"
import * as Inbox from "./inbox.js"
import type { OutboxItem, QueuedItem } from "./inbox.js"
import * as Lifecycle from "./lifecycle.js"
import type { Budgets } from "./options.js"

/** What one activity (an admission and its turn, or a retry turn) has done so far; read by the driver. */
export interface Progress {
  /** The committed turn number, once `turn/start` is in the log. */
  readonly turn: number | undefined
  /** The current step counter (0 before the first step). */
  readonly step: number
  /** The `turn/end` reason once written by the turn itself. */
  readonly ended: Turn.TurnEndReason | undefined
  /** Whether any step of this turn finished with `max-tokens`. */
  readonly maxTokens: boolean
}

/** A call whose handler finished, with what its result owes the turn. */
export interface FinishedCall {
  readonly data: SessionEvent.SessionEventInputOf<"tool/result">["data"]
  readonly concludes: boolean
  readonly contexts: ReadonlyArray<Message.UserMessageData>
}

/**
 * The tool calls of the current turn: what finished but is not yet committed, and which calls were dispatched. The
 * running handlers themselves are in {@link Handlers}. Plain bookkeeping, changed in synchronous steps (a call
 * recorded as finished and its commit, a call marked dispatched and its fork) and read by the close once every
 * handler has stopped.
 */
export interface ToolRuntime {
  readonly finished: Map<string, FinishedCall>
  readonly dispatched: Set<string>
}

/** A fresh tool runtime for one activity. */
export const makeToolRuntime = (): ToolRuntime => ({ finished: new Map(), dispatched: new Set() })

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

/** What the activity fiber returns when it ends on its own. */
export type ActivityResult =
  | { readonly _tag: "NoTurn" }
  | { readonly _tag: "Ended"; readonly retry: boolean }

/** A job for an activity. */
export type Job =
  | {
    readonly _tag: "prompt"
    readonly item: QueuedItem
    /** The staged items at the claim: retained input, logged before the prompt (those accepted later go after it). */
    readonly retained: ReadonlySet<OutboxItem>
  }
  /**
   * A turn for steering stranded by a cancelled or failed activity (ADR 0009, R56): its trigger is the first
   * steering item's source; the opening drain logs the outbox.
   */
  | { readonly _tag: "steering"; readonly source: Message.AgentMessage["source"] }
  /** `agent.compact` (ADR 0052): a compaction turn, if `beforeCompact` allows it. */
  | { readonly _tag: "compaction"; readonly instruction: string | undefined }
  | {
    readonly _tag: "retry"
    /**
     * The failed turn this retry follows, not yet settled (only the last turn of a retry chain settles, R57): if
     * the retry never opens a turn (a cancel, a refused `turn/start`), that turn is the last and settles then.
     */
    readonly unsettled?: { readonly turn: number; readonly reason: Turn.TurnEndReason } | undefined
  }

/**
 * The current activity. Its fiber, job, progress and tools are fixed when it starts; `window`, `cause` and
 * `logContextOnClose` change with it (a new value swapped into the lifecycle, see `lifecycle.ts`).
 */
export interface Activity {
  readonly job: Job
  readonly fiber: Fiber.RuntimeFiber<ActivityResult, unknown>
  readonly progress: Ref.Ref<Progress>
  readonly tools: ToolRuntime
  /** `acceptsNextStep`: open from the activity's start (before its admission, R35) until its turn ends (R57). */
  readonly window: boolean
  /** The first cancel cause recorded for this activity. */
  readonly cause: AgentEvent.InterruptReason | undefined
  /** A default cancel hit this activity: staged context is logged when it closes. */
  readonly logContextOnClose: boolean
  /** The activity's `Agent.turn` span, ended once the driver has settled it (ADR 0024); none when untraced. */
  readonly span: Tracer.Span | undefined
}

/**
 * The agent's state. Contract: read and written only inside a transaction of the log (`env.log.transaction`, a
 * critical section), except plain reads for the public accessors and `honourCancel`.
 */
export interface State {
  /** Idle, running (a driver and perhaps an activity), disposing or disposed (ADR 0021). */
  readonly lifecycle: Lifecycle.Lifecycle
  /** The end reason of a turn whose close the store refused: the log still has it open (see `repairLocked`). */
  readonly unclosed: Turn.TurnEndReason | undefined
  /** The header this agent last logged (`undefined` before its first request). */
  readonly header: SessionEvent.RequestHeader["header"] | undefined
  /** The last request's reported input tokens, since the latest compaction (the context estimate's base, R146). */
  readonly usage: Compaction.UsageMark | undefined
}

/** Everything the agent's parts share. */
/** How a pending approval was answered (ADR 0054). */
export interface ApprovalAnswered {
  readonly decision: "allow" | "deny"
  readonly reason?: string | undefined
  readonly by: "person" | "timeout" | "cancel"
}

/** One pending approval: what is listed, and the wait of a call whose turn is open (absent after a restart). */
export interface ApprovalEntry {
  readonly pending: Approval.PendingApproval
  readonly waiting: Deferred.Deferred<ApprovalAnswered> | undefined
}

/** The pending approvals by call id, in request order (a `Map` keeps insertion order); see `approvals.ts`. */
export type Approvals = Ref.Ref<ReadonlyMap<string, ApprovalEntry>>

export interface Env {
  readonly options: Options<unknown>
  readonly service: Service
  readonly log: SessionLog.Service
  readonly model: LanguageModel.Service
  /** The context captured at creation: what tools, hooks and the system prompt need. */
  readonly context: Context.Context<never>
  readonly fibers: Scope.Scope
  /** The running tool handlers (none for an agent without tools: it never runs one). */
  readonly handlers: Handlers | undefined
  readonly state: Ref.Ref<State>
  /** The inbox: the queued FIFO and the snapshot of everything pending (see `inbox.ts`). */
  readonly inbox: Inbox.Inbox
  /** The pending approvals (see `approvals.ts`, ADR 0054). */
  readonly approvals: Approvals
  /**
   * The live events' PubSub, made by the first subscriber (ADR 0038): until then nobody can receive an event, so
   * none is built or published. Set once, in one synchronous step.
   */
  live: PubSub.PubSub<AgentEvent.AgentEvent> | undefined
  readonly tools: ReadonlyMap<string, AgentTool.AgentTool<unknown>>
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  readonly descriptors: ReadonlyArray<SessionEvent.ToolDescriptor> | undefined
  readonly defaultConfig: RequestConfig
  readonly maxParallel: number
  /** `maxPending` and `overflow`, when the inbox is bounded (ADR 0050). */
  readonly bound: { readonly limit: number; readonly overflow: "reject" | "dropOldest" | "dropNewest" } | undefined
  /** The most characters a tool result's text may have (`maxToolResultChars`). */
  readonly maxToolResult: number
  /** The agent's budgets, validated (`budget.ts`, R154–R163). */
  readonly budget: Budgets
  /** `Options.compaction`, validated (`undefined`: no automatic compaction; `compact` uses the defaults). */
  readonly compaction: Compaction.Settings | undefined
  /**
   * Whether the agent was created under a `Tracer` of the program's own (e.g. `@effect/opentelemetry`): only then
   * does it record its spans (ADR 0024, ADR 0028). Under Effect's default tracer nobody reads them.
   */
  readonly traced: boolean
}

/**
 * Runs a critical section — "holding the lock", the acceptance window's (ADR 0005) — as one transaction of the agent's
 * log (ADR 0051): `body` appends through `tx`, and nothing else changes the agent's state or its log meanwhile.
 * Uninterruptible, the wait included (a section is never left half done; an interruption landing as the permit is
 * handed over would leak it, as the property tests found under small `maxOpsBeforeYield` budgets); sections are
 * short and wait on nothing but other sections and the log.
 */
export const locked = <A, E, R>(
  env: Env,
  body: (tx: SessionLog.Transaction) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => env.log.transaction(body)

/**
 * Provides the context captured at creation to an effect of a tool, hook or system prompt.
 */
export const provide = <A, E>(env: Env, effect: Effect.Effect<A, E, unknown>): Effect.Effect<A, E> =>
  // `Agent.make` required `R` and captured that context, so every requirement of `effect` is in `env.context`;
  // the options are stored with `R` erased to `unknown`, which is why the type has to be restored here.
  Effect.provide(effect as Effect.Effect<A, E>, env.context)

/**
 * `provide` for the first effect of a fiber of its own (a tool handler's): `env.context` is merged into the fiber's
 * context once, with no region to put the old one back — the fiber ends after what follows, and what follows (the
 * agent's own bookkeeping) reads nothing from the context (ADR 0033).
 */
export const provideFiber = <A, E>(env: Env, effect: Effect.Effect<A, E, unknown>): Effect.Effect<A, E> =>
  Effect.zipRight(
    FiberRef.update(FiberRef.currentContext, (context) => Context.merge(context, env.context)),
    effect as Effect.Effect<A, E>
  )

/**
 * Stops the activity if a cancel was recorded for it: run in the activity fiber right after each hook, so a hook
 * that cancels its own agent finishes, and nothing after it runs (no hook runs after a cancel).
 */
export const honourCancel = (env: Env): Effect.Effect<void> =>
  Effect.flatMap(
    Ref.get(env.state),
    (state) => (Lifecycle.cause(state.lifecycle) === undefined ? Effect.void : Effect.interrupt)
  )

/** The options of a record of inbox records the agent built itself (ADR 0023). */
const trusted = { trusted: true } as const

/**
 * Publishes a live event, if anyone ever subscribed (ADR 0038). Never blocks (the PubSub is unbounded). Succeeds
 * with `PubSub.publish`'s boolean, which callers ignore: an `asVoid` would cost two interpreter steps a publish.
 */
export const publish = (env: Env, event: AgentEvent.AgentEvent): Effect.Effect<unknown> =>
  env.live === undefined ? Effect.void : PubSub.publish(env.live, event)

/** Publishes live events in order, if anyone ever subscribed; `events` is only called then (ADR 0038). */
export const publishAll = (
  env: Env,
  events: () => Iterable<AgentEvent.AgentEvent>
): Effect.Effect<unknown> => env.live === undefined ? Effect.void : PubSub.publishAll(env.live, events())

/** Publishes appended events live, each as `session/event`. */
export const publishAppended = (
  env: Env,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<unknown> =>
  env.live === undefined
    ? Effect.void
    : events.length === 1
    ? PubSub.publish(env.live, { type: "session/event", event: events[0]! })
    : PubSub.publishAll(env.live, events.map((event) => ({ type: "session/event" as const, event })))

/** The live events' PubSub, made now if nobody subscribed before (ADR 0038). */
export const livePubSub = (env: Env): Effect.Effect<PubSub.PubSub<AgentEvent.AgentEvent>> =>
  Effect.suspend(() =>
    env.live !== undefined ? Effect.succeed(env.live) : Effect.map(
      PubSub.unbounded<AgentEvent.AgentEvent>(),
      // A concurrent first subscriber may have made one meanwhile: its PubSub wins, this one is dropped.
      (made) => (env.live ??= made)
    )
  )

/**
 * Appends a durable event and republishes it live as `session/event`. Validated, unless the caller checked it
 * (`trust`: see `content.isValidMessage`).
 */
export const append = <E extends SessionEvent.SessionEventInput>(
  env: Env,
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
  env: Env,
  tx: SessionLog.Transaction,
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>
): Effect.Effect<unknown, SessionLog.SessionLogError> =>
  // Succeeds with the publish's result, not the events: no caller reads them, and handing them back costs two steps.
  Effect.flatMap(tx.appendTrusted(inputs), (events) => publishAppended(env, events))

/**
 * A durability barrier (ADR 0008): on a durable log, waits until everything appended (and every inbox record
 * recorded) so far is written and synced. A memory log has nothing to outlive, so it costs nothing there.
 */
export const barrier = (env: Env): Effect.Effect<void, SessionLog.SessionLogError> =>
  env.log.durable ? env.log.flush : Effect.void

/**
 * Records durable inbox records (ADR 0017), trusted (ADR 0023): the agent builds them from decoded, frozen
 * messages. A refusal (a store that cannot take them) is logged, never thrown at a caller.
 */
export const recordInbox = (
  env: Env,
  records: ReadonlyArray<SessionLog.InboxRecordInput>
): Effect.Effect<void> =>
  env.log.recordInbox(records, trusted).pipe(
    Effect.catchAll((error) => Effect.logError("the session log refused an inbox record", error))
  )

/** Reports a refusal of the session log that no caller sees as `agent/error` (`SESSION_LOG`). */
export const reportLogError = (
  env: Env,
  turn: number,
  step: number,
  error: SessionLog.SessionLogError
): Effect.Effect<void> =>
  publish(env, { type: "agent/error", turn, step, error: { message: error.message, code: "SESSION_LOG" } })

/** Updates the state. */
export const update = (env: Env, f: (state: State) => State): Effect.Effect<void> => Ref.update(env.state, f)

/**
 * Applies a lifecycle transition (ADR 0021). Runs in a critical section. The callers only ask for transitions their
 * state allows, so a refused one is a bug: a defect naming the transition and the state (thrown inside the update,
 * which makes it the same `die` as `Effect.dieMessage` in one interpreter step instead of three).
 */
export const transition = (
  env: Env,
  name: string,
  f: (lifecycle: Lifecycle.Lifecycle) => Option.Option<Lifecycle.Lifecycle>
): Effect.Effect<void> =>
  Ref.update(env.state, (state) => {
    const next = f(state.lifecycle)
    if (Option.isNone(next)) {
      throw new Cause.RuntimeException(`the agent's lifecycle refused "${name}" in state ${state.lifecycle._tag}`)
    }
    return { ...state, lifecycle: next.value }
  })

/** Reads the state. */
export const read = (env: Env): Effect.Effect<State> => Ref.get(env.state)

/** Whether the outbox holds steering now. */
export const hasSteering = (env: Env): Effect.Effect<boolean> => Effect.map(Inbox.get(env.inbox), Inbox.hasSteering)

/** Stages tool-result contexts on the outbox (they are logged by the next drain, R68). */
export const stageContexts = (env: Env, contexts: ReadonlyArray<Message.UserMessageData>): Effect.Effect<void> =>
  contexts.length === 0 ?
    Effect.void :
    Inbox.modify(
      env.inbox,
      (s) =>
        contexts.reduce<Inbox.Snapshot>((acc, data) => Inbox.staged(acc, { _tag: "context", data, id: undefined }), s)
    )

/** The durable event an outbox item becomes when drained into `turn` (or outside any turn). */
export const outboxEvent = (
  item: OutboxItem,
  turn: number | undefined
): SessionEvent.SessionEventInputOf<"user/message"> | SessionEvent.SessionEventInputOf<"steering/message"> =>
  item._tag === "steering"
    ? {
      type: "steering/message",
      data: { turn: turn!, messageId: item.message.id, content: item.message.content, source: item.message.source }
    }
    : { type: "user/message", data: userMessageData(item.data, item.id) }

/** The data of a `user/message` for accepted input. */
export const userMessageData = (
  data: Message.UserMessageData,
  id: Ids.AgentMessageId | undefined
): SessionEvent.SessionEventInputOf<"user/message">["data"] =>
  id === undefined
    ? { content: data.content, source: data.source }
    : { messageId: id, content: data.content, source: data.source }

/**
 * What a drain of the outbox would log (R47): the events of a prefix of the outbox (`limit` items; `only` limits
 * it to one kind of item, the others keep their places), and the outbox left after it. Pure.
 */
export const drainPlan = (
  snapshot: Inbox.Snapshot,
  options: { readonly turn: number | undefined; readonly limit?: number; readonly only?: OutboxItem["_tag"] }
): {
  readonly taken: ReadonlyArray<OutboxItem>
  readonly events: ReadonlyArray<SessionEvent.SessionEventInput>
  readonly rest: Chunk.Chunk<OutboxItem>
} => {
  const items = Chunk.toReadonlyArray(snapshot.outbox)
  const limit = Math.min(options.limit ?? Infinity, items.length)
  const taken: Array<OutboxItem> = []
  const kept: Array<OutboxItem> = []
  for (let index = 0; index < limit; index++) {
    const item = items[index]!
    if (options.only !== undefined && item._tag !== options.only) kept.push(item)
    else taken.push(item)
  }
  return {
    taken,
    events: taken.map((item) => outboxEvent(item, options.turn)),
    rest: taken.length === 0 ? snapshot.outbox : Chunk.unsafeFromArray([...kept, ...items.slice(limit)])
  }
}

/**
 * The live events of what a drain logged, in order: each event as `session/event`, followed for steering by its
 * `agent/inbox/dequeue`. Pure.
 */
export const drainedLive = (
  taken: ReadonlyArray<OutboxItem>,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Array<AgentEvent.AgentEvent> => {
  const live: Array<AgentEvent.AgentEvent> = []
  taken.forEach((item, index) => {
    live.push({ type: "session/event", event: events[index]! })
    if (item._tag === "steering") live.push({ type: "agent/inbox/dequeue", message: item.message })
  })
  return live
}

/** Publishes what a drain logged (see {@link drainedLive}). Returns whether any steering was drained. */
const publishDrained = (
  env: Env,
  taken: ReadonlyArray<OutboxItem>,
  events: ReadonlyArray<SessionEvent.SessionEvent>
): Effect.Effect<boolean> =>
  Effect.as(
    publishAll(env, () => drainedLive(taken, events)),
    taken.some((item) => item._tag === "steering")
  )

/**
 * Drains a prefix of the outbox into the log (R47): steering becomes `steering/message` (and publishes its
 * `dequeue`), context becomes `user/message`. Runs inside the section's transaction `tx`.
 *
 * Contract: one `appendAll`, so all or nothing: items leave the outbox only once appended; if the log refuses,
 * the outbox is unchanged (R63, as a port should) and the failure is returned. `only` limits the drain to one
 * kind of item (the others keep their places).
 */
export const drain = Effect.fnUntraced(
  function*(
    env: Env,
    tx: SessionLog.Transaction,
    options: { readonly turn: number | undefined; readonly limit?: number; readonly only?: OutboxItem["_tag"] }
  ) {
    const plan = drainPlan(yield* Inbox.get(env.inbox), options)
    if (plan.taken.length === 0) return { steering: false }
    // Outbox items are accepted input (decoded and frozen at `send`, or a tool's context decoded when it returned).
    const events = yield* tx.appendTrusted(plan.events)
    yield* Inbox.modify(env.inbox, (s) => ({ ...s, outbox: plan.rest }))
    return { steering: yield* publishDrained(env, plan.taken, events) }
  }
)
