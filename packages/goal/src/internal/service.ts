/**
 * The service: compare-and-set mutations under the mutation lock, each change checked with replay's own decode and
 * fold before it is injected (R120–R121).
 */
import { SessionLog } from "@harness/session"
import { Clock, Deferred, Effect, Either, PubSub, Random, Ref, Schema, Stream } from "effect"
import { GoalError } from "../GoalError.js"
import { applyChange, checkChange } from "../GoalReplay.js"
import type * as Goals from "../Goals.js"
import type { Goal, GoalChange, GoalRef, GoalState } from "../GoalState.js"
import { encodeChange, Goal as GoalSchema, refOf } from "../GoalState.js"
import { tokensUsed } from "./budget.js"
import { invalid, validInput, validReason, validTimeBudget } from "./input.js"
import { sync } from "./observer.js"
import type { Settings } from "./options.js"
import type { Core, State } from "./runtime.js"
import { changeMessage, requestDrive } from "./runtime.js"

const mintId: Effect.Effect<string> = Effect.map(
  Effect.all([Random.nextInt, Random.nextInt, Random.nextInt, Random.nextInt]),
  (words) => words.map((w) => (w >>> 0).toString(16).padStart(8, "0")).join("")
)

const sameGoal = Schema.equivalence(GoalSchema)

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
      const outcome = yield* SessionLog.holding(
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
      const checked = checkChange(encodeChange(change))
      if (Either.isLeft(checked)) {
        return yield* new GoalError({ code: "GOAL_INVALID_INPUT", message: checked.left.message })
      }
      const applied = applyChange(s.current, change)
      if (Either.isLeft(applied)) {
        return yield* new GoalError({ code: "GOAL_INVALID_TRANSITION", message: applied.left.message })
      }
      // Decided in the update that queues it: the observer (not under this lock) may log the last pending change
      // meanwhile, and a change queued behind nothing would never be injected.
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
      yield* PubSub.publish(rt.changes, { operation: change.operation, ref: refOf(change), goal: applied.right.goal })
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

export const makeService = (rt: Core, options: Settings): Goals.Service => {
  const get: Effect.Effect<Goals.View, Goals.Failure> = Effect.flatMap(Ref.get(rt.state), (s) =>
    s.corrupt !== undefined
      ? Effect.fail(s.corrupt)
      : Effect.succeed({ ...s.current, activation: s.activation }))
  const toGoal = (state: GoalState) => state.goal!
  const update = (...args: Parameters<typeof snapshot>) => Effect.map(mutate(rt, snapshot(...args)), toGoal)
  return {
    get,
    create: (input) =>
      Effect.gen(function*() {
        const id = yield* mintId
        const valid = yield* validInput(input, options.verifierCommands)
        if (valid.objective === undefined) {
          return yield* new GoalError({ code: "GOAL_INVALID_INPUT", message: "create needs an objective" })
        }
        const budget = yield* validTimeBudget(input.timeBudget)
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
          ? invalid("edit needs something to change: an objective, maxGoalRounds, maxTokens or a verifier")
          : update("edit", ref, (goal) => {
            const next = { ...goal, ...valid }
            return sameGoal(next, goal)
              ? invalid("edit changes nothing: the goal already has these values")
              : Either.right(next)
          }, "keep")),
    pause: (ref) => update("pause", ref, (goal) => Either.right({ ...goal, phase: "paused" }), "disarmed"),
    resume: (ref) =>
      update("resume", ref, ({ blockedReason: _, ...goal }) => Either.right({ ...goal, phase: "active" }), "armed"),
    complete: (ref) =>
      update(
        "complete",
        ref,
        ({ blockedReason: _, ...goal }) => Either.right({ ...goal, phase: "complete" }),
        "disarmed"
      ),
    block: (ref, reason) =>
      Effect.flatMap(
        validReason(reason),
        (blockedReason) =>
          update("block", ref, (goal) => Either.right({ ...goal, phase: "blocked", blockedReason }), "disarmed")
      ),
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
    // Not polling: the semaphore is not fair, and the driver waiting for the events permit could starve.
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
