/**
 * The goal vocabulary as Schemas: a goal, its phases and blocker, the durable change (a snapshot or a clear's
 * tombstone, R114), the folded state, and the canonical renderings the model sees (R113, R115). Everything read
 * back from a log is decoded with these schemas, strictly (no excess keys).
 *
 * @since 0.0.0
 */
import { Json } from "@harness/domain"
import { Schema } from "effect"

/**
 * The phases of a goal (R114).
 *
 * @public
 * @since 0.0.0
 * @category schemas
 */
export const GoalPhase = Schema.Literal("active", "paused", "blocked", "complete")
/**
 * @public
 * @since 0.0.0
 * @category models
 */
export type GoalPhase = typeof GoalPhase.Type

/** A goal id: a non-empty string. */
const GoalId = Schema.String.pipe(Schema.minLength(1, { message: () => "a goal id must be a non-empty string" }))

/**
 * An objective: normalised (no leading or trailing white space) and non-empty, at most 4 000 characters.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Objective = Schema.String.pipe(
  Schema.filter((s) =>
    s.length === 0
      ? "an objective must be non-empty"
      : s.trim() !== s
      ? "an objective must not start or end with white space"
      : s.length > 4000
      ? "an objective must be at most 4000 characters"
      : true
  )
)

/**
 * Why a goal is blocked: a lower-kebab-case `code` (`round-limit`, `usage-limited`, `token-budget`, `deadline`,
 * `model-reported`, …) and a readable message.
 *
 * @since 0.0.0
 * @category schemas
 */
export const BlockedReason = Schema.Struct({
  code: Schema.String.pipe(
    Schema.pattern(/^[a-z0-9]+(-[a-z0-9]+)*$/, { message: () => "a blocker code must be lower-kebab-case" })
  ),
  message: Schema.String
}).annotations({ identifier: "BlockedReason" })
/**
 * @since 0.0.0
 * @category models
 */
export type BlockedReason = typeof BlockedReason.Type

/**
 * The independent check of a goal: a shell command run in the workspace (exit code 0 passes), or an Effect the
 * embedding program registered under `name` (see `Goals.Options.verifiers`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const Verifier = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("command"), command: Schema.NonEmptyTrimmedString }),
  Schema.Struct({ kind: Schema.Literal("effect"), name: Schema.NonEmptyTrimmedString })
).annotations({ identifier: "Verifier" })
/**
 * @since 0.0.0
 * @category models
 */
export type Verifier = typeof Verifier.Type

/**
 * A goal. Beyond the round cap of R113–R128 it carries two optional budgets — `maxTokens` (summed from the usage of
 * its rounds in the log) and `deadline` (epoch milliseconds, compared with `Clock`) — and an optional `verifier`.
 * `blockedReason` is present exactly when `phase` is `blocked`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Goal = Schema.Struct({
  id: GoalId,
  revision: Json.PositiveInt,
  objective: Objective,
  phase: GoalPhase,
  maxGoalRounds: Json.PositiveInt,
  maxTokens: Schema.optionalWith(Json.PositiveInt, { exact: true }),
  deadline: Schema.optionalWith(Json.NonNegativeInt, { exact: true }),
  verifier: Schema.optionalWith(Verifier, { exact: true }),
  blockedReason: Schema.optionalWith(BlockedReason, { exact: true })
}).pipe(
  Schema.filter((goal) =>
    (goal.phase === "blocked") === (goal.blockedReason !== undefined) || {
      path: ["blockedReason"],
      message: "blockedReason must be present exactly when the phase is blocked"
    }
  ),
  Schema.annotations({ identifier: "Goal" })
)
/**
 * @since 0.0.0
 * @category models
 */
export type Goal = typeof Goal.Type

/**
 * The identity a compare-and-set names: a goal id and the revision the caller last saw.
 *
 * @since 0.0.0
 * @category schemas
 */
export const GoalRef = Schema.Struct({ id: GoalId, revision: Json.PositiveInt }).annotations({ identifier: "GoalRef" })
/**
 * @since 0.0.0
 * @category models
 */
export type GoalRef = typeof GoalRef.Type

/** The snapshot operations. */
const SnapshotOperation = Schema.Literal("create", "edit", "pause", "resume", "complete", "block")

/**
 * A snapshot change: the complete goal after the operation (R114).
 *
 * @since 0.0.0
 * @category schemas
 */
export const GoalSnapshot = Schema.Struct({
  kind: Schema.Literal("goal/change"),
  version: Schema.Literal(1),
  operation: SnapshotOperation,
  goal: Goal,
  roundsStarted: Json.NonNegativeInt,
  createdAt: Json.NonNegativeInt,
  updatedAt: Json.NonNegativeInt
}).pipe(
  Schema.filter((change) =>
    change.updatedAt >= change.createdAt || { path: ["updatedAt"], message: "updatedAt must not precede createdAt" }
  ),
  Schema.annotations({ identifier: "GoalSnapshot" })
)
/**
 * @since 0.0.0
 * @category models
 */
export type GoalSnapshot = typeof GoalSnapshot.Type

