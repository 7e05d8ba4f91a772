/**
 * Acceptance: the agent's operations that take input from callers — `send` and its presets, `batch`, `sendAll`,
 * `cancel`, `retry`, `compact` — and the restoration of a stored inbox (pending items' operations: `inboxOps.ts`).
 * Every caller value is decoded first; routing (R28) then runs under the window's lock against the state at that
 * instant.
 */
import type { Ids as IdsT, Inbox as InboxT, SessionLogError as LogErrorT, Store as StoreT } from "@harness/domain"
import { AgentEvent, Ids, Json, Operations } from "@harness/domain"
import type { SessionLog } from "@harness/session"
import { Clock, Effect, Equal, Fiber, Option, Schema } from "effect"
import type { BatchOp, PresetOptions } from "../Agent.js"
import { AgentBusyError, AgentDisposedError, BatchError, InboxFullError, TurnRunningError } from "../AgentError.js"
import { repairLocked } from "./close.js"
import { ensureDriver, flushContext, startActivity } from "./driver.js"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import { steeringWakes } from "./inboxOps.js"
import * as Input from "./input.js"
import * as Lifecycle from "./lifecycle.js"
import { appendOwn, publish } from "./live.js"
import * as Message from "./message.js"
import { userMessageData } from "./outbox.js"
import { rollbackLocked } from "./rollback.js"
import * as Stale from "./stale.js"
import { barrier, locked, read, recordInbox, transition } from "./state.js"

/** A message id: a random UUID from the agent's `Random`. */
const mintId: Effect.Effect<IdsT.AgentMessageId> = Ids.randomUuid(Ids.AgentMessageId)

/** What `sendAll` hands `batch`: checked to be pairs, decoded by `batch` itself. */
type BatchSend = Extract<BatchOp, { readonly send: unknown }>["send"]

const PresetOptions = Schema.UndefinedOr(Operations.PresetOptions)
const CancelOptions = Schema.UndefinedOr(Operations.CancelOptions)

/**
 * `Operations.BatchOperation` with each send's message and options left undecoded: they are decoded one by one
 * afterwards, each message under its own limits and with the operation's index in the error.
 */
const BatchOperation = Schema.Union(
  Schema.Struct({ send: Schema.Tuple(Schema.Unknown, Schema.Unknown) }),
  Operations.BatchOperation.members[1]
)

/**
 * A batch is copied whole before its operations are decoded (each message again, under its own limits): a few
 * levels deeper than a message, and room for several messages.
 */
const batchLimits: Input.Limits = {
  maxDepth: Input.messageLimits.maxDepth + 3,
  maxChars: 4 * Input.messageLimits.maxChars,
  maxValues: 4 * Input.messageLimits.maxValues
}

// Every caller value is decoded from a plain, bounded copy (`Message.decodeInput`): nothing a caller passes can
// throw through an operation (ADR 0018).
const checkOptionsShape = Message.decodeInput(Message.SendOptions, "send options")
/** Send options, decoded; stale input (ADR 0059) is for messages that wait in the inbox, never an injection. */
const checkOptions = (input: unknown) =>
  Effect.flatMap(
    checkOptionsShape(input),
    (options) =>
      options.target === "next-step" && !options.wakeup && Stale.isStale(options)
        ? Effect.fail(
          new Message.InvalidMessageError({
            reason: "schema",
            message:
              "invalid send options: ttl, expiresAt and supersedes are for messages that wait in the inbox, not " +
              "for an injection (next-step without wakeup)"
          })
        )
        : Effect.succeed(options)
  )
const checkPreset = Message.decodeInput(PresetOptions, "preset options")
const checkBatch = Message.decodeInput(Schema.Array(BatchOperation), "batch", batchLimits)
const checkItems = Message.decodeInput(
  Schema.Array(Schema.Tuple(Schema.Unknown, Schema.Unknown)),
  "sendAll items",
  batchLimits
)
const checkCause = Message.decodeInput(AgentEvent.CancelCause, "cancel cause")
const checkCancelOptions = Message.decodeInput(CancelOptions, "cancel options")

/** Names the batch operation a refusal is about. */
const inOperation = (index: number) => (error: Message.InvalidMessageError) =>
  new Message.InvalidMessageError({ reason: error.reason, message: `batch operation ${index + 1}: ${error.message}` })

const disposedError = () => new AgentDisposedError({ message: "the agent was disposed: it accepts no more messages" })

