/**
 * The goal tools (R127), with the authority of the turn that calls them: a human turn may create, edit, pause and
 * resume; a goal round may complete (after the verifier) or block, which concludes the round.
 */
import { Tool } from "@effect/ai"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { Agent as AgentNs } from "@harness/agent"
import { AgentTool } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import type { Context } from "effect"
import { Effect, Ref, Schema } from "effect"
import type * as Goals from "../Goals.js"
import { sync } from "./observer.js"
import type { Settings } from "./options.js"
import type { Runtime } from "./runtime.js"
import * as VerifierRun from "./verifier.js"

const ToolFailure = Schema.Struct({ code: Schema.String, message: Schema.String })

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

export const makeTools = (
  slot: Ref.Ref<Runtime | undefined>,
  options: Settings,
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
  const needHumanOrRound = (a: Authority, what: string) =>
    a.human || a.round ? Effect.void : Effect.fail({
      code: "GOAL_TOOL_AUTHORITY",
      message: `only a human turn or a goal round may ${what} the goal`
    })

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
      // A cancel lets the brief, in-process mutation finish, so its change and its result agree (R121).
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
            yield* needHumanOrRound(a, "block")
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
            yield* needHumanOrRound(a, "complete")
            if (goal.verifier === undefined) {
              yield* Effect.mapError(service.complete(ref), toFailure)
              return AgentTool.outcome(`goal ${goal.id} complete`, { concludeTurn: conclude })
            }
            const result = yield* VerifierRun.run(goal.verifier, goal, options).pipe(Effect.provide(executor))
            const summary = VerifierRun.truncate(result.output, options.maxVerifierOutput)
            const verdict = result.passed ? "passed" : "failed"
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