/** A clear's tombstone: which goal was cleared, at revision current+1 (R114). */
const GoalTombstone = Schema.Struct({
  kind: Schema.Literal("goal/change"),
  version: Schema.Literal(1),
  operation: Schema.Literal("clear"),
  cleared: GoalRef,
  clearedAt: Json.NonNegativeInt
}).annotations({ identifier: "GoalTombstone" })

/**
 * A goal state change, as carried by a round-zero goal source.
 *
 * @since 0.0.0
 * @category schemas
 */
export const GoalChange = Schema.Union(GoalSnapshot, GoalTombstone).annotations({ identifier: "GoalChange" })
/**
 * @since 0.0.0
 * @category models
 */
export type GoalChange = typeof GoalChange.Type

/**
 * Every operation, `clear` included.
 *
 * @since 0.0.0
 * @category models
 */
export type Operation = GoalChange["operation"]

/**
 * The folded state (R117): the current goal (absent before the first create and after a clear), its counters and
 * timestamps, the last ref a clear remembers, and every id this log has used (ids are never reused). Activation
 * is never part of it.
 *
 * @since 0.0.0
 * @category models
 */
export interface GoalState {
  readonly goal: Goal | undefined
  readonly roundsStarted: number
  readonly createdAt: number | undefined
  readonly updatedAt: number | undefined
  readonly lastRef: GoalRef | undefined
  readonly usedIds: ReadonlyArray<string>
}

/**
 * The state of a log without goals.
 *
 * @since 0.0.0
 * @category constants
 */
export const empty: GoalState = {
  goal: undefined,
  roundsStarted: 0,
  createdAt: undefined,
  updatedAt: undefined,
  lastRef: undefined,
  usedIds: []
}

/** The goal's keys in canonical order, absent optional keys left out. */
const canonicalGoal = (goal: Goal): Json.JsonObject => {
  const out: Record<string, Json.JsonValue> = {
    id: goal.id,
    revision: goal.revision,
    objective: goal.objective,
    phase: goal.phase,
    maxGoalRounds: goal.maxGoalRounds
  }
  if (goal.maxTokens !== undefined) out.maxTokens = goal.maxTokens
  if (goal.deadline !== undefined) out.deadline = goal.deadline
  if (goal.verifier !== undefined) {
    out.verifier = goal.verifier.kind === "command"
      ? { kind: "command", command: goal.verifier.command }
      : { kind: "effect", name: goal.verifier.name }
  }
  if (goal.blockedReason !== undefined) {
    out.blockedReason = { code: goal.blockedReason.code, message: goal.blockedReason.message }
  }
  return out
}

/**
 * The change as a JSON object in canonical key order: what a round-zero source carries as `change`. Written key by
 * key, since the order is the durable format; a property test holds it equal to the `GoalChange` schema's encoding.
 *
 * @since 0.0.0
 * @category utils
 */
export const encodeChange = (change: GoalChange): Json.JsonObject =>
  change.operation === "clear"
    ? {
      kind: "goal/change",
      version: 1,
      operation: "clear",
      cleared: { id: change.cleared.id, revision: change.cleared.revision },
      clearedAt: change.clearedAt
    }
    : {
      kind: "goal/change",
      version: 1,
      operation: change.operation,
      goal: canonicalGoal(change.goal),
      roundsStarted: change.roundsStarted,
      createdAt: change.createdAt,
      updatedAt: change.updatedAt
    }

/**
 * The canonical rendering of a change (R113): `<goal_state>{JSON}</goal_state>`, the JSON being
 * `{goal, roundsStarted, createdAt, updatedAt}` for a snapshot or `{cleared, clearedAt}` for a clear.
 *
 * @since 0.0.0
 * @category utils
 */
export const renderChange = (change: GoalChange): string => {
  const encoded = encodeChange(change)
  const body = change.operation === "clear"
    ? { cleared: encoded.cleared ?? null, clearedAt: change.clearedAt }
    : {
      goal: encoded.goal ?? null,
      roundsStarted: change.roundsStarted,
      createdAt: change.createdAt,
      updatedAt: change.updatedAt
    }
  return `<goal_state>${JSON.stringify(body)}</goal_state>`
}

/**
 * The canonical round prompt (R115): a `<goal_round>` block naming the objective JSON-quoted, `Round: n/max`, and
 * fixed instructions.
 *
 * @since 0.0.0
 * @category utils
 */
export const renderRound = (goal: Goal, round: number): string =>
  [
    "<goal_round>",
    `Objective: ${JSON.stringify(goal.objective)}`,
    `Round: ${round}/${goal.maxGoalRounds}`,
    "Keep working toward the objective. When it is fully achieved, call update_goal with action \"complete\";",
    "if you cannot make progress without help, call update_goal with action \"block\" and say why.",
    "</goal_round>"
  ].join("\n")

/**
 * The ref a change names: the goal's id and the change's revision.
 *
 * @since 0.0.0
 * @category utils
 */
export const refOf = (change: GoalChange): GoalRef =>
  change.operation === "clear" ? change.cleared : { id: change.goal.id, revision: change.goal.revision }