/**
 * One decoded send (R28), inside the section's transaction `tx`: an id already accepted answers that id; otherwise
 * the message is accepted under its id — the one shape it keeps until the log — and routed.
 */
const sendLocked: (
  env: Env,
  tx: SessionLog.Transaction,
  data: Message.UserMessageData,
  options: Message.SendOptions
) => Effect.Effect<
  IdsT.AgentMessageId,
  AgentDisposedError | TurnRunningError | InboxFullError | LogErrorT.SessionLogError
> = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  data: Message.UserMessageData,
  options: Message.SendOptions
) {
  const { lifecycle } = yield* read(env)
  if (Lifecycle.isDisposed(lifecycle)) return yield* disposedError()
  // Ids older than the inbox's bounded memory are answered by the log (and its store's index): a resend after a
  // restart returns the original id (ADR 0017).
  if (options.id !== undefined && (yield* Inbox.isKnown(env.inbox, options.id, env.log.hasMessage))) {
    return options.id
  }
  const message = Inbox.accepted(data, options.id ?? (yield* mintId))
  // `whenBusy` is looked at only when given and a turn (or an admission) is running: a plain send pays one test.
  if (options.whenBusy !== undefined && options.whenBusy !== "enqueue" && Lifecycle.activity(lifecycle) !== undefined) {
    return yield* busyLocked(env, tx, message, options)
  }
  return yield* routeLocked(env, tx, message, options, lifecycle)
})

/** Routes an accepted message by target × wakeup (R28), against the lifecycle of the section. Answers its id. */
const routeLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  message: Message.AgentMessage,
  options: Message.SendOptions,
  lifecycle: Lifecycle.Lifecycle
) {
  const id = message.id
  if (options.target === "next-step" && !options.wakeup) {
    if (Lifecycle.windowOpen(lifecycle)) {
      yield* Inbox.modify(env.inbox, (s) => Inbox.staged(s, { _tag: "context", message }))
      yield* recordInbox(env, [{ type: "inbox/accepted", message, placement: "context", wakeup: false }])
    } else {
      // Idle injection: a bare out-of-turn `user/message`, no status change, no model call (R28).
      yield* repairLocked(env, tx)
      yield* appendOwn(env, tx, [{ type: "user/message", data: userMessageData(message) }])
      yield* Inbox.modify(env.inbox, (s) => Inbox.remember(s, id))
    }
    return id
  }
  // Stale input (ADR 0059) is looked at only when the send said so: a plain send pays one test.
  const stale = Stale.isStale(options) ? yield* staleLocked(env, options, message) : plain
  if (stale === undefined) return id
  // A bounded inbox (ADR 0050) is checked only when `maxPending` is set: an unbounded one pays one test.
  if (env.bound !== undefined && !(yield* makeRoom(env, env.bound, message))) return id
  const order = (yield* Inbox.get(env.inbox)).next
  if (options.target === "next-step" && Lifecycle.windowOpen(lifecycle)) {
    yield* Inbox.modify(env.inbox, (s) => Inbox.staged(s, { _tag: "steering", message, order, ...stale }))
    yield* recordInbox(env, [{ type: "inbox/accepted", message, placement: "steering", wakeup: true, ...stale }])
    yield* publish(env, { type: "agent/inbox/enqueue", message, placement: "steering" })
    if (stale.expiresAt !== undefined) yield* Stale.armExpiry(env, stale.expiresAt)
    return id
  }
  yield* Inbox.offer(env.inbox, { message, wakeup: options.wakeup, order, ...stale })
  yield* recordInbox(env, [{ type: "inbox/accepted", message, placement: "queued", wakeup: options.wakeup, ...stale }])
  if (stale.expiresAt !== undefined) yield* Stale.armExpiry(env, stale.expiresAt)
  // The driver may claim only once this critical section ends, so every send in it sees the same
  // pre-admission state (R30).
  if (options.wakeup) yield* ensureDriver(env)
  yield* publish(env, { type: "agent/inbox/enqueue", message, placement: "queued" })
  return id
})

/** The staleness of a plain send: none. */
const plain: Inbox.Stale = {}

/**
 * The staleness of a send that asked for some (ADR 0059), after superseding the pending items sent under its key.
 * Must run holding the lock. A message already expired at acceptance is accepted and discarded at once (its
 * `enqueue` then its `discard { reason: "expired" }`), supersedes nothing, and answers `undefined`.
 */
