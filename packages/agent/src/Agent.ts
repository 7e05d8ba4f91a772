/**
 * The agent: an Effect service that drives one session. You talk to it while it works — queue a turn
 * (`followup`), steer the running turn (`steer`), slip context in without making the model run (`inject`) — and
 * stop a turn without losing what was queued (`cancel`). Everything the model sees is an event in the session
 * log; every request is derived from it.
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import type { AgentEvent, Ids, SessionEvent } from "@harness/domain"
import type { Operations } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import type { Duration, Queue, Scope, Stream } from "effect"
import { Context, Effect, Layer } from "effect"
import type { AgentConfigError } from "./AgentError.js"
import type { AgentTool } from "./AgentTool.js"
import type { Budget } from "./Budget.js"
import type { Hooks } from "./Hooks.js"
import * as internal from "./internal/agent.js"

/**
 * What an operation returns: its `success` and `failure` schemas' types (`@harness/domain`'s `Operations`).
 *
 * @since 0.0.0
 * @category models
 */
export type Result<O extends Operations.Operation> = Effect.Effect<Operations.Success<O>, Operations.Failure<O>>

/**
 * Why a send can fail: invalid input, a disposed agent, or (for an idle `inject`, which appends at once) the log.
 *
 * @since 0.0.0
 * @category errors
 */
export type SendError = Operations.SendFailure

/**
 * One operation of a {@link Service.batch}.
 *
 * @since 0.0.0
 * @category models
 */
export type BatchOp = Operations.BatchOperation

/**
 * The options of a preset: an optional caller-supplied id for idempotent acceptance.
 *
 * @since 0.0.0
 * @category models
 */
export type PresetOptions = Operations.PresetOptions

/**
 * One agent, driving one session.
 *
 * @since 0.0.0
 * @category services
 */
