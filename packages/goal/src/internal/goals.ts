/**
 * The goal service and its round driver (R119–R126).
 *
 * Three actors share one `Ref<State>`:
 * - the *observer* folds every live agent event into the state, in order (the durable fold, reconciliation of
 *   pending changes, the attempt's progress, the race fences of R126). It never calls the agent: what a fence
 *   decides (pause a cancelled round, run a drive pass) becomes an action for the driver.
 * - the *driver* runs actions one at a time, outside any agent activity: drive passes (R123) and the mutations the
 *   outcome policy (R124) and the budgets decide.
 * - the *admission guard* (a `promptSubmit` hook, R125) runs in the agent's activity fiber. Before it decides, it
 *   catches the observer up (events are only taken from the subscription under the `events` permit, so "every
 *   event published before now has been handled" is exact), then checks the reservation under the mutation lock.
 *
 * The gate: between the guard allowing a round and the round's `user/message` being logged, a mutation would build
 * its change against a `roundsStarted` the log is about to contradict. The guard sets a gate; mutations wait on it;
 * the observer opens it when the round is logged or its admission was dropped (ADR 0014).
 */
import { Tool } from "@effect/ai"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { Agent as AgentNs } from "@harness/agent"
import { Agent, AgentTool, Hooks } from "@harness/agent"
import type { AgentEvent, Ids as IdsT, Message, SessionEvent, Turn } from "@harness/domain"
import { Ids, Json, Message as MessageSchema } from "@harness/domain"
import type { Context } from "effect"
import {
  Cause,
  Clock,
  Deferred,
  Duration,
  Effect,
  Either,
  ParseResult,
  PubSub,
  Queue,
  Random,
  Ref,
  Schema,
  Stream
} from "effect"
import { GoalError } from "../GoalError.js"
import { applyChange, checkChange, decodeGoalEvent, foldGoal, GoalReplayError, stepGoal } from "../GoalReplay.js"
import type * as Goals from "../Goals.js"
import type { BlockedReason, Goal, GoalChange, GoalRef, GoalState } from "../GoalState.js"
import {
  BlockedReason as BlockedReasonSchema,
  empty,
  encodeChange,
  Goal as GoalSchema,
  GoalChange as GoalChangeSchema,
  Objective,
  renderChange,
  renderRound,
  Verifier
} from "../GoalState.js"
import { exhausted, tokensUsed } from "./budget.js"
import * as VerifierRun from "./verifier.js"

interface Attempt {
  readonly goalId: string
  readonly revision: number
  readonly round: number
  readonly messageId: IdsT.AgentMessageId
  readonly text: string
  readonly phase: "queued" | "admitting" | "admitted"
  readonly turn: number | undefined
  readonly reason: Turn.TurnEndReason | undefined
  readonly stale: boolean
  readonly notDurable: boolean
}

interface State {
  /** The fold of what the log has shown. */
  readonly durable: GoalState
  /** What `get` shows: `durable` with the pending changes applied. */
  readonly current: GoalState
  /**
   * Accepted changes not yet seen in the log, in order. Only the head is ever handed to the agent (`injected`):
   * the next one is injected once the head is logged, because a staged change can stay staged (beside steering,
   * after an error turn) while a later idle injection would be appended at once, out of order.
   */
  readonly pending: ReadonlyArray<{ readonly change: GoalChange; readonly injected: boolean }>
  readonly activation: Goals.Activation
  readonly attempt: Attempt | undefined
  readonly competingQueued: boolean
  readonly corrupt: GoalReplayError | undefined
  readonly gate: Deferred.Deferred<void> | undefined
  readonly observedSeq: number
  /**
   * The id of the last `steering/message` logged: a drain publishes its `agent/inbox/dequeue` right after it, and
   * that dequeue is not a claim (retained steering is drained at the opening of the round's own turn, R45).
   */
  readonly lastSteering: string | undefined
  readonly busy: number
}

interface Runtime extends Core {
  readonly service: Goals.Service
}

/** Everything but the service (which is built over it). */
interface Core {
  readonly agent: AgentNs.Service
  readonly state: Ref.Ref<State>
  /**
   * Serialises mutations, and the guard's checks against them. This and `events` are only ever taken with
   * {@link holding} (uninterruptibly, the wait included): the guard takes them in the agent's activity fiber,
   * which a cancel interrupts, and a plain `withPermits` interrupted as the permit is handed over leaks it for good.
   */
  readonly lock: Effect.Semaphore
  /** Taken to take events from the subscription: whoever holds it handles them in order. */
  readonly events: Effect.Semaphore
  readonly subscription: Queue.Dequeue<AgentEvent.AgentEvent>
  readonly actions: Queue.Queue<Action>
  readonly driveRequested: Ref.Ref<boolean>
  readonly changes: PubSub.PubSub<Goals.Changed>
  /** Told each time the driver has finished an action (`settled` waits on it instead of polling). */
  readonly ran: PubSub.PubSub<void>
}

/**
 * Runs `effect` holding one permit of `semaphore` (the goal's own `lock` or `events`), released on every exit.
 * Uninterruptible, the wait for the permit included: `Semaphore.take` counts a permit as taken while the waiter is
 * still interruptible, so an interruption at that instant would leak it. A free permit is taken in one synchronous
 * step (`withPermitsIfAvailable`); only a held one is waited for with `take` (ADR 0041).
 */