const staleLocked = Effect.fnUntraced(function*(
  env: Env,
  options: Message.SendOptions,
  message: Message.AgentMessage
) {
  const stale = yield* Stale.staleOf(options)
  if (yield* Stale.hasExpired(stale)) {
    yield* Inbox.modify(env.inbox, (s) => Inbox.remember(s, message.id))
    yield* recordInbox(env, [{ type: "inbox/accepted", message, placement: "queued", wakeup: false, ...stale }])
    yield* publish(env, { type: "agent/inbox/enqueue", message, placement: "queued" })
    yield* Stale.expiredLocked(env, message)
    return undefined
  }
  if (stale.supersedes !== undefined) yield* Stale.supersedeLocked(env, stale.supersedes, message.id)
  return stale
})

/**
 * Makes room in a bounded inbox for one more item (ADR 0050). Must run holding the lock. Answers whether `message`
 * may be accepted into the inbox: `reject` fails with `InboxFullError`; `dropOldest` discards the oldest pending
 * item first; `dropNewest` accepts `message` and discards it at once (answering `false`: the caller returns its id).
 * Each drop is settled durably with cause `overflow` and published as one `discard { reason: "overflow" }`.
 */
const makeRoom = Effect.fnUntraced(function*(
  env: Env,
  bound: NonNullable<Env["bound"]>,
  message: Message.AgentMessage
) {
  const snapshot = yield* Inbox.get(env.inbox)
  let pending = snapshot.queued
  for (const item of snapshot.outbox) if (item._tag === "steering") pending++
  if (pending < bound.limit) return true
  if (bound.overflow === "reject") {
    return yield* new InboxFullError({
      limit: bound.limit,
      message: `the inbox holds ${pending} pending items, its limit (maxPending ${bound.limit}): nothing was accepted`
    })
  }
  if (bound.overflow === "dropNewest") {
    yield* Inbox.modify(env.inbox, (s) => Inbox.remember(s, message.id))
    yield* recordInbox(env, [
      { type: "inbox/accepted", message, placement: "queued", wakeup: false },
      { type: "inbox/settled", id: message.id, fate: "discarded", cause: "overflow" }
    ])
    yield* publish(env, { type: "agent/inbox/enqueue", message, placement: "queued" })
    yield* publish(env, { type: "agent/inbox/discard", messages: [message], reason: "overflow" })
    return false
  }
  const state = yield* read(env)
  const oldest = (yield* Inbox.list(env.inbox, steeringWakes(state, snapshot)))[0]
  if (oldest === undefined) return true
  const dropped = yield* Inbox.withdraw(env.inbox, oldest.id, steeringWakes(state, snapshot))
  if (Option.isNone(dropped)) return true
  const { id } = dropped.value.message
  yield* recordInbox(env, [{ type: "inbox/settled", id, fate: "discarded", cause: "overflow" }])
  yield* publish(env, { type: "agent/inbox/discard", messages: [dropped.value.message], reason: "overflow" })
  return true
})

/**
 * A send that found a turn running and says what to do then (`whenBusy`, ADR 0050). Must run holding the lock.
 */
const busyLocked = Effect.fnUntraced(function*(
  env: Env,
  tx: SessionLog.Transaction,
  message: Message.AgentMessage,
  options: Message.SendOptions
) {
  switch (options.whenBusy) {
    case "reject":
      return yield* new TurnRunningError({ message: "a turn is running and the send said whenBusy: \"reject\"" })
    case "steer": {
      const { lifecycle } = yield* read(env)
      return yield* routeLocked(env, tx, message, { ...options, target: "next-step", wakeup: true }, lifecycle)
    }
    default: {
      const id = message.id
      // `interrupt`: the running turn is cancelled keeping the inbox (R81), and this message is put at the head of
      // the queued FIFO, so the driver claims it next; `rollback` first records that the turn is dropped (R207).
      if (options.whenBusy === "rollback") yield* rollbackLocked(env, tx, id)
      yield* cancelLocked(env, tx, "user", true)
      const stale = Stale.isStale(options) ? yield* staleLocked(env, options, message) : plain
      if (stale === undefined) return id
      if (env.bound !== undefined && !(yield* makeRoom(env, env.bound, message))) return id
      const order = (yield* Inbox.get(env.inbox)).next
      const head = yield* Inbox.offerFirst(env.inbox, { message, wakeup: true, order, ...stale })
      if (stale.expiresAt !== undefined) yield* Stale.armExpiry(env, stale.expiresAt)
      yield* recordInbox(env, [
        { type: "inbox/accepted", message, placement: "queued", wakeup: true, ...stale },
        ...(head === undefined
          ? []
          : [{ type: "inbox/revised" as const, id, change: { _tag: "move" as const, before: head } }])
      ])
      yield* ensureDriver(env)
      yield* publish(env, { type: "agent/inbox/enqueue", message, placement: "queued" })
      return id
    }
  }
})

