/** What callers hand the service, checked with the goal schemas; every refusal is `GOAL_INVALID_INPUT`. */
import { Json } from "@harness/domain"
import { Duration, Either, ParseResult, Schema } from "effect"
import { GoalError } from "../GoalError.js"
import type * as Goals from "../Goals.js"
import type { BlockedReason, Goal } from "../GoalState.js"
import { BlockedReason as BlockedReasonSchema, Objective, Verifier } from "../GoalState.js"

const decodeObjective = Schema.decodeUnknownEither(Objective)
const decodeVerifier = Schema.decodeUnknownEither(Verifier, { onExcessProperty: "error" })

export const invalid = (message: string) => Either.left(new GoalError({ code: "GOAL_INVALID_INPUT", message }))

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

export const validReason = (reason: BlockedReason): Either.Either<BlockedReason, GoalError> =>
  Either.mapLeft(decodeBlockedReason(reason), (error) =>
    new GoalError({
      code: "GOAL_INVALID_INPUT",
      message: `invalid blocker: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
    }))

export const isPositiveInt = Schema.is(Json.PositiveInt)
export const isCommandList = Schema.is(Schema.Array(Verifier.members[0].fields.command))

/** `Duration.decode` would throw on bad input. */
export const positiveDuration = (input: Duration.DurationInput): Duration.Duration | undefined => {
  const duration = Duration.decodeUnknown(input)
  return duration._tag === "Some" && Duration.isFinite(duration.value) && Duration.toMillis(duration.value) > 0
    ? duration.value
    : undefined
}

export const validTimeBudget = (
  input: Duration.DurationInput | undefined
): Either.Either<number | undefined, GoalError> => {
  if (input === undefined) return Either.right(undefined)
  const duration = positiveDuration(input)
  return duration === undefined
    ? invalid("timeBudget must be a positive, finite duration")
    : Either.right(Duration.toMillis(duration))
}

const positive = (name: string, value: number | undefined): Either.Either<number | undefined, GoalError> =>
  value === undefined || isPositiveInt(value)
    ? Either.right(value)
    : invalid(`${name} must be a positive integer, got ${String(value)}`)

export const validInput = (
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