export interface Service {
  /** The session's id (an agent shares its session's identity). */
  readonly id: Ids.SessionId
  /**
   * Accepts a message and routes it by `target` × `wakeup` (R28) against the state at this instant.
   *
   * Contract: the input is decoded (and so copied and frozen) before anything happens; invalid input fails with
   * `InvalidMessageError` and changes nothing. A FIFO item publishes `agent/inbox/enqueue` with its placement
   * before `send` returns; an idle injection is appended before `send` returns. An id this agent already accepted
   * returns that id again and changes nothing (also after a restart: the log's store remembers it). On a durable log
   * `send` returns once the acceptance is on disk (ADR 0017). The driver never claims work inside `send`: placement
   * is decided against pre-admission state. Two separate sends are not guaranteed to see the same state (the fiber may be
   * rescheduled between them): use {@link batch} for that.
   */
  readonly send: (input: Operations.Send["message"], options: Operations.Send["options"]) => Result<Operations.Send>
  /** `send` with `{ target: "next-turn", wakeup: true }`: queue a whole turn and wake the agent. */
  readonly followup: (
    input: Operations.Followup["message"],
    options?: Operations.Followup["options"]
  ) => Result<Operations.Followup>
  /** `send` with `{ target: "next-step", wakeup: true }`: join the open turn, or start one when idle. */
  readonly steer: (
    input: Operations.Steer["message"],
    options?: Operations.Steer["options"]
  ) => Result<Operations.Steer>
  /** `send` with `{ target: "next-step", wakeup: false }`: model-visible context that never makes the model run. */
  readonly inject: (
    input: Operations.Inject["message"],
    options?: Operations.Inject["options"]
  ) => Result<Operations.Inject>
  /**
   * Runs sends and cancels in order while holding the acceptance window's lock, so the driver cannot claim
   * between them (atomicity across sends made explicit: R30, R83, R131).
   *
   * Contract: every input is decoded before anything is applied (all or nothing); results come in order
   * (`undefined` for a cancel). If an idle injection's append fails, the batch stops there, keeps what was
   * applied and fails with `BatchError { applied, cause }`.
   */
  readonly batch: (ops: Operations.Batch["operations"]) => Result<Operations.Batch>
  /** A batch of sends. */
  readonly sendAll: (
    items: ReadonlyArray<Extract<BatchOp, { readonly send: unknown }>["send"]>
  ) => Effect.Effect<ReadonlyArray<Ids.AgentMessageId>, Operations.Failure<Operations.Batch>>
  /**
   * Cancels the running admission or turn (R77–R85).
   *
   * Contract: returns without waiting for the turn to unwind (a hook or tool may cancel its own agent; use
   * {@link whenIdle} to wait). The first cause wins for the activity it cancels. Without `keepInbox`, pending
   * queued and steering items are discarded with one `agent/inbox/discard`; staged context is never dropped (it
   * is logged). With `keepInbox`, nothing pending is touched and the next waking item runs next. With `ifTurn: n`, the cancel
   * applies only while turn `n` is the open one (checked under the same lock): a cancel of a turn that is over does
   * nothing, so a redelivered cancel cannot hit a later turn or discard later work (R185). Cancel on an idle
   * agent with nothing pending, or after disposal, does nothing. A cause or options that are not valid (a caller
   * can pass anything) fail with `InvalidMessageError` and change nothing. Answers what it did to the inbox: the ids
   * it discarded and the ids it kept pending (ADR 0059; both empty when it did nothing).
   */
  readonly cancel: (
    cause: Operations.Cancel["cause"],
    options?: Operations.Cancel["options"]
  ) => Result<Operations.Cancel>
  /**
   * Starts a turn over the current log without a new prompt (trigger `retry`). Fails with `AgentBusyError` if an
   * admission or turn is active, with `AgentDisposedError` after disposal.
   */
  readonly retry: Result<Operations.Retry>
  /**
   * Starts a compaction (ADR 0052, R149): unless `beforeCompact` blocks it, a turn with trigger `compaction` whose
   * first step summarises the history and logs the `compaction` record; later requests see the summary in place of
   * what it replaced. Steering sent meanwhile lands after the record, followups run after the turn (R151). Fails
   * with `AgentBusyError` while an admission or turn is active, with `AgentDisposedError` after disposal; use
   * {@link whenIdle} to wait for it.
   */
  readonly compact: (options?: Operations.Compact["options"]) => Result<Operations.Compact>
  /**
   * The pending items now, in acceptance order: queued turns (waking or parked) and steering staged for the open
   * turn (waking, or parked when a blocked admission retained it). Staged context is not listed: it is logged at the
   * next drain and cannot be withdrawn.
   */
  readonly inbox: Result<Operations.ListInbox>
  /**
   * Removes one pending item — queued, parked or steering — without stopping the turn.
   *
   * Contract: decided holding the acceptance window's lock, so the driver cannot claim (nor a drain log) the item
   * at the same time. A pending item is removed and `agent/inbox/discard { messages: [item], reason: "withdraw" }`
   * is published for exactly it (FIFO conservation holds: its enqueue is balanced by that discard); the result is
   * `Withdrawn`. An id that is not pending (unknown, or already claimed, logged or discarded; anything after
   * disposal) changes nothing and gives `NotPending`. An id that is not a valid message id fails with
   * `InvalidMessageError`.
   */
  readonly withdraw: (id: Operations.Withdraw["id"]) => Result<Operations.Withdraw>
  /**
   * Replaces a pending item's content and source (queued, parked or steering), keeping its id, placement, waking
   * and position (ADR 0050).
   *
   * Contract: the message is decoded as a send's is (invalid input fails with `InvalidMessageError` and changes
   * nothing); the change is decided holding the acceptance window's lock, so the driver cannot claim (nor a drain
   * log) the item at the same time: either the turn sees the old content or the new one, never both. It is recorded
   * durably (`inbox/revised`, so a resume restores the edited item where it was) and published as
   * `agent/inbox/edit`; it returns once the record is durable. An item no longer pending fails with
   * `InboxChangeError` `taken` (`unknown` for an id never accepted, `disposed` after disposal). Answers the item.
   */
  readonly edit: (id: Operations.Edit["id"], message: Operations.Edit["message"]) => Result<Operations.Edit>
  /**
   * Moves a pending item to `position` (0 is first; beyond the end is last) within its FIFO: a queued turn among
   * the queued turns, steering among the steering. Decided, recorded and published (`agent/inbox/move` with its
   * index afterwards) as {@link edit} is, failing the same way; answers the item (its `order` is the rank it took).
   */
  readonly move: (id: Operations.Move["id"], position: Operations.Move["position"]) => Result<Operations.Move>
  /**
   * Turns a queued (or parked) turn into steering of the open admission or turn: it joins at the next drain point
   * (R48). Fails with `InboxChangeError` `no-open-turn` when the window is closed (R24), `not-queued` for an item
   * that is steering already, otherwise as {@link edit}. Published as `agent/inbox/place` (`steering`).
   */
  readonly promote: (id: Operations.Promote["id"]) => Result<Operations.Promote>
  /**
   * Turns steering not yet drained into a waking queued turn, last in the queued FIFO (it runs after the open turn).
   * Fails with `InboxChangeError` `not-steering` for a queued item, otherwise as {@link edit}. Published as
   * `agent/inbox/place` (`queued`).
   */
  readonly demote: (id: Operations.Demote["id"]) => Result<Operations.Demote>
  /**
   * The fate of an accepted message, computed from the session log's events and inbox records (ADR 0050), never
   * from memory: it reads the same after a restart over the same store. `pending`, `staged`, `ran { turn }`, `joined
   * { turn, step }`, `applied`, `discarded { cause }`, `withdrawn`, `rejected { reason }`, or `unknown` for an id
   * never accepted here. Reads the store: for occasional questions, not per send.
   */
  readonly receipt: (id: Operations.Receipt["id"]) => Result<Operations.Receipt>
  /**
   * Waits for a message's final receipt (anything but `pending` or `staged`) and answers it; after disposal it
   * answers the receipt as it is (a pending item waits for a resume).
   */
  readonly awaitReceipt: (id: Operations.AwaitReceipt["id"]) => Result<Operations.AwaitReceipt>
  /**
   * The tool calls waiting for a person now, in request order (ADR 0054): asked by the `toolApproval` hook answering
   * `{ kind: "ask" }`, or restored by a resume (`live: false`). Live changes are published as
   * `agent/approval/requested` and `agent/approval/answered`.
   */
  readonly approvals: Result<Operations.ListApprovals>
  /**
   * Answers a pending approval by call id (ADR 0054, R168). Contract: the answer is recorded durably
   * (`approval/answered`) before the call acts on it, and exactly one answer wins (a person's or the timeout's); a
   * call that is not pending fails with `ApprovalError` naming it and changes nothing. A call of the open turn then
   * runs (or is denied) in its turn; a call a restart cut runs now, once, and its result (or the denial) is sent to
   * the model as a message: a waking followup for a result, an injection for a denial. It returns once that is done.
   */
  readonly approve: (
    callId: Operations.Approve["callId"],
    answer: Operations.Approve["answer"]
  ) => Result<Operations.Approve>
  /** Waits until the agent is quiescent: no activity and no waking item queued (parked items do not count). */
  readonly whenIdle: Effect.Effect<void>
  /** `running` from the first claim of work until nothing waking is left. */
  readonly status: Effect.Effect<AgentEvent.AgentStatus>
  /** Whether a `next-step` send would join the open admission or turn right now (R24). */
  readonly acceptsNextStep: Effect.Effect<boolean>
  /** Subscribes to live events. Contract: subscribed when it returns, so "subscribe, then send" misses nothing. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<AgentEvent.AgentEvent>, never, Scope.Scope>
  /** The live events as a stream; subscribes when run and ends after `agent/disposed`. */
  readonly events: Stream.Stream<AgentEvent.AgentEvent>
  /** Every durable event of the session, seeded ones included. */
  readonly log: Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>>
}