/**
 * One `cancel` (R77–R85; departures R73, R81, R82, R133), inside the section's transaction `tx`. Answers the ids it
 * discarded and the ids it kept pending (ADR 0059).
 */
export const cancelLocked: (
  env: Env,
  tx: SessionLog.Transaction,
  reason: AgentEvent.InterruptReason,
  keepInbox: boolean,
  ifTurn?: number | undefined
) => Effect.Effect<InboxT.CancelResult> = Effect.fnUntraced(
  function*(
    env: Env,
    tx: SessionLog.Transaction,
    reason: AgentEvent.InterruptReason,
    keepInbox: boolean,
    ifTurn?: number | undefined
  ) {
    const { lifecycle } = yield* read(env)
    if (Lifecycle.isDisposed(lifecycle) && reason !== "disposed") return nothing
    // `ifTurn` (R185): only while that turn is the open one. The driver opens and closes turns through the log's
    // transaction, which this section holds, so the open turn cannot change under the test.
    if (ifTurn !== undefined && (yield* env.log.state).openTurn !== ifTurn) return nothing
    const inbox = yield* Inbox.get(env.inbox)
    const activity = Lifecycle.activity(lifecycle)
    const effective = activity !== undefined || (!keepInbox && (inbox.queued > 0 || inbox.outbox.length > 0))
    if (!effective) return nothing
    if (reason !== "disposed") yield* publish(env, { type: "agent/cancel-requested", cause: reason })
    let result = nothing
    if (keepInbox) result = { discarded: [], kept: yield* Inbox.pendingIds(env.inbox) }
    else {
      const discarded = yield* Inbox.discardAll(env.inbox)
      result = { discarded: discarded.map((message) => message.id), kept: [] }
      if (discarded.length > 0) {
        // Disposal settles nothing durably: what it drops here comes back when the session is resumed (ADR 0017).
        if (reason !== "disposed") {
          yield* recordInbox(
            env,
            discarded.map((message) => ({ type: "inbox/settled", id: message.id, fate: "discarded", cause: reason }))
          )
        }
        const [first, ...rest] = discarded
        yield* publish(env, { type: "agent/inbox/discard", messages: [first!, ...rest] })
      }
    }
    if (activity !== undefined) {
      yield* transition(env, "cancelled", (l) => Lifecycle.cancelled(l, reason, keepInbox))
      // A hook runs in the activity fiber: when it cancels its own agent, the activity stops right after the hook
      // returns (see `honourCancel`), so the hook itself is not cut short. Any other fiber interrupts it now.
      const self = yield* Effect.fiberId
      if (!Equal.equals(self, activity.fiber.id())) yield* Fiber.interruptAsFork(activity.fiber, self)
    } else if (!keepInbox) {
      // Outside any turn, staged context is logged rather than dropped.
      yield* flushContext(env, tx)
    }
    return result
  }
)

/** What a cancel that changed nothing answers. */
const nothing: InboxT.CancelResult = { discarded: [], kept: [] }

/** The staleness a stored `inbox/accepted` record carries (none for a plain one). */
const restoredStale = (record: StoreT.InboxAccepted): Inbox.Stale =>
  record.expiresAt === undefined && record.supersedes === undefined ? plain : {
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    ...(record.supersedes === undefined ? {} : { supersedes: record.supersedes })
  }

/**
 * Restores the inbox a stored session left (ADR 0017), in acceptance order, inside the section's transaction `tx`, before the
 * agent is used. Queued items keep their placement and waking; steering staged for a turn the crash interrupted
 * becomes a queued turn (waking); staged context is logged at once (as an idle injection would be). With
 * `park`, nothing restored wakes the agent: the items wait, parked, for the next waking send (R31).
 */
