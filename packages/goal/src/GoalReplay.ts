/**
 * Replay, as pure functions: {@link decodeGoalEvent} reads one `user/message` (R116, R118) and {@link foldGoal}
 * folds a log into goal state (R117). Both fail loudly with a {@link GoalReplayError} that names the event's `seq`
 * and the rule it breaks: a log whose goal content and typed source disagree, or whose revisions or rounds do not
 * advance by exactly one, is never folded into a plausible-looking state.
 *
 * @since 0.0.0
 */
import type { SessionEvent } from "@harness/domain"
import { MessageSource } from "@harness/domain"
import { Either, ParseResult, Schema } from "effect"
import type { GoalChange, GoalState } from "./GoalState.js"
import { BlockedReason, empty, Goal, GoalChange as GoalChangeSchema, renderChange, renderRound } from "./GoalState.js"

/**
 * The rules a replay enforces.
 *
 * - `mismatched-source-attribution` (R116): goal-looking content without a goal source, or a change whose ref is
 *   not the source's `goalId`/`revision`.
 * - `invalid-source` (R116): a goal source with an empty id, a revision below 1 or a negative round.
 * - `lacks-change` / `invalid-change` (R116): a round-zero source without a change, or one that does not decode.
 * - `mismatched-content` (R116, R115): the content is not the canonical rendering of the change (or of the round).
 * - `invalid-create`, `reused-id`, `no-current-goal`, `revision-not-advanced`, `different-goal`,
 *   `changed-invariant`, `phase-rule` (R117): a change that does not follow from the current state.
 * - `round-out-of-order` (R117): a round that is not exactly the next one of the current active goal.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ReplayRule = Schema.Literal(
  "mismatched-source-attribution",
  "invalid-source",
  "lacks-change",
  "invalid-change",
  "mismatched-content",
  "invalid-create",
  "reused-id",
  "no-current-goal",
  "revision-not-advanced",
  "different-goal",
  "changed-invariant",
  "phase-rule",
  "round-out-of-order"
)
/**
 * @since 0.0.0
 * @category models
 */
export type ReplayRule = typeof ReplayRule.Type

/**
 * A log that cannot be folded: `seq` is the offending event, `rule` the rule it breaks.
 *
 * @since 0.0.0
 * @category errors
 */
export class GoalReplayError extends Schema.TaggedError<GoalReplayError>("@harness/goal/GoalReplayError")(
  "GoalReplayError",
  { seq: Schema.Number, rule: ReplayRule, message: Schema.String }
) {}

/**
 * What one `user/message` is to the goal system: a state change (round 0), a round (round ≥ 1), or nothing.
 *
 * @since 0.0.0
 * @category models
 */
export type GoalEvent =
  | { readonly _tag: "change"; readonly seq: number; readonly change: GoalChange }
  | {
    readonly _tag: "round"
    readonly seq: number
    readonly goalId: string
    readonly revision: number
    readonly round: number
    readonly text: string
  }

/**
 * A violation before it is pinned to an event.
 *
 * @since 0.0.0
 * @category models
 */
export interface Violation {
  readonly rule: ReplayRule
  readonly message: string
}

const violation = (rule: ReplayRule, message: string): Either.Either<never, Violation> => Either.left({ rule, message })

const decodeChange = Schema.decodeUnknownEither(GoalChangeSchema, { onExcessProperty: "error", errors: "all" })

/**
 * Decodes a change exactly as replay does (strictly: no excess keys, every error reported), or says why it is
 * invalid (`invalid-change`). The service checks every change it builds with this before anything is logged, so it
 * never writes a change its own replay would reject.
 *
 * @since 0.0.0
 * @category utils
 */