/**
 * The agent of the current context.
 *
 * @since 0.0.0
 * @category services
 */
export class Agent extends Context.Tag("@harness/agent/Agent")<Agent, Service>() {}

export {
  /**
   * The route of the model request being made (defined in its own module so the turn loop can provide it without
   * importing this one).
   *
   * @since 0.0.0
   * @category services
   */
  CurrentRequest
} from "./CurrentRequest.js"

export {
  /**
   * The grace a closing scope gives the agent's running activity before disposing it (R224): none by default. Provide
   * it around `make`; its effect runs when the scope closes (defined in its own module so the agent's internals read
   * it without importing this one).
   *
   * @since 0.0.0
   * @category services
   */
  StopGrace
} from "./StopGrace.js"

/**
 * How to build an agent. `R` is what the tools, hooks and system prompt need.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options<R = never> {
  /** The session to drive: fresh or seeded. A new memory session when absent. */
  readonly session?: SessionLog.Service | undefined
  /** The system prompt: a string, or an Effect evaluated at each step. */
  readonly system?: string | Effect.Effect<string, unknown, R> | undefined
  /** The route label recorded in `request/header` (the `LanguageModel` in context does the work). */
  readonly model?: string | undefined
  /** The provider label recorded in `request/header`. */
  readonly provider?: string | undefined
  readonly hooks?: Hooks<R> | undefined
  readonly tools?: ReadonlyArray<AgentTool<R>> | undefined
  /** The cap of the rolling pool of parallel tool calls: a positive integer, default 10 (1 = serial). */
  readonly maxParallelToolCalls?: number | undefined
  /**
   * The most characters a tool's result (or its error message) may hand the model: a positive integer, default
   * 1 048 576. A larger result is not logged: the call answers `RESULT_TOO_LARGE`, naming the bound, and the turn
   * goes on (R69).
   */
  readonly maxToolResultChars?: number | undefined
  /**
   * What happens to the inbox a resumed session brings back (`SessionLog.Service.pendingInbox`, ADR 0017): `wake`
   * (default) restores every item in acceptance order and starts at once on the waking ones, as if the process had
   * never stopped; `park` restores them all parked, so nothing runs until the next waking send (which claims the
   * restored items first, in order, R31). Either way steering the crash cut off becomes a queued turn, staged
   * context is logged at once, and parked items stay parked.
   */
  readonly restoredInbox?: "wake" | "park" | undefined
  /**
   * The most pending items (queued turns and steering; staged context does not count) the inbox holds; unbounded
   * when absent (ADR 0050). A server taking sends from the network should set it (a few hundred is plenty for
   * people; size it to what one session may reasonably have queued), so a flood cannot grow memory and the durable
   * inbox without end. What a send beyond it does is {@link overflow}.
   */
  readonly maxPending?: number | undefined
  /**
   * What a send that would exceed {@link maxPending} does: `reject` (default: fails with `InboxFullError`, accepting
   * nothing), `dropOldest` (the oldest pending item is discarded to make room: `agent/inbox/discard { reason:
   * "overflow" }`), `dropNewest` (the new message is accepted and discarded at once, the same way; its receipt says
   * so).
   */
  readonly overflow?: "reject" | "dropOldest" | "dropNewest" | undefined
  /**
   * The turn's and the session's budgets (R154–R163): a step cap (default 50), token budgets, a cost budget priced
   * per model, a deadline per turn. A turn that reaches one ends with `turn/end { kind: "budget" }`.
   */
  readonly budget?: Budget | undefined
  /**
   * The timeout policy of durable approvals (ADR 0054): a call still waiting for a person this long after it was
   * asked is denied (`approval/answered { by: "timeout" }`), on the `Clock`. Absent: keep waiting.
   */
  readonly approvalTimeout?: Duration.DurationInput | undefined
  /**
   * Compaction (ADR 0052, R144–R153). With a `contextWindow` (the model's, in tokens), a step whose estimated
   * prompt passes `threshold` × `contextWindow` (default 0.8) compacts first: a compaction step asks the model
   * (or `model`, recorded as `modelLabel`) for a summary with `instruction`, and the `compaction` record makes the
   * summary stand for the history before it. Without a window nothing compacts by itself; {@link Service.compact}
   * works either way.
   */
  readonly compaction?: {
    readonly contextWindow?: number | undefined
    readonly threshold?: number | undefined
    readonly instruction?: string | undefined
    readonly model?: LanguageModel.Service | undefined
    readonly modelLabel?: string | undefined
  } | undefined
}