export const restoreLocked = Effect.fnUntraced(
  function*(
    env: Env,
    tx: SessionLog.Transaction,
    records: ReadonlyArray<StoreT.InboxAccepted>,
    mode: "wake" | "park"
  ) {
    let context = false
    let waking = false
    for (const record of records) {
      // A stored message is accepted again as it was recorded: frozen in place, not copied (R21).
      const message = Json.deepFreeze(record.message)
      // Stale input (ADR 0059): an item that expired while the session was down is discarded now, never run; the
      // others keep their deadline and key.
      const stale = restoredStale(record)
      if (stale.expiresAt !== undefined && stale.expiresAt <= (yield* Clock.currentTimeMillis)) {
        yield* recordInbox(env, [{ type: "inbox/settled", id: message.id, fate: "discarded", cause: "expired" }])
        continue
      }
      if (record.placement === "context") {
        yield* Inbox.modify(env.inbox, (s) => Inbox.staged(s, { _tag: "context", message }))
        context = true
        continue
      }
      const wakeup = mode === "wake" && (record.placement === "steering" || record.wakeup)
      const order = (yield* Inbox.get(env.inbox)).next
      yield* Inbox.offer(env.inbox, { message, wakeup, order, ...stale })
      if (stale.expiresAt !== undefined) yield* Stale.armExpiry(env, stale.expiresAt)
      waking = waking || wakeup
    }
    if (context) yield* flushContext(env, tx)
    if (waking) yield* ensureDriver(env)
  }
)

/**
 * `send` (R28): decodes the input and options, routes under the lock, then waits for the acceptance barrier (ADR
 * 0017): on a durable log the id is returned once its acceptance is on disk.
 */
export const send = Effect.fnUntraced(function*(
  env: Env,
  input: Message.UserMessageData,
  sendOptions: Message.SendOptions
) {
  const data = yield* Message.decodeUserMessageData(input)
  return yield* sendDecoded(env, data, yield* checkOptions(sendOptions))
})

/** A decoded send: routed under the lock, then the acceptance barrier (a memory log has none: no step for it). */
const sendDecoded = (env: Env, data: Message.UserMessageData, options: Message.SendOptions) => {
  const routed = locked(env, (tx) => sendLocked(env, tx, data, options))
  return env.log.durable ? Effect.zipLeft(routed, barrier(env)) : routed
}

/**
 * A preset (`followup`, `steer`, `inject`): `send` with a fixed target and wakeup, and an optional id. The send
 * options are built here from the preset and its decoded options, so they are not decoded again.
 */
export const preset = (env: Env, target: Message.SendTarget, wakeup: boolean) => {
  const plain: Message.SendOptions = { target, wakeup }
  return (input: Message.UserMessageData, options?: PresetOptions) =>
    options === undefined
      ? Effect.flatMap(Message.decodeUserMessageData(input), (data) => sendDecoded(env, data, plain))
      : presetWith(env, plain, input, options)
}

/** A preset with options: they are decoded, then the input. */
const presetWith = Effect.fnUntraced(function*(
  env: Env,
  plain: Message.SendOptions,
  input: Message.UserMessageData,
  options: PresetOptions
) {
  const checked = yield* checkPreset(options)
  const data = yield* Message.decodeUserMessageData(input)
  return yield* sendDecoded(env, data, checked?.id === undefined ? plain : { ...plain, id: checked.id })
})

/**
 * `batch`: every operation is decoded first, then all are applied in order under one lock. The acceptance barrier
 * covers what the batch applied, whether it then stopped or not (ADR 0017).
 */
export const batch = (env: Env, ops: ReadonlyArray<BatchOp>) =>
  Effect.flatMap(checkBatch(ops), (checked) => applyBatch(env, checked))

/** A copied batch, its operations decoded one by one (each message under its own limits), then applied. */
const applyBatch = Effect.fnUntraced(function*(env: Env, checked: ReadonlyArray<typeof BatchOperation.Type>) {
  const decoded: Array<DecodedOp> = []
  for (const [index, op] of checked.entries()) {
    if ("send" in op) {
      decoded.push({
        _tag: "send",
        data: yield* Effect.mapError(Message.decodeUserMessageData(op.send[0]), inOperation(index)),
        options: yield* Effect.mapError(checkOptions(op.send[1]), inOperation(index))
      })
    } else {
      decoded.push({
        _tag: "cancel",
        cause: op.cancel[0],
        keepInbox: op.cancel[1]?.keepInbox === true,
        ifTurn: op.cancel[1]?.ifTurn
      })
    }
  }
  const outcome = yield* Effect.either(locked(env, (tx) => batchLocked(env, tx, decoded)))
  yield* barrier(env)
  return yield* outcome
})

