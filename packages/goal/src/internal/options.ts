/** The plugin's options, validated in `Goals.make` (`GOAL_INVALID_INPUT` naming the option), with defaults. */
import { Duration, Effect } from "effect"
import { GoalError } from "../GoalError.js"
import type * as Goals from "../Goals.js"
import { isCommandList, isPositiveInt, positiveDuration } from "./input.js"

export interface Settings {
  readonly defaultMaxGoalRounds: number
  readonly blockedAfterConsecutiveRounds: number
  readonly maxVerifierOutput: number
  readonly workspace: string
  readonly verifiers: NonNullable<Goals.Options["verifiers"]>
  readonly verifierCommands: ReadonlyArray<string>
  readonly verifierTimeout: Duration.Duration
}

const invalidOption = (message: string) => new GoalError({ code: "GOAL_INVALID_INPUT", message })

const verifierTimeout = (input: Duration.DurationInput | undefined) => {
  if (input === undefined) return Effect.succeed(Duration.minutes(10))
  const timeout = positiveDuration(input)
  return timeout !== undefined ? Effect.succeed(timeout) : Effect.fail(
    invalidOption(
      `Goals option verifierTimeout must be a positive, finite duration (such as "5 minutes"), got ${
        JSON.stringify(String(input))
      }`
    )
  )
}

export const settings = (options: Goals.Options | undefined): Effect.Effect<Settings, GoalError> =>
  Effect.gen(function*() {
    for (const name of ["defaultMaxGoalRounds", "blockedAfterConsecutiveRounds", "maxVerifierOutput"] as const) {
      const value = options?.[name]
      if (value !== undefined && !isPositiveInt(value)) {
        return yield* invalidOption(`Goals option ${name} must be a positive integer, got ${String(value)}`)
      }
    }
    const commands = options?.verifierCommands
    if (commands !== undefined && !isCommandList(commands)) {
      return yield* invalidOption("Goals option verifierCommands must list non-empty, trimmed command lines")
    }
    return {
      defaultMaxGoalRounds: options?.defaultMaxGoalRounds ?? 256,
      blockedAfterConsecutiveRounds: options?.blockedAfterConsecutiveRounds ?? 3,
      maxVerifierOutput: options?.maxVerifierOutput ?? 4000,
      workspace: options?.workspace ?? process.cwd(),
      verifiers: options?.verifiers ?? {},
      verifierCommands: commands ?? [],
      verifierTimeout: yield* verifierTimeout(options?.verifierTimeout)
    }
  })