/**
 * Builds an agent in the current scope; closing the scope disposes it: at once, or after letting the running activity
 * end on its own for the {@link StopGrace} of the context it was built in (R224).
 *
 * @example
 * ```ts
 * import { Agent } from "@harness/agent"
 * import { Message } from "@harness/domain"
 * import { ScriptedModel } from "@harness/testkit"
 * import { Effect } from "effect"
 *
 * // One turn against a scripted model; the log is every durable event of the session.
 * const program = Effect.gen(function*() {
 *   const agent = yield* Agent.make({ system: "You are terse." })
 *   yield* agent.followup(Message.make("Say hello"))
 *   yield* agent.whenIdle
 *   return yield* agent.log
 * }).pipe(
 *   Effect.scoped,
 *   Effect.provide(ScriptedModel.layer([ScriptedModel.textResponse("Hello.")]))
 * )
 * ```
 *
 * @since 0.0.0
 * @category constructors
 */
export const make: <R = never>(
  options?: Options<R>
) => Effect.Effect<Service, AgentConfigError, Scope.Scope | LanguageModel.LanguageModel | R> = internal.make

/**
 * The agent as a layer.
 *
 * @example
 * ```ts
 * import { Agent } from "@harness/agent"
 * import { Message } from "@harness/domain"
 * import { ScriptedModel } from "@harness/testkit"
 * import { Effect, Layer } from "effect"
 *
 * const AgentLive = Agent.layer({ system: "You are terse." }).pipe(
 *   Layer.provide(ScriptedModel.layer([ScriptedModel.textResponse("Hello.")]))
 * )
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* Agent.Agent
 *   yield* agent.followup(Message.make("Say hello"))
 *   yield* agent.whenIdle
 * }).pipe(Effect.provide(AgentLive))
 * ```
 *
 * @since 0.0.0
 * @category layers
 */
