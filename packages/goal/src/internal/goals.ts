/**
 * The goal plugin (R119–R126): `attach` starts the actors over one shared state (`runtime.ts`) — the observer, the
 * driver, the admission guard, the mutations and the tools. Each catches the observer up (`sync`) before it decides,
 * so "every event published before now has been handled" is exact.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { Agent as AgentNs } from "@harness/agent"
import { Agent, Hooks } from "@harness/agent"
import { Effect, Either, PubSub, Queue, Ref } from "effect"
import { GoalError } from "../GoalError.js"
import { foldGoal } from "../GoalReplay.js"
import type * as Goals from "../Goals.js"
import { empty } from "../GoalState.js"
import { guard } from "./admissionGuard.js"
import { roundBudget } from "./budget.js"
import { driverLoop } from "./driver.js"
import { sync } from "./observer.js"
import { settings as validSettings } from "./options.js"
import type { Action, Core, Runtime, State } from "./runtime.js"
import { makeService } from "./service.js"
import { makeTools } from "./tools.js"

export const make = (options?: Goals.Options): Effect.Effect<Goals.Plugin, GoalError, CommandExecutor> =>
  Effect.gen(function*() {
    const settings = yield* validSettings(options)
    const executor = yield* Effect.context<CommandExecutor>()
    const slot = yield* Ref.make<Runtime | undefined>(undefined)
    const attach = (agent: AgentNs.Service) =>
      Effect.gen(function*() {
        if ((yield* Ref.get(slot)) !== undefined) {
          return yield* new GoalError({
            code: "GOAL_AGENT_NOT_LIVE",
            message: "this goal plugin is already attached to an agent"
          })
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
        yield* Effect.forkScoped(Effect.forever(
          Effect.zipRight(Effect.zipRight(Queue.take(bell), Queue.takeAll(bell)), sync(rt))
        ))
        yield* Effect.forkScoped(driverLoop(rt))
        return rt.service
      })
    return {
      hooks: { promptSubmit: guard(slot), turnBudget: roundBudget(slot) },
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