const holding = <A, E, R>(semaphore: Effect.Semaphore, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptible(Effect.flatMap(
    semaphore.withPermitsIfAvailable(1)(effect),
    (held) =>
      held._tag === "Some" ? Effect.succeed(held.value) : Effect.zipRight(
        semaphore.take(1),
        Effect.matchCauseEffect(effect, {
          onFailure: (cause) => Effect.zipRight(semaphore.release(1), Effect.failCause(cause)),
          onSuccess: (a) => Effect.as(semaphore.release(1), a)
        })
      )
  ))

type Action =
  | { readonly _tag: "drive" }
  | { readonly _tag: "inject" }
  | { readonly _tag: "withdraw"; readonly messageId: IdsT.AgentMessageId }
  | { readonly _tag: "pause"; readonly ref: GoalRef }
  | { readonly _tag: "block"; readonly ref: GoalRef; readonly reason: BlockedReason }
  | { readonly _tag: "disarm" }

const notLive = (message: string) => new GoalError({ code: "GOAL_AGENT_NOT_LIVE", message })

const sameChange = Schema.equivalence(GoalChangeSchema)
const sameGoal = Schema.equivalence(GoalSchema)
const sameContent = Schema.equivalence(MessageSchema.AgentMessage.fields.content)

const mintId: Effect.Effect<string> = Effect.map(
  Effect.all([Random.nextInt, Random.nextInt, Random.nextInt, Random.nextInt]),
  (words) => words.map((w) => (w >>> 0).toString(16).padStart(8, "0")).join("")
)

const mintMessageId: Effect.Effect<IdsT.AgentMessageId> = Ids.randomUuid(Ids.AgentMessageId)

/** The round-zero message of a change (R113). */
const changeMessage = (change: GoalChange): Message.UserMessageData => {
  const ref = change.operation === "clear" ? change.cleared : change.goal
  return {
    content: [{ type: "text", text: renderChange(change) }],
    source: { kind: "goal", goalId: ref.id, revision: ref.revision, round: 0, change: encodeChange(change) }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The observer
// ---------------------------------------------------------------------------------------------------------------

/**
 * Queues an action for the driver; `busy` counts it until it has run (so `settled` never misses one). One
 * uninterruptible step: it also runs in the agent's activity fiber (the admission guard), which a cancel interrupts,
 * and an action counted but never queued would keep `settled` waiting for ever.
 */
const enqueue = (rt: Core, action: Action): Effect.Effect<void> =>
  Effect.uninterruptible(
    Effect.zipRight(Ref.update(rt.state, (s) => ({ ...s, busy: s.busy + 1 })), Queue.offer(rt.actions, action))
  )

const offer = (rt: Core, actions: ReadonlyArray<Action>) =>
  Effect.forEach(actions, (action) => action._tag === "drive" ? requestDrive(rt) : enqueue(rt, action), {
    discard: true
  })

const requestDrive = (rt: Core): Effect.Effect<void> =>
  Effect.uninterruptible(Effect.flatMap(
    Ref.getAndSet(rt.driveRequested, true),
    (already) => already ? Effect.void : enqueue(rt, { _tag: "drive" })
  ))

const armedActive = (s: State, goalId: string, revision: number): boolean => {
  const goal = s.current.goal
  return goal !== undefined && goal.id === goalId && goal.revision === revision && goal.phase === "active" &&
    s.activation === "armed"
}

/** The attempt's admission was dropped (a cancel between the guard and the prompt): forget it and open the gate. */
const dropAdmitting = (s: State): readonly [State, ReadonlyArray<Action>, Deferred.Deferred<void> | undefined] => {
  const attempt = s.attempt!
  const actions: Array<Action> = armedActive(s, attempt.goalId, attempt.revision)
    ? [{ _tag: "pause", ref: { id: attempt.goalId, revision: attempt.revision } }]
    : []
  return [{ ...s, attempt: undefined, gate: undefined }, actions, s.gate]
}

/** Handles one live event; returns the actions it decides. Runs holding the `events` permit. */
const handle = (rt: Core, event: AgentEvent.AgentEvent): Effect.Effect<void> =>
  Effect.gen(function*() {
    const [actions, open] = yield* Ref.modify(rt.state, (s) => {
      const [next, actions, open] = transition(s, event)
      return [[actions, open] as const, next]
    })
    if (open !== undefined) yield* Deferred.succeed(open, undefined)
    yield* offer(rt, actions)
  })

const transition = (
  s: State,
  event: AgentEvent.AgentEvent
): readonly [State, ReadonlyArray<Action>, Deferred.Deferred<void> | undefined] => {
  const attempt = s.attempt
  switch (event.type) {
    case "agent/status": {
      if (event.status !== "idle") return [s, [], undefined]
      const cleared = { ...s, competingQueued: false }
      if (attempt !== undefined && attempt.phase === "admitting") {
        const [next, actions, open] = dropAdmitting(cleared)
        return [next, [...actions, { _tag: "drive" }], open]
      }
      return [cleared, [{ _tag: "drive" }], undefined]
    }
    case "agent/inbox/enqueue": {
      if (attempt !== undefined && event.message.id === attempt.messageId) return [s, [], undefined]
      // Human (or any other) work goes first (R126): a still-queued round is withdrawn (see `withdrawRound`).
      const overtaken = attempt !== undefined && attempt.phase === "queued" && !attempt.stale
      return [
        { ...s, competingQueued: true, attempt: overtaken ? { ...attempt, stale: true } : attempt },
        overtaken ? [{ _tag: "withdraw", messageId: attempt.messageId }] : [],
        undefined
      ]
    }
    case "agent/inbox/dequeue": {
      if (
        attempt !== undefined && attempt.phase === "admitting" && event.message.id !== attempt.messageId &&
        event.message.id !== s.lastSteering
      ) {
        return dropAdmitting(s)
      }
      return [s, [], undefined]
    }
    case "agent/inbox/discard": {
      if (attempt !== undefined && event.messages.some((m) => m.id === attempt.messageId)) {
        // A withdraw the driver did not ask for: someone took the round back, so no new one starts by itself.
        const taken = event.reason === "withdraw" && !attempt.stale
        return [
          { ...s, attempt: undefined, activation: taken ? "disarmed" : s.activation },
          [{ _tag: "drive" }],
          undefined
        ]
      }
      return [s, [], undefined]
    }
    case "agent/cancel-requested": {
      const cleared = { ...s, competingQueued: false }
      const goal = s.current.goal
      if (goal === undefined || goal.phase !== "active" || s.activation !== "armed") return [cleared, [], undefined]
      if (attempt === undefined) return [{ ...cleared, activation: "disarmed" }, [], undefined]
      if (attempt.phase === "queued") {
        return [
          { ...cleared, attempt: undefined },
          armedActive(s, attempt.goalId, attempt.revision)
            ? [{ _tag: "pause", ref: { id: attempt.goalId, revision: attempt.revision } }]
            : [],
          undefined
        ]
      }
      // Admitting or admitted: the aborted turn (or the dropped admission) pauses it through the normal path.
      return [cleared, [], undefined]
    }
    case "agent/error": {
      if (attempt !== undefined && attempt.turn === event.turn && attempt.reason !== undefined) {
        return [{ ...s, attempt: { ...attempt, notDurable: true } }, [], undefined]
      }
      return [s, [], undefined]
    }
    case "session/event":
      return observe(s, event.event)
    default:
      return [s, [], undefined]
  }
}

/** A turn that ended in failure (which a `requestError` or error retry may continue), not by a cancel. */
const failedTurn = (reason: Turn.TurnEndReason): boolean => reason.kind === "error" || reason.kind === "request-error"

/** Folds one durable event (R121): reconciles pending changes, records rounds, follows the attempt's turn. */
const observe = (
  s: State,
  event: SessionEvent.SessionEvent
): readonly [State, ReadonlyArray<Action>, Deferred.Deferred<void> | undefined] => {
  if (event.seq <= s.observedSeq) return [s, [], undefined]
  const seen = { ...s, observedSeq: event.seq }
  if (s.corrupt !== undefined) return [seen, [], undefined]
  const attempt = s.attempt
  switch (event.type) {
    case "steering/message":
      return [{ ...seen, lastSteering: event.data.messageId }, [], undefined]
    case "turn/start": {
      const trigger = event.data.trigger
      if (attempt === undefined) return [seen, [], undefined]
      if (trigger.kind === "retry") {
        // A retry continues the round after a failed turn (an error or a failed model request): the retry's own end
        // settles the round, which still counts once.
        return attempt.reason !== undefined && failedTurn(attempt.reason)
          ? [{ ...seen, attempt: { ...attempt, turn: event.data.turn, reason: undefined } }, [], undefined]
          : [seen, [], undefined]
      }
      const source = trigger.source
      const ours = source.kind === "goal" && source.goalId === attempt.goalId && source.revision === attempt.revision &&
        source.round === attempt.round
      if (ours) return [{ ...seen, attempt: { ...attempt, turn: event.data.turn } }, [], undefined]
      return attempt.phase === "admitting" ? dropAdmitting(seen) : [seen, [], undefined]
    }
    case "turn/end":
      return attempt !== undefined && attempt.turn === event.data.turn
        ? [{ ...seen, attempt: { ...attempt, reason: event.data.reason } }, [], undefined]
        : [seen, [], undefined]
    case "user/message": {
      const folded = stepGoal(s.durable, event)
      if (Either.isLeft(folded)) return [{ ...seen, corrupt: folded.left }, [], s.gate]
      const decoded = Either.getOrUndefined(decodeGoalEvent(event))
      if (decoded === undefined) return [{ ...seen, durable: folded.right }, [], undefined]
      if (decoded._tag === "change") {
        const head = s.pending[0]
        if (head !== undefined && head.injected && sameChange(head.change, decoded.change)) {
          const pending = s.pending.slice(1)
          return [
            { ...seen, durable: folded.right, pending },
            pending.length > 0 ? [{ _tag: "inject" }] : [{ _tag: "drive" }],
            undefined
          ]
        }
        if (s.pending.length > 0) {
          return [
            {
              ...seen,
              corrupt: new GoalReplayError({
                seq: event.seq,
                rule: "revision-not-advanced",
                message:
                  "a logged goal change is not the next pending change: it must advance the current goal by one revision"
              })
            },
            [],
            s.gate
          ]
        }
        // A change this service did not make (another writer): it folded, so it is the new truth.
        return [{ ...seen, durable: folded.right, current: folded.right }, [{ _tag: "drive" }], undefined]
      }
      // A round: it is counted in the cache too (its goal is the cache's, the gate kept mutations out).
      const current = { ...s.current, roundsStarted: folded.right.roundsStarted }
      if (attempt !== undefined && event.data.messageId === attempt.messageId) {
        return [
          { ...seen, durable: folded.right, current, attempt: { ...attempt, phase: "admitted" }, gate: undefined },
          [],
          s.gate
        ]
      }
      return [{ ...seen, durable: folded.right, current }, [], undefined]
    }
    default:
      return [seen, [], undefined]
  }
}

/** Catches the observer up: handles every event published so far, in order (events taken are always handled). */
const sync = (rt: Core): Effect.Effect<void> =>
  holding(
    rt.events,
    Effect.flatMap(Queue.takeAll(rt.subscription), (events) => Effect.forEach(events, (e) => handle(rt, e)))
  ).pipe(Effect.asVoid)

// ---------------------------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------------------------

type Build = (
  current: GoalState,
  now: number
) => Either.Either<{ readonly change: GoalChange; readonly activation: Goals.Activation | "keep" }, GoalError>

const checkRef = (current: GoalState, ref: GoalRef): Either.Either<Goal, GoalError> => {
  const goal = current.goal
  if (goal === undefined || goal.id !== ref.id) {
    return Either.left(
      new GoalError({
        code: "GOAL_NOT_FOUND",
        message: goal === undefined ? "there is no current goal" : `goal ${ref.id} is not the current goal (${goal.id})`
      })
    )
  }
  if (goal.revision !== ref.revision) {
    return Either.left(
      new GoalError({
        code: "GOAL_STALE_REVISION",
        message: `goal ${goal.id} is at revision ${goal.revision}, not ${ref.revision}: read it again`
      })
    )
  }
  return Either.right(goal)
}

/** Runs `body` under the mutation lock once no round is between admission and its prompt (the gate). */
const underLock = <A, E>(rt: Core, body: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    while (true) {
      const outcome = yield* holding(
        rt.lock,
        Effect.gen(function*() {
          const gate = (yield* Ref.get(rt.state)).gate
          if (gate !== undefined) return { _tag: "wait" as const, gate }
          return { _tag: "done" as const, value: yield* Effect.either(body) }
        })
      )
      if (outcome._tag === "wait") {
        yield* sync(rt)
        yield* Deferred.await(outcome.gate)
        continue
      }
      return yield* outcome.value
    }
  })

const mutate = (rt: Core, build: Build): Effect.Effect<GoalState, Goals.Failure> =>
  underLock(
    rt,
    Effect.gen(function*() {
      const s = yield* Ref.get(rt.state)
      if (s.corrupt !== undefined) return yield* Effect.fail(s.corrupt)
      const now = Math.max(yield* Clock.currentTimeMillis, s.current.updatedAt ?? 0)
      const { activation, change } = yield* build(s.current, now)
      // The same strict decode replay runs, before anything is logged: a change the service writes always folds.
      const checked = checkChange(encodeChange(change))
      if (Either.isLeft(checked)) {
        return yield* new GoalError({ code: "GOAL_INVALID_INPUT", message: checked.left.message })
      }
      const applied = applyChange(s.current, change)
      if (Either.isLeft(applied)) {
        return yield* new GoalError({ code: "GOAL_INVALID_TRANSITION", message: applied.left.message })
      }
      // Injected now when nothing is pending; otherwise after the changes before it are logged (see `pending`).
      // Decided in the same update that queues it: the observer may log the last pending change meanwhile (it holds
      // the events permit, not this lock), and a change queued behind nothing would never be injected.
      const immediate = yield* Ref.modify(rt.state, (st): readonly [boolean, State] => {
        const alone = st.pending.length === 0
        return [alone, { ...st, pending: [...st.pending, { change, injected: alone }] }]
      })
      if (immediate) {
        yield* rt.agent.inject(changeMessage(change)).pipe(
          Effect.tapError(() =>
            Ref.update(rt.state, (st) => ({ ...st, pending: st.pending.filter((p) => p.change !== change) }))
          ),
          Effect.mapError((error) =>
            new GoalError({
              code: "GOAL_INJECT_FAILED",
              message: `the goal change could not be injected: ${error.message}`
            })
          )
        )
      }
      yield* Ref.update(rt.state, (st) => ({
        ...st,
        current: applied.right,
        activation: activation === "keep" ? st.activation : activation
      }))
      const ref = change.operation === "clear" ? change.cleared : change.goal
      yield* PubSub.publish(rt.changes, { operation: change.operation, ref, goal: applied.right.goal })
      yield* requestDrive(rt)
      return applied.right
    })
  )

const snapshot = (
  operation: "edit" | "pause" | "resume" | "complete" | "block",
  ref: GoalRef,
  update: (goal: Goal) => Either.Either<Goal, GoalError>,
  activation: Goals.Activation | "keep"
): Build =>
(current, now) =>
  Either.flatMap(checkRef(current, ref), (goal) =>
    Either.map(update(goal), (next) => ({
      activation,
      change: {
        kind: "goal/change",
        version: 1,
        operation,
        goal: { ...next, revision: goal.revision + 1 },
        roundsStarted: current.roundsStarted,
        createdAt: current.createdAt ?? now,
        updatedAt: now
      }
    })))

const decodeObjective = Schema.decodeUnknownEither(Objective)
const decodeVerifier = Schema.decodeUnknownEither(Verifier, { onExcessProperty: "error" })

const invalid = (message: string) => Either.left(new GoalError({ code: "GOAL_INVALID_INPUT", message }))

/** A blocker given to `block`: replay's schema, and a message that is not blank and has no surrounding white space. */
const decodeBlockedReason = Schema.decodeUnknownEither(
  Schema.Struct({
    code: BlockedReasonSchema.fields.code,
    message: Schema.String.pipe(
      Schema.filter((m) =>
        m.trim().length === 0
          ? "a blocker message must not be blank"
          : m.trim() !== m
          ? "a blocker message must not start or end with white space"
          : true
      )
    )
  }),
  { onExcessProperty: "error" }
)

const validReason = (reason: BlockedReason): Either.Either<BlockedReason, GoalError> =>
  Either.mapLeft(decodeBlockedReason(reason), (error) =>
    new GoalError({
      code: "GOAL_INVALID_INPUT",
      message: `invalid blocker: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
    }))

const isPositiveInt = Schema.is(Json.PositiveInt)
const isCommandList = Schema.is(Schema.Array(Verifier.members[0].fields.command))

/** A positive, finite duration, or `undefined` for anything else (`Duration.decode` would throw on bad input). */
const positiveDuration = (input: Duration.DurationInput): Duration.Duration | undefined => {
  const duration = Duration.decodeUnknown(input)
  return duration._tag === "Some" && Duration.isFinite(duration.value) && Duration.toMillis(duration.value) > 0
    ? duration.value
    : undefined
}

const positive = (name: string, value: number | undefined): Either.Either<number | undefined, GoalError> =>
  value === undefined || isPositiveInt(value)
    ? Either.right(value)
    : invalid(`${name} must be a positive integer, got ${String(value)}`)

const validInput = (
  input: Goals.EditInput,
  verifierCommands: ReadonlyArray<string>
): Either.Either<Partial<Pick<Goal, "objective" | "maxGoalRounds" | "maxTokens" | "verifier">>, GoalError> =>
  Either.gen(function*() {
    const out: {
      objective?: string
      maxGoalRounds?: number
      maxTokens?: number
      verifier?: NonNullable<Goal["verifier"]>
    } = {}
    if (input.objective !== undefined) {
      const objective = decodeObjective(input.objective.trim())
      if (Either.isLeft(objective)) return yield* invalid(`invalid objective: ${objective.left.message}`)
      out.objective = objective.right
    }
    const rounds = yield* positive("maxGoalRounds", input.maxGoalRounds)
    if (rounds !== undefined) out.maxGoalRounds = rounds
    const tokens = yield* positive("maxTokens", input.maxTokens)
    if (tokens !== undefined) out.maxTokens = tokens
    if (input.verifier !== undefined) {
      const verifier = decodeVerifier(input.verifier)
      if (Either.isLeft(verifier)) return yield* invalid(`invalid verifier: ${verifier.left.message}`)
      if (verifier.right.kind === "command" && !verifierCommands.includes(verifier.right.command)) {
        return yield* invalid(
          `the verifier command ${
            JSON.stringify(verifier.right.command)
          } is not one the operator allowed: list it in the Goals option verifierCommands`
        )
      }
      out.verifier = verifier.right
    }
    return out
  })

const makeService = (
  rt: Core,
  options: { readonly defaultMaxGoalRounds: number; readonly verifierCommands: ReadonlyArray<string> }
): Goals.Service => {
  const get: Effect.Effect<Goals.View, Goals.Failure> = Effect.flatMap(Ref.get(rt.state), (s) =>
    s.corrupt !== undefined
      ? Effect.fail(s.corrupt)
      : Effect.succeed({ ...s.current, activation: s.activation }))
  const toGoal = (state: GoalState) => state.goal!
  return {
    get,
    create: (input) =>
      Effect.gen(function*() {
        const id = yield* mintId
        const valid = yield* validInput(input, options.verifierCommands)
        if (valid.objective === undefined) {
          return yield* new GoalError({ code: "GOAL_INVALID_INPUT", message: "create needs an objective" })
        }
        const duration = input.timeBudget === undefined ? undefined : positiveDuration(input.timeBudget)
        if (input.timeBudget !== undefined && duration === undefined) {
          return yield* new GoalError({
            code: "GOAL_INVALID_INPUT",
            message: "timeBudget must be a positive, finite duration"
          })
        }
        const budget = duration === undefined ? undefined : Duration.toMillis(duration)
        const state = yield* mutate(rt, (current, now) => {
          const goal = current.goal
          if (goal !== undefined && goal.phase !== "complete") {
            return Either.left(
              new GoalError({
                code: "GOAL_ALREADY_EXISTS",
                message: `goal ${goal.id} is ${goal.phase}: complete or clear it before creating another`
              })
            )
          }
          const created: Goal = {
            id,
            revision: 1,
            objective: valid.objective!,
            phase: "active",
            maxGoalRounds: valid.maxGoalRounds ?? options.defaultMaxGoalRounds,
            ...(valid.maxTokens === undefined ? {} : { maxTokens: valid.maxTokens }),
            ...(budget === undefined ? {} : { deadline: now + Math.ceil(budget) }),
            ...(valid.verifier === undefined ? {} : { verifier: valid.verifier })
          }
          return Either.right({
            activation: "armed",
            change: {
              kind: "goal/change",
              version: 1,
              operation: "create",
              goal: created,
              roundsStarted: 0,
              createdAt: now,
              updatedAt: now
            }
          })
        })
        return toGoal(state)
      }),
    edit: (ref, input) =>
      Effect.flatMap(validInput(input, options.verifierCommands), (valid) =>
        Object.keys(valid).length === 0
          ? Effect.fail(
            new GoalError({
              code: "GOAL_INVALID_INPUT",
              message: "edit needs something to change: an objective, maxGoalRounds, maxTokens or a verifier"
            })
          )
          : Effect.map(
            mutate(
              rt,
              snapshot("edit", ref, (goal) => {
                const next = { ...goal, ...valid }
                return sameGoal(next, goal)
                  ? invalid("edit changes nothing: the goal already has these values")
                  : Either.right(next)
              }, "keep")
            ),
            toGoal
          )),
    pause: (ref) =>
      Effect.map(
        mutate(rt, snapshot("pause", ref, (goal) => Either.right({ ...goal, phase: "paused" }), "disarmed")),
        toGoal
      ),
    resume: (ref) =>
      Effect.map(
        mutate(
          rt,
          snapshot(
            "resume",
            ref,
            ({ blockedReason: _, ...goal }) => Either.right({ ...goal, phase: "active" }),
            "armed"
          )
        ),
        toGoal
      ),
    complete: (ref) =>
      Effect.map(
        mutate(
          rt,
          snapshot(
            "complete",
            ref,
            ({ blockedReason: _, ...goal }) => Either.right({ ...goal, phase: "complete" }),
            "disarmed"
          )
        ),
        toGoal
      ),
    block: (ref, reason) =>
      Effect.flatMap(validReason(reason), (blockedReason) =>
        Effect.map(
          mutate(
            rt,
            snapshot("block", ref, (goal) => Either.right({ ...goal, phase: "blocked", blockedReason }), "disarmed")
          ),
          toGoal
        )),
    clear: (ref) =>
      Effect.asVoid(mutate(rt, (current, now) =>
        Either.map(checkRef(current, ref), (goal) => ({
          activation: "disarmed" as const,
          change: {
            kind: "goal/change" as const,
            version: 1 as const,
            operation: "clear" as const,
            cleared: { id: goal.id, revision: goal.revision + 1 },
            clearedAt: now
          }
        })))),
    disarm: Ref.update(rt.state, (s): State => ({ ...s, activation: "disarmed" })),
    tokensUsed: Effect.gen(function*() {
      const goal = (yield* Ref.get(rt.state)).current.goal
      return goal === undefined ? 0 : tokensUsed(yield* rt.agent.log, goal.id)
    }),
    subscribe: PubSub.subscribe(rt.changes),
    changes: Stream.fromPubSub(rt.changes),
    // Waits for the driver's next action to finish rather than polling: a polling loop takes the events permit
    // again and again, and the semaphore is not fair — the driver, waiting for the same permit, could starve.
    settled: Effect.scoped(Effect.gen(function*() {
      const ran = yield* PubSub.subscribe(rt.ran)
      while (true) {
        yield* rt.agent.whenIdle
        yield* sync(rt)
        if ((yield* Ref.get(rt.state)).busy > 0) yield* ran.take
        else if ((yield* rt.agent.status) === "idle") return
      }
    }))
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------------------------

type Outcome =
  | { readonly _tag: "continue" }
  | { readonly _tag: "pause" }
  | { readonly _tag: "disarm" }
  | { readonly _tag: "block"; readonly reason: BlockedReason }

/** R124: what a round's end means for its goal. No abnormal outcome retries automatically. */
export const classify = (reason: Turn.TurnEndReason): Outcome => {
  switch (reason.kind) {
    case "completed":
      return { _tag: "continue" }
    case "aborted":
      return { _tag: "pause" }
    case "max-tokens":
      return { _tag: "block", reason: { code: "max-tokens", message: "The round hit the output token limit." } }
    case "disposed":
    case "interrupted":
      return { _tag: "disarm" }
    case "request-error":
    case "error": {
      const code = reason.kind === "request-error" ? reason.failure.code : reason.code
      const message = reason.kind === "request-error" ? reason.failure.message : reason.message
      return code === "RATE_LIMIT" || code === "QUOTA"
        ? { _tag: "block", reason: { code: "usage-limited", message } }
        : { _tag: "block", reason: { code: "turn-error", message } }
    }
  }
}

const ignoreGoalError = <A>(effect: Effect.Effect<A, Goals.Failure>): Effect.Effect<void> =>
  Effect.catchAll(Effect.asVoid(effect), (error) => Effect.logDebug("goal action skipped", error))

const drivePass = (rt: Runtime): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* Ref.set(rt.driveRequested, false)
    yield* sync(rt)
    const s = yield* Ref.get(rt.state)
    if (s.corrupt !== undefined) return
    if ((yield* rt.agent.status) !== "idle" || s.competingQueued) return
    const attempt = s.attempt
    if (attempt !== undefined) {
      if (attempt.reason === undefined) return
      yield* Ref.update(rt.state, (st) => ({ ...st, attempt: undefined }))
      const ref = { id: attempt.goalId, revision: attempt.revision }
      if (attempt.notDurable) {
        yield* rt.service.disarm
      } else if (!attempt.stale && armedActive(s, attempt.goalId, attempt.revision)) {
        const outcome = classify(attempt.reason)
        if (outcome._tag === "pause") yield* ignoreGoalError(rt.service.pause(ref))
        else if (outcome._tag === "disarm") yield* rt.service.disarm
        else if (outcome._tag === "block") yield* ignoreGoalError(rt.service.block(ref, outcome.reason))
      } else if (attempt.reason.kind !== "completed" && !failedTurn(attempt.reason)) {
        // A cancelled round of a superseded revision: the pause has nothing to apply to, but the human's cancel still
        // stops the driver.
        yield* rt.service.disarm
      }
      return yield* requestDrive(rt)
    }
    const goal = s.current.goal
    if (goal === undefined || goal.phase !== "active" || s.activation !== "armed") return
    // A round is reserved only over a logged state: changes still pending would land after its prompt.
    if (s.pending.length > 0) return
    const tokens = tokensUsed(yield* rt.agent.log, goal.id)
    const reason = exhausted(goal, s.current.roundsStarted, tokens, yield* Clock.currentTimeMillis)
    if (reason !== undefined) {
      return yield* ignoreGoalError(rt.service.block({ id: goal.id, revision: goal.revision }, reason))
    }
    const round = s.current.roundsStarted + 1
    const messageId = yield* mintMessageId
    const text = renderRound(goal, round)
    yield* Ref.update(rt.state, (st): State => ({
      ...st,
      attempt: {
        goalId: goal.id,
        revision: goal.revision,
        round,
        messageId,
        text,
        phase: "queued",
        turn: undefined,
        reason: undefined,
        stale: false,
        notDurable: false
      }
    }))
    const queued = yield* Effect.either(rt.agent.followup(
      { content: [{ type: "text", text }], source: { kind: "goal", goalId: goal.id, revision: goal.revision, round } },
      { id: messageId }
    ))
    if (Either.isLeft(queued)) {
      yield* Ref.update(rt.state, (st) => ({ ...st, attempt: undefined }))
      const now = yield* Ref.get(rt.state)
      if (armedActive(now, goal.id, goal.revision)) {
        yield* ignoreGoalError(
          rt.service.block({ id: goal.id, revision: goal.revision }, {
            code: "queue-failed",
            message: `the goal round could not be queued: ${queued.left.message}`
          })
        )
      }
    }
  })

/**
 * Withdraws a round that human work overtook (R126), so the human's turn runs first and the round is reserved
 * again afterwards (R123). The observer has already marked the reservation stale.
 *
 * Contract: `agent.withdraw` decides under the agent's acceptance lock, so exactly one of two things happened:
 * - `Withdrawn`: the round was still pending; `agent/inbox/discard { reason: "withdraw" }` balances its enqueue,
 *   and the observer, seeing that discard, forgets the attempt and asks for a drive pass (which waits for idle).
 * - `NotPending`: the agent had already claimed it. If its prompt is not logged yet the admission guard blocks it
 *   (the reservation is stale: nothing is written) and asks for a new pass; if it was admitted before the human
 *   work arrived, it runs and its outcome is accounted like any round's (R124).
 */
const withdrawRound = (rt: Core, messageId: IdsT.AgentMessageId): Effect.Effect<void> =>
  rt.agent.withdraw(messageId).pipe(
    Effect.flatMap((result) =>
      result._tag === "Withdrawn"
        ? Effect.void
        : Effect.logDebug("goal round already claimed: the admission guard decides it", result.id)
    ),
    Effect.catchAll((error) => Effect.logError("goal round could not be withdrawn", error))
  )

/**
 * Hands the next deferred change to the agent. If the agent refuses it (it was disposed, or the log failed), the
 * changes that were never logged are dropped and the cache falls back to the fold of the log.
 */
const injectNext = (rt: Core): Effect.Effect<void> =>
  Effect.gen(function*() {
    const head = yield* Ref.modify(rt.state, (s) => {
      const first = s.pending[0]
      if (first === undefined || first.injected) return [undefined, s]
      return [first.change, { ...s, pending: [{ change: first.change, injected: true }, ...s.pending.slice(1)] }]
    })
    if (head === undefined) return
    const injected = yield* Effect.either(rt.agent.inject(changeMessage(head)))
    if (Either.isLeft(injected)) {
      yield* Effect.logError(
        "a deferred goal change could not be injected; unlogged changes are dropped",
        injected.left
      )
      yield* Ref.update(rt.state, (s) => ({ ...s, pending: [], current: s.durable, activation: "disarmed" as const }))
    }
  })

const runAction = (rt: Runtime, action: Action): Effect.Effect<void> => {
  switch (action._tag) {
    case "drive":
      return drivePass(rt)
    case "inject":
      return injectNext(rt)
    case "withdraw":
      return withdrawRound(rt, action.messageId)
    case "pause":
      return ignoreGoalError(rt.service.pause(action.ref))
    case "block":
      return ignoreGoalError(rt.service.block(action.ref, action.reason))
    case "disarm":
      return rt.service.disarm
  }
}

const driverLoop = (rt: Runtime): Effect.Effect<never> =>
  Effect.forever(
    Effect.gen(function*() {
      const action = yield* Queue.take(rt.actions)
      yield* runAction(rt, action).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError("goal driver action failed", cause)
        ),
        Effect.ensuring(
          Effect.zipRight(Ref.update(rt.state, (s) => ({ ...s, busy: s.busy - 1 })), PubSub.publish(rt.ran, undefined))
        )
      )
    })
  )

// ---------------------------------------------------------------------------------------------------------------
// The admission guard (R125)
// ---------------------------------------------------------------------------------------------------------------

const reservationValid = (s: State, message: Message.AgentMessage): boolean => {
  const attempt = s.attempt
  const source = message.source
  if (attempt === undefined || source.kind !== "goal") return false
  const text = message.content.length === 1 ? message.content[0]!.text : undefined
  return s.pending.length === 0 && attempt.phase === "queued" && !attempt.stale && attempt.messageId === message.id &&
    attempt.text === text &&
    source.goalId === attempt.goalId && source.revision === attempt.revision && source.round === attempt.round &&
    source.change === undefined && armedActive(s, attempt.goalId, attempt.revision) &&
    attempt.round === s.current.roundsStarted + 1
}

const STALE = "stale goal-round reservation"

const guard = (
  slot: Ref.Ref<Runtime | undefined>
): NonNullable<Hooks.Hooks<never>["promptSubmit"]> =>
(input, next) =>
  Effect.gen(function*() {
    if (input.message.source.kind !== "goal") return yield* next
    const rt = yield* Ref.get(slot)
    if (rt === undefined || rt.agent !== input.agent) {
      return { kind: "block", reason: "goal-sourced prompts run only through the goal driver" } as const
    }
    const message = input.message
    /** The state without this message's attempt. */
    const forget = (s: State): State =>
      s.attempt !== undefined && s.attempt.messageId === message.id ? { ...s, attempt: undefined } : s
    // The guard runs in the agent's activity fiber, which a cancel interrupts: each piece of bookkeeping below is
    // one uninterruptible step, so a cancel never leaves the attempt forgotten with no drive requested.
    const abandon = Effect.uninterruptible(Effect.zipRight(Ref.update(rt.state, forget), requestDrive(rt)))
    const reject = Effect.as(abandon, { kind: "block", reason: STALE } as const)
    const check = holding(
      rt.lock,
      Effect.zipRight(sync(rt), Effect.map(Ref.get(rt.state), (s) => reservationValid(s, message)))
    )
    if (!(yield* check)) return yield* reject
    const decision = yield* next.pipe(
      Effect.tapErrorCause(() => abandon)
    )
    const rewritten = decision.kind === "allow" && decision.content !== undefined &&
      !sameContent(decision.content, message.content)
    if (decision.kind === "block" || rewritten) {
      const reason = decision.kind === "block" ? decision.reason : "a goal round's prompt cannot be rewritten"
      // Forgetting the attempt and queueing its block are one step (a cancel between them would lose the block).
      return yield* Effect.uninterruptible(Effect.gen(function*() {
        const s = yield* Ref.getAndUpdate(rt.state, forget)
        const attempt = s.attempt
        if (
          attempt !== undefined && attempt.messageId === message.id && armedActive(s, attempt.goalId, attempt.revision)
        ) {
          yield* enqueue(rt, {
            _tag: "block",
            ref: { id: attempt.goalId, revision: attempt.revision },
            reason: { code: "prompt-rejected", message: reason }
          })
        }
        return { kind: "block", reason } as const
      }))
    }
    // After `next`: still valid? Then the gate closes until the round's prompt is logged (or dropped).
    const admitted = yield* holding(
      rt.lock,
      Effect.gen(function*() {
        yield* sync(rt)
        const gate = yield* Deferred.make<void>()
        return yield* Ref.modify(rt.state, (s) =>
          reservationValid(s, message)
            ? [true, { ...s, gate, attempt: { ...s.attempt!, phase: "admitting" as const } }]
            : [false, s])
      })
    )
    if (!admitted) {
      return yield* reject
    }
    return decision
  })

// ---------------------------------------------------------------------------------------------------------------
// Tools (R127)
// ---------------------------------------------------------------------------------------------------------------

const ToolFailure = Schema.Struct({ code: Schema.String, message: Schema.String })

/** A goal tool's definition: text out, failures as codes. */
const definition = <const Parameters extends Schema.Struct.Fields>(
  name: string,
  description: string,
  parameters: Parameters
) => Tool.make(name, { description, parameters, success: Schema.String, failure: ToolFailure })

type GoalToolDefinition<Parameters extends Schema.Struct.Fields> = ReturnType<typeof definition<Parameters>>

const describe = (view: Goals.View, tokens: number): string =>
  JSON.stringify({
    goal: view.goal ?? null,
    roundsStarted: view.roundsStarted,
    activation: view.activation,
    tokensUsed: tokens
  })

interface Authority {
  readonly human: boolean
  readonly round: boolean
  readonly rt: Runtime
}

const openTurnMessages = (log: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const out: Array<SessionEvent.SessionEventOf<"user/message"> | SessionEvent.SessionEventOf<"steering/message">> = []
  for (let i = log.length - 1; i >= 0; i--) {
    const event = log[i]!
    if (event.type === "turn/end") return undefined
    if (event.type === "user/message" || event.type === "steering/message") out.push(event)
    if (event.type === "turn/start") return out
  }
  return undefined
}

/** The model reads a failure's message: it starts with the code. */
const coded = <A, R>(
  effect: Effect.Effect<A, { readonly code: string; readonly message: string }, R>
): Effect.Effect<A, { readonly code: string; readonly message: string }, R> =>
  Effect.mapError(effect, (f) => ({ code: f.code, message: `${f.code}: ${f.message}` }))

const toFailure = (error: Goals.Failure) =>
  error._tag === "GoalError"
    ? { code: error.code, message: error.message }
    : { code: "GOAL_REPLAY", message: `${error.message} (seq ${error.seq}, rule ${error.rule})` }

const makeTools = (
  slot: Ref.Ref<Runtime | undefined>,
  options: {
    readonly blockedAfterConsecutiveRounds: number
    readonly maxVerifierOutput: number
    readonly workspace: string
    readonly verifiers: NonNullable<Goals.Options["verifiers"]>
    readonly verifierCommands: ReadonlyArray<string>
    readonly verifierTimeout: Duration.Duration
  },
  executor: Context.Context<CommandExecutor>
): ReadonlyArray<AgentTool.AgentTool<never>> => {
  const authority = (agent: AgentNs.Service) =>
    Effect.gen(function*() {
      const rt = yield* Ref.get(slot)
      if (rt === undefined || rt.agent !== agent || (yield* agent.status) !== "running") {
        return yield* Effect.fail({
          code: "GOAL_TOOL_DRIVER_REQUIRED",
          message: "goal tools work only inside a turn of the agent the goal service is attached to"
        })
      }
      const messages = openTurnMessages(yield* agent.log)
      if (messages === undefined) {
        return yield* Effect.fail({ code: "GOAL_TOOL_DRIVER_REQUIRED", message: "goal tools need an open turn" })
      }
      yield* sync(rt)
      const s = yield* Ref.get(rt.state)
      const goal = s.current.goal
      const human = messages.some((m) => m.data.source.kind === "user")
      const round = goal !== undefined && messages.some((m) =>
        m.type === "user/message" && m.data.source.kind === "goal" && m.data.source.goalId === goal.id &&
        m.data.source.revision === goal.revision && m.data.source.round > 0 &&
        m.data.source.round === s.current.roundsStarted
      )
      return { human, round, rt } satisfies Authority
    })
  const needHuman = (a: Authority, what: string) =>
    a.human ? Effect.void : Effect.fail({
      code: "GOAL_TOOL_AUTHORITY",
      message: `only a turn a human prompted may ${what} a goal`
    })

  /**
   * A goal tool: text out, failures as codes (`ToolFailure`), its handler run with the calling turn's authority
   * (which it fails without: see `authority`).
   */
  const goalTool = <const Parameters extends Schema.Struct.Fields>(
    name: string,
    description: string,
    parameters: Parameters,
    run: (
      params: Tool.Parameters<GoalToolDefinition<Parameters>>,
      authority: Authority,
      context: AgentTool.Context
    ) => Effect.Effect<string | AgentTool.Outcome<string>, { readonly code: string; readonly message: string }>
  ) =>
    AgentTool.make(definition(name, description, parameters), {
      handler: (params, context) => coded(Effect.flatMap(authority(context.agent), (a) => run(params, a, context))),
      // A goal tool's mutation is in-process and brief: a cancel lets it finish, so its change and its result agree
      // (interrupted half-way, the change reached the log while the service kept the old goal, R121).
      onCancel: "finish"
    })

  const getGoal = goalTool(
    "get_goal",
    "Shows the current goal: objective, phase, rounds started, budgets.",
    {},
    (_, { rt }) =>
      Effect.gen(function*() {
        const view = yield* Effect.mapError(rt.service.get, toFailure)
        return describe(view, yield* rt.service.tokensUsed)
      })
  )

  const createGoal = goalTool(
    "create_goal",
    "Creates a long-running goal the agent keeps working toward over rounds. Only when the user asks.",
    { objective: Schema.String, maxRounds: Schema.optional(Schema.Int) },
    (params, a) =>
      Effect.gen(function*() {
        yield* needHuman(a, "create")
        const goal = yield* Effect.mapError(
          a.rt.service.create({ objective: params.objective, maxGoalRounds: params.maxRounds }),
          toFailure
        )
        return `created goal ${goal.id}: ${JSON.stringify(goal.objective)}`
      })
  )

  const updateGoal = goalTool(
    "update_goal",
    "Updates the current goal. In a goal round: \"complete\" when the objective is achieved (an independent check may run), \"block\" with a reason when you cannot proceed. Edit, pause and resume only when the user asks.",
    {
      action: Schema.Literal("complete", "block", "pause", "resume", "edit"),
      objective: Schema.optional(Schema.String),
      reason: Schema.optional(Schema.String)
    },
    (params, a, context) =>
      Effect.gen(function*() {
        const s = yield* Ref.get(a.rt.state)
        const goal = s.current.goal
        if (goal === undefined) {
          return yield* Effect.fail({ code: "GOAL_NOT_FOUND", message: "there is no current goal" })
        }
        const ref = { id: goal.id, revision: goal.revision }
        const service = a.rt.service
        const conclude = a.round && !a.human
        switch (params.action) {
          case "edit": {
            yield* needHuman(a, "edit")
            const edited = yield* Effect.mapError(service.edit(ref, { objective: params.objective }), toFailure)
            return `goal ${edited.id} edited`
          }
          case "pause":
            yield* needHuman(a, "pause")
            yield* Effect.mapError(service.pause(ref), toFailure)
            return `goal ${goal.id} paused`
          case "resume":
            yield* needHuman(a, "resume")
            yield* Effect.mapError(service.resume(ref), toFailure)
            return `goal ${goal.id} resumed`
          case "block": {
            if (!a.human && !a.round) {
              return yield* Effect.fail({
                code: "GOAL_TOOL_AUTHORITY",
                message: "only a human turn or a goal round may block the goal"
              })
            }
            if (!a.human && s.current.roundsStarted < options.blockedAfterConsecutiveRounds) {
              return yield* Effect.fail({
                code: "GOAL_TOOL_BLOCK_THRESHOLD",
                message:
                  `a goal round may block only after ${options.blockedAfterConsecutiveRounds} rounds; keep trying`
              })
            }
            const message = (params.reason ?? "").trim() || "the model reported that it cannot proceed"
            yield* Effect.mapError(service.block(ref, { code: "model-reported", message }), toFailure)
            return AgentTool.outcome(`goal ${goal.id} blocked: ${message}`, { concludeTurn: conclude })
          }
          case "complete": {
            if (!a.human && !a.round) {
              return yield* Effect.fail({
                code: "GOAL_TOOL_AUTHORITY",
                message: "only a human turn or a goal round may complete the goal"
              })
            }
            if (goal.verifier === undefined) {
              yield* Effect.mapError(service.complete(ref), toFailure)
              return AgentTool.outcome(`goal ${goal.id} complete`, { concludeTurn: conclude })
            }
            const result = yield* VerifierRun.run(goal.verifier, goal, options).pipe(Effect.provide(executor))
            const summary = VerifierRun.truncate(result.output, options.maxVerifierOutput)
            const verdict = result.passed ? "passed" : "failed"
            // The verdict and its output summary are model-visible context, in the log (R113's channel).
            yield* context.agent.inject({
              content: [{
                type: "text",
                text: `<goal_verification goal=${
                  JSON.stringify(goal.id)
                } verdict="${verdict}">\n${summary}\n</goal_verification>`
              }],
              source: { kind: "plugin", plugin: "goal-verifier" }
            }).pipe(Effect.mapError((e) => ({ code: "GOAL_INJECT_FAILED", message: e.message })))
            if (!result.passed) {
              return AgentTool.outcome(
                `the verifier rejected completion; the goal stays active. Its output:\n${summary}`,
                { concludeTurn: conclude }
              )
            }
            yield* Effect.mapError(service.complete(ref), toFailure)
            return AgentTool.outcome(`verified: goal ${goal.id} complete`, { concludeTurn: conclude })
          }
        }
      })
  )
  return [getGoal, createGoal, updateGoal]
}

// ---------------------------------------------------------------------------------------------------------------
// make / attach
// ---------------------------------------------------------------------------------------------------------------

/** The time a verifier may take when `verifierTimeout` is not given. */
export const DEFAULT_VERIFIER_TIMEOUT = Duration.minutes(10)

const invalidOption = (message: string) => new GoalError({ code: "GOAL_INVALID_INPUT", message })

/** Validates the numeric and duration options (`GOAL_INVALID_INPUT` naming the option). */
const validOptions = (options: Goals.Options | undefined) =>
  Effect.gen(function*() {
    for (
      const name of ["defaultMaxGoalRounds", "blockedAfterConsecutiveRounds", "maxVerifierOutput"] as const
    ) {
      const value = options?.[name]
      if (value !== undefined && !isPositiveInt(value)) {
        return yield* invalidOption(`Goals option ${name} must be a positive integer, got ${String(value)}`)
      }
    }
    const commands = options?.verifierCommands
    if (commands !== undefined && !isCommandList(commands)) {
      return yield* invalidOption("Goals option verifierCommands must list non-empty, trimmed command lines")
    }
    const input = options?.verifierTimeout
    if (input === undefined) return DEFAULT_VERIFIER_TIMEOUT
    const timeout = positiveDuration(input)
    if (timeout === undefined) {
      return yield* invalidOption(
        `Goals option verifierTimeout must be a positive, finite duration (such as "5 minutes"), got ${
          JSON.stringify(String(input))
        }`
      )
    }
    return timeout
  })

export const make = (options?: Goals.Options): Effect.Effect<Goals.Plugin, GoalError, CommandExecutor> =>
  Effect.gen(function*() {
    const verifierTimeout = yield* validOptions(options)
    const executor = yield* Effect.context<CommandExecutor>()
    const slot = yield* Ref.make<Runtime | undefined>(undefined)
    const settings = {
      defaultMaxGoalRounds: options?.defaultMaxGoalRounds ?? 256,
      blockedAfterConsecutiveRounds: options?.blockedAfterConsecutiveRounds ?? 3,
      maxVerifierOutput: options?.maxVerifierOutput ?? 4000,
      workspace: options?.workspace ?? process.cwd(),
      verifiers: options?.verifiers ?? {},
      verifierCommands: options?.verifierCommands ?? [],
      verifierTimeout
    }
    const attach = (agent: AgentNs.Service) =>
      Effect.gen(function*() {
        if ((yield* Ref.get(slot)) !== undefined) {
          return yield* notLive("this goal plugin is already attached to an agent")
        }
        // Subscribe first, then read the log: every later event reaches the observer, earlier ones the fold.
        const subscription = yield* agent.subscribe
        const bell = yield* agent.subscribe
        const log = yield* agent.log
        const folded = foldGoal(log)
        const base = Either.getOrElse(folded, () => empty)
        const state = yield* Ref.make<State>({
          durable: base,
          current: base,
          pending: [],
          activation: "disarmed",
          attempt: undefined,
          competingQueued: false,
          corrupt: Either.isLeft(folded) ? folded.left : undefined,
          gate: undefined,
          observedSeq: log.length === 0 ? -1 : log[log.length - 1]!.seq,
          lastSteering: undefined,
          busy: 0
        })
        const core: Core = {
          agent,
          state,
          lock: yield* Effect.makeSemaphore(1),
          events: yield* Effect.makeSemaphore(1),
          subscription,
          actions: yield* Queue.unbounded<Action>(),
          driveRequested: yield* Ref.make(false),
          changes: yield* PubSub.unbounded<Goals.Changed>(),
          ran: yield* PubSub.unbounded<void>()
        }
        const rt: Runtime = { ...core, service: makeService(core, settings) }
        yield* Ref.set(slot, rt)
        yield* Effect.addFinalizer(() => Ref.set(slot, undefined))
        // The observer: the bell says "there are events"; they are taken from `subscription` under the permit.
        yield* Effect.forkScoped(Effect.forever(
          Effect.zipRight(Effect.zipRight(Queue.take(bell), Queue.takeAll(bell)), sync(rt))
        ))
        yield* Effect.forkScoped(driverLoop(rt))
        return rt.service
      })
    return {
      hooks: { promptSubmit: guard(slot) },
      tools: makeTools(slot, settings, executor),
      attach
    }
  })

export const makeAgent = <R = never>(agentOptions?: AgentNs.Options<R>, options?: Goals.Options) =>
  Effect.gen(function*() {
    const plugin = yield* make(options)
    const hooks = agentOptions?.hooks === undefined
      ? plugin.hooks
      : Hooks.compose<R>(plugin.hooks, agentOptions.hooks)
    const agent = yield* Agent.make<R>({
      ...agentOptions,
      hooks,
      tools: [...plugin.tools, ...(agentOptions?.tools ?? [])]
    })
    const goals = yield* plugin.attach(agent)
    return { agent, goals }
  })