export const layer = <R = never>(
  options?: Options<R>
): Layer.Layer<Agent, AgentConfigError, LanguageModel.LanguageModel | R> => Layer.scoped(Agent, internal.make(options))

/**
 * Runs one operation, given as data (decoded from a request an HTTP API or a remote agent received), against an
 * agent: the in-process call it names, with the same answer and the same failure.
 *
 * Contract: `execute(agent)(new Operations.Send({ message, options }))` is `agent.send(message, options)`, and so
 * on for every operation; what it answers and how it fails are the request's `success` and `failure` schemas, so
 * both can be encoded for the wire with `Schema.Exit`.
 *
 * @since 0.0.0
 * @category utils
 */
export const execute = (agent: Service) => <O extends Operations.Operation>(operation: O): Result<O> => {
  const run = (): Effect.Effect<unknown, unknown> => {
    const op: Operations.Operation = operation
    switch (op._tag) {
      case "Send":
        return agent.send(op.message, op.options)
      case "Followup":
        return agent.followup(op.message, op.options)
      case "Steer":
        return agent.steer(op.message, op.options)
      case "Inject":
        return agent.inject(op.message, op.options)
      case "Batch":
        return agent.batch(op.operations)
      case "Cancel":
        return agent.cancel(op.cause, op.options)
      case "Retry":
        return agent.retry
      case "Compact":
        return agent.compact(op.options)
      case "Withdraw":
        return agent.withdraw(op.id)
      case "ListInbox":
        return agent.inbox
      case "Edit":
        return agent.edit(op.id, op.message)
      case "Move":
        return agent.move(op.id, op.position)
      case "Promote":
        return agent.promote(op.id)
      case "Demote":
        return agent.demote(op.id)
      case "Receipt":
        return agent.receipt(op.id)
      case "AwaitReceipt":
        return agent.awaitReceipt(op.id)
      case "ListApprovals":
        return agent.approvals
      case "Approve":
        return agent.approve(op.callId, op.answer)
    }
  }
  return Effect.suspend(run) as Result<O>
}