export const checkChange = (change: unknown): Either.Either<GoalChange, Violation> =>
  Either.mapLeft(decodeChange(change), (error) => ({
    rule: "invalid-change" as const,
    message: `the goal change has an invalid shape: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
  }))

/** The goal source's schema without its change, whose absence or shape replay reports as rules of their own. */
const decodeSourceFields = Schema.decodeUnknownEither(MessageSource.GoalSource.from.pipe(Schema.omit("change")))

const textOf = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string | undefined =>
  content.length === 1 && content[0]!.type === "text" ? content[0]!.text : undefined

/**
 * Decodes one `user/message` (R116, R118): discrimination is by `source.round`, never by event type.
 *
 * Contract: a non-goal source yields `undefined` unless its first block is text starting with `<goal_state>`
 * (`mismatched-source-attribution`); a goal source must have a non-empty id, revision ≥ 1 and round ≥ 0
 * (`invalid-source`); round 0 must carry a change that decodes strictly (`lacks-change`, `invalid-change`), names
 * the source's ref (`mismatched-source-attribution`) and whose canonical rendering is the content
 * (`mismatched-content`). A positive round is returned as a round (its content is checked by the fold, which
 * knows the objective).
 *
 * @since 0.0.0
 * @category utils
 */
export const decodeGoalEvent = (
  event: SessionEvent.SessionEventOf<"user/message">
): Either.Either<GoalEvent | undefined, GoalReplayError> =>
  Either.mapLeft(decodeViolation(event), (v) => new GoalReplayError({ seq: event.seq, ...v }))

const decodeViolation = (
  event: SessionEvent.SessionEventOf<"user/message">
): Either.Either<GoalEvent | undefined, Violation> => {
  const { content, source } = event.data
  if (source.kind !== "goal") {
    const first = content[0]
    return first !== undefined && first.type === "text" && first.text.startsWith("<goal_state>")
      ? violation(
        "mismatched-source-attribution",
        `goal state content with a "${source.kind}" source: only the goal system may write <goal_state>`
      )
      : Either.right(undefined)
  }
  const fields = decodeSourceFields(source)
  if (Either.isLeft(fields)) {
    return violation("invalid-source", `invalid goal source: ${ParseResult.TreeFormatter.formatErrorSync(fields.left)}`)
  }
  const text = textOf(content)
  if (source.round > 0) {
    if (source.change !== undefined) {
      return violation("invalid-source", `a goal round (round ${source.round}) must not carry a change`)
    }
    return text === undefined
      ? violation("mismatched-content", "a goal round's content must be one text block")
      : Either.right({
        _tag: "round",
        seq: event.seq,
        goalId: source.goalId,
        revision: source.revision,
        round: source.round,
        text
      })
  }
  if (source.change === undefined) {
    return violation("lacks-change", "a round-zero goal source lacks its source change data")
  }
  const decoded = checkChange(source.change)
  if (Either.isLeft(decoded)) return Either.left(decoded.left)
  const change = decoded.right
  const ref = change.operation === "clear" ? change.cleared : change.goal
  if (ref.id !== source.goalId || ref.revision !== source.revision) {
    return violation(
      "mismatched-source-attribution",
      `the change names ${ref.id}@${ref.revision} but its source says ${source.goalId}@${source.revision}`
    )
  }
  if (text !== renderChange(change)) {
    return violation(
      "mismatched-content",
      "mismatched model-visible content: the content is not the canonical rendering of the source's change"
    )
  }
  return Either.right({ _tag: "change", seq: event.seq, change })
}

const sameBlockedReason = Schema.equivalence(Schema.UndefinedOr(BlockedReason))

/** The objective and the budgets: what only `edit` (and `create`) may set. */
const sameTerms = Schema.equivalence(
  Goal.from.pipe(Schema.pick("objective", "maxGoalRounds", "maxTokens", "deadline", "verifier"))
)

/** Which phases each phase-changing operation goes from and to. */
const phaseMoves = {
  pause: { from: (phase: string) => phase === "active", to: "paused", says: "active → paused" },
  resume: { from: (phase: string) => phase !== "complete", to: "active", says: "active|paused|blocked → active" },
  complete: { from: (phase: string) => phase !== "complete", to: "complete", says: "to complete from any other phase" },
  block: { from: (phase: string) => phase === "active", to: "blocked", says: "active → blocked" }
} as const

const snapshotPhaseRule = (
  operation: Exclude<GoalChange["operation"], "clear" | "create">,
  from: GoalState["goal"] & object,
  to: GoalState["goal"] & object,
  roundsStarted: number
): Violation | undefined => {
  if (operation === "edit") {
    return to.phase !== from.phase || !sameBlockedReason(to.blockedReason, from.blockedReason)
      ? { rule: "phase-rule", message: "edit must keep the phase and the blocker" }
      : undefined
  }
  if (!sameTerms(to, from)) {
    return { rule: "phase-rule", message: `${operation} cannot change the objective or the budgets` }
  }
  const move = phaseMoves[operation]
  if (!move.from(from.phase) || to.phase !== move.to) {
    return { rule: "phase-rule", message: `${operation} goes ${move.says}, not ${from.phase} → ${to.phase}` }
  }
  return operation === "resume" && roundsStarted >= to.maxGoalRounds
    ? {
      rule: "phase-rule",
      message: `resume needs roundsStarted < maxGoalRounds (${roundsStarted}/${to.maxGoalRounds})`
    }
    : undefined
}

/**
 * Applies one change to a state (R117), or says which rule it breaks. The service validates every mutation with
 * this same function before injecting it, so a change it writes is one the fold accepts.
 *
 * @since 0.0.0
 * @category utils
 */
export const applyChange = (state: GoalState, change: GoalChange): Either.Either<GoalState, Violation> => {
  const current = state.goal
  if (change.operation === "create") {
    const goal = change.goal
    if (goal.revision !== 1 || goal.phase !== "active" || change.roundsStarted !== 0) {
      return violation("invalid-create", "create needs revision 1, phase active and roundsStarted 0")
    }
    if (current !== undefined && current.phase !== "complete") {
      return violation(
        "invalid-create",
        `create needs no current goal or a complete one (${current.id} is ${current.phase})`
      )
    }
    if (state.usedIds.includes(goal.id)) {
      return violation("reused-id", `goal id ${goal.id} was already used in this log (ids are never reused)`)
    }
    if (change.createdAt !== change.updatedAt) {
      return violation("changed-invariant", "a created goal has updatedAt = createdAt")
    }
    return Either.right({
      goal,
      roundsStarted: 0,
      createdAt: change.createdAt,
      updatedAt: change.updatedAt,
      lastRef: state.lastRef,
      usedIds: [...state.usedIds, goal.id]
    })
  }
  if (current === undefined) {
    return violation("no-current-goal", `${change.operation} needs a current goal`)
  }
  const ref = change.operation === "clear" ? change.cleared : change.goal
  if (ref.id !== current.id) {
    return violation("different-goal", `${change.operation} names goal ${ref.id}, the current goal is ${current.id}`)
  }
  if (ref.revision !== current.revision + 1) {
    return violation(
      "revision-not-advanced",
      `${change.operation} must advance the current goal by one revision (${current.revision} → ${
        current.revision + 1
      }), got ${ref.revision}`
    )
  }
  const updatedAt = state.updatedAt ?? 0
  if (change.operation === "clear") {
    if (change.clearedAt < updatedAt) {
      return violation("changed-invariant", `clearedAt ${change.clearedAt} precedes updatedAt ${updatedAt}`)
    }
    return Either.right({ ...empty, lastRef: change.cleared, usedIds: state.usedIds })
  }
  if (change.createdAt !== state.createdAt || change.roundsStarted !== state.roundsStarted) {
    return violation(
      "changed-invariant",
      `${change.operation} must keep createdAt and roundsStarted (${state.createdAt}/${state.roundsStarted}), got ${change.createdAt}/${change.roundsStarted}`
    )
  }
  if (change.updatedAt < updatedAt) {
    return violation("changed-invariant", `updatedAt went backwards (${updatedAt} → ${change.updatedAt})`)
  }
  const broken = snapshotPhaseRule(change.operation, current, change.goal, state.roundsStarted)
  if (broken !== undefined) return Either.left(broken)
  return Either.right({ ...state, goal: change.goal, updatedAt: change.updatedAt })
}

/**
 * Applies one round (R117): it must be exactly `roundsStarted + 1` of the current active goal's id and revision,
 * within `maxGoalRounds`, with the canonical round prompt as content.
 */
const applyRound = (
  state: GoalState,
  round: { readonly goalId: string; readonly revision: number; readonly round: number; readonly text: string }
): Either.Either<GoalState, Violation> => {
  const goal = state.goal
  if (goal === undefined || goal.phase !== "active") {
    return violation("round-out-of-order", `round ${round.round} of ${round.goalId} without a current active goal`)
  }
  if (goal.id !== round.goalId || goal.revision !== round.revision) {
    return violation(
      "round-out-of-order",
      `round ${round.round} names ${round.goalId}@${round.revision}, the current goal is ${goal.id}@${goal.revision}`
    )
  }
  if (round.round !== state.roundsStarted + 1 || round.round > goal.maxGoalRounds) {
    return violation(
      "round-out-of-order",
      `round ${round.round} is not the next round (${state.roundsStarted + 1} of at most ${goal.maxGoalRounds})`
    )
  }
  if (round.text !== renderRound(goal, round.round)) {
    return violation("mismatched-content", `round ${round.round}'s content is not the canonical round prompt`)
  }
  return Either.right({ ...state, roundsStarted: round.round })
}

/**
 * Folds one event into the state; events other than `user/message` (and non-goal messages) leave it unchanged.
 *
 * @since 0.0.0
 * @category utils
 */
export const stepGoal = (
  state: GoalState,
  event: SessionEvent.SessionEvent
): Either.Either<GoalState, GoalReplayError> => {
  if (event.type !== "user/message") return Either.right(state)
  return Either.flatMap(decodeGoalEvent(event), (decoded) => {
    if (decoded === undefined) return Either.right(state)
    const applied = decoded._tag === "change" ? applyChange(state, decoded.change) : applyRound(state, decoded)
    return Either.mapLeft(applied, (v) => new GoalReplayError({ seq: event.seq, ...v }))
  })
}

/**
 * Folds a log into goal state (R117), from {@link empty} or from a given state.
 *
 * Contract: every event is folded in order; the first event that breaks a rule fails the fold with its `seq` and
 * rule. The fold never contains activation (a replayed goal is disarmed until a human resumes it).
 *
 * @since 0.0.0
 * @category utils
 */
export const foldGoal = (
  events: Iterable<SessionEvent.SessionEvent>,
  from: GoalState = empty
): Either.Either<GoalState, GoalReplayError> => {
  let state = from
  for (const event of events) {
    const next = stepGoal(state, event)
    if (Either.isLeft(next)) return next
    state = next.right
  }
  return Either.right(state)
}
