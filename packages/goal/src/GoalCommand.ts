/**
 * The human `/goal` command (R128): the same service, called directly — no model turn. A CLI hands it the text
 * after `/goal` and prints the answer; expected failures are `GoalError`s it can print as command errors.
 *
 * @since 0.0.0
 */
import { Effect } from "effect"
import { GoalError } from "./GoalError.js"
import type { Failure, Service, View } from "./Goals.js"

/**
 * The command's usage line.
 *
 * @since 0.0.0
 * @category commands
 */
export const usage =
  "/goal [show] | /goal create <objective> | /goal edit <objective> | /goal pause | /goal resume | /goal clear"

/**
 * A one-paragraph rendering of the goal state, for people.
 *
 * @since 0.0.0
 * @category commands
 */
export const render = (view: View): string => {
  const goal = view.goal
  if (goal === undefined) return "No goal."
  const lines = [
    `Goal ${goal.id} (revision ${goal.revision}): ${goal.objective}`,
    `Phase: ${goal.phase}${
      goal.blockedReason === undefined ? "" : ` — ${goal.blockedReason.code}: ${goal.blockedReason.message}`
    }${goal.phase === "active" ? ` (${view.activation})` : ""}`,
    `Rounds: ${view.roundsStarted}/${goal.maxGoalRounds}`
  ]
  if (goal.maxTokens !== undefined) lines.push(`Token budget: ${goal.maxTokens}`)
  if (goal.deadline !== undefined) lines.push(`Deadline: ${new Date(goal.deadline).toISOString()}`)
  if (goal.verifier !== undefined) {
    lines.push(`Verifier: ${goal.verifier.kind === "command" ? `$ ${goal.verifier.command}` : goal.verifier.name}`)
  }
  return lines.join("\n")
}

/**
 * Runs one `/goal` command line (with or without the leading `/goal`).
 *
 * Contract: `create` refuses to replace an unfinished goal (`GOAL_ALREADY_EXISTS`); the other operations act on the
 * current goal at the revision `get` shows now; an unknown subcommand fails with `GOAL_INVALID_INPUT` and the usage.
 *
 * @since 0.0.0
 * @category commands
 */
export const run = (goals: Service, line: string): Effect.Effect<string, Failure> =>
  Effect.gen(function*() {
    const text = line.trim().replace(/^\/goal\b/, "").trim()
    const space = text.search(/\s/)
    const command = (space === -1 ? text : text.slice(0, space)).toLowerCase()
    const rest = space === -1 ? "" : text.slice(space + 1).trim()
    const current = Effect.flatMap(goals.get, (view) =>
      view.goal === undefined
        ? Effect.fail(new GoalError({ code: "GOAL_NOT_FOUND", message: "there is no goal: /goal create <objective>" }))
        : Effect.succeed({ id: view.goal.id, revision: view.goal.revision }))
    switch (command) {
      case "":
      case "show":
        return render(yield* goals.get)
      case "create": {
        const goal = yield* goals.create({ objective: rest })
        return `Created goal ${goal.id}: ${goal.objective}`
      }
      case "edit": {
        const goal = yield* goals.edit(yield* current, { objective: rest })
        return `Edited goal ${goal.id}: ${goal.objective}`
      }
      case "pause":
      case "resume": {
        const goal = yield* goals[command](yield* current)
        return `Goal ${goal.id} is ${goal.phase}.`
      }
      case "clear": {
        yield* goals.clear(yield* current)
        return "Goal cleared."
      }
      default:
        return yield* new GoalError({
          code: "GOAL_INVALID_INPUT",
          message: `unknown /goal command "${command}". Usage: ${usage}`
        })
    }
  })