type DecodedOp =
  | { readonly _tag: "send"; readonly data: Message.UserMessageData; readonly options: Message.SendOptions }
  | {
    readonly _tag: "cancel"
    readonly cause: AgentEvent.CancelCause
    readonly keepInbox: boolean
    readonly ifTurn: number | undefined
  }

/** A decoded batch applied in order, in one transaction `tx`; it stops at the first send refused. */
const batchLocked = Effect.fnUntraced(
  function*(env: Env, tx: SessionLog.Transaction, decoded: ReadonlyArray<DecodedOp>) {
    // After disposal a batch of cancels only is a no-op, as a plain `cancel` is; one that sends fails.
    if (Lifecycle.isDisposed((yield* read(env)).lifecycle) && decoded.some((op) => op._tag === "send")) {
      return yield* disposedError()
    }
    const applied: Array<IdsT.AgentMessageId | undefined> = []
    for (const op of decoded) {
      if (op._tag === "cancel") {
        yield* cancelLocked(env, tx, op.cause, op.keepInbox, op.ifTurn)
        applied.push(undefined)
        continue
      }
      const result = yield* Effect.either(sendLocked(env, tx, op.data, op.options))
      if (result._tag === "Left") {
        if (
          result.left._tag === "AgentDisposedError" || result.left._tag === "TurnRunningError" ||
          result.left._tag === "InboxFullError"
        ) {
          return yield* result.left
        }
        return yield* new BatchError({
          applied,
          cause: result.left,
          message: `the batch stopped at operation ${applied.length + 1}: ${result.left.message}`
        })
      }
      applied.push(result.right)
    }
    return applied
  }
)

/**
 * `sendAll`: copied and checked to be pairs, then applied as a batch of sends (the copy is already the batch's: it is
 * not copied and decoded again as one); returns the ids.
 */
export const sendAll = (
  env: Env,
  items: ReadonlyArray<BatchSend>
) =>
  checkItems(items).pipe(
    Effect.flatMap((checked) => applyBatch(env, checked.map((send) => ({ send })))),
    Effect.map((ids) => ids.filter((id): id is IdsT.AgentMessageId => id !== undefined))
  )

/** `cancel`: decodes the cause and options, then cancels under the lock; returns at once. */
export const cancel = Effect.fnUntraced(function*(
  env: Env,
  cause: Operations.Cancel["cause"],
  options: Operations.Cancel["options"] | undefined
) {
  const checkedCause = yield* checkCause(cause)
  const checked = yield* checkCancelOptions(options)
  return yield* locked(env, (tx) => cancelLocked(env, tx, checkedCause, checked?.keepInbox === true, checked?.ifTurn))
})

/** `retry`: a turn over the current log without a new prompt; refused while busy or after disposal. */
export const retry = (env: Env) => locked(env, () => retryLocked(env))

const retryLocked = Effect.fnUntraced(function*(env: Env) {
  const { lifecycle } = yield* read(env)
  if (Lifecycle.isDisposed(lifecycle)) {
    return yield* new AgentDisposedError({ message: "the agent was disposed: it runs no more turns" })
  }
  if (Lifecycle.activity(lifecycle) !== undefined) {
    return yield* new AgentBusyError({ message: "cannot retry while an admission or a turn is active" })
  }
  yield* startActivity(env, { _tag: "retry" })
})

/** `compact`: a compaction turn over the current log; refused while busy or after disposal (like `retry`). */
export const compact = (env: Env, options: Operations.Compact["options"] | undefined) =>
  locked(env, () => compactLocked(env, options?.instruction))

const compactLocked = Effect.fnUntraced(function*(env: Env, instruction: string | undefined) {
  const { lifecycle } = yield* read(env)
  if (Lifecycle.isDisposed(lifecycle)) {
    return yield* new AgentDisposedError({ message: "the agent was disposed: it compacts no more" })
  }
  if (Lifecycle.activity(lifecycle) !== undefined) {
    return yield* new AgentBusyError({ message: "cannot compact while an admission or a turn is active" })
  }
  yield* startActivity(env, { _tag: "compaction", instruction })
})
