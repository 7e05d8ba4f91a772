/**
 * `/goal` in the chat: `set <objective>` (create, or edit the objective of the goal there is), `show`, `pause`,
 * `resume`, `clear`, and the goal package's own `create` / `edit`. Everything but `set` is `GoalCommand.run`.
 */
import type { Goals } from "@harness/goal"
import { GoalCommand, GoalError } from "@harness/goal"
import { Effect } from "effect"

/** The usage line `/goal` errors print. */
export const usage = "/goal set <objective> | /goal show | /goal pause | /goal resume | /goal clear"

/**
 * Runs the text after `/goal`. Contract: `set` creates a goal when there is none (or the last one is complete),
 * otherwise edits the objective of the current one (its phase is kept; `/goal resume` re-arms a paused goal);
 * an empty `set` fails naming the usage. Failures are the goal service's, with messages fit to print.
 */
export const command = (goals: Goals.Service, argument: string): Effect.Effect<string, Goals.Failure> =>
  Effect.gen(function*() {
    const text = argument.trim()
    const space = text.search(/\s/)
    const verb = (space === -1 ? text : text.slice(0, space)).toLowerCase()
    const rest = space === -1 ? "" : text.slice(space + 1).trim()
    if (verb !== "set") {
      return yield* GoalCommand.run(goals, text).pipe(
        Effect.catchTag(
          "GoalError",
          (e) =>
            e.code === "GOAL_INVALID_INPUT" && e.message.startsWith("unknown /goal command")
              ? Effect.fail(
                new GoalError.GoalError({ code: e.code, message: `unknown /goal command "${verb}": ${usage}` })
              )
              : Effect.fail(e)
        )
      )
    }
    if (rest === "") {
      return yield* new GoalError.GoalError({ code: "GOAL_INVALID_INPUT", message: `what is the objective? ${usage}` })
    }
    const view = yield* goals.get
    const goal = view.goal
    if (goal === undefined || goal.phase === "complete") return yield* GoalCommand.run(goals, `create ${rest}`)
    return yield* GoalCommand.run(goals, `edit ${rest}`)
  })
