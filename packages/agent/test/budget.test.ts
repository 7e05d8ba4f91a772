/**
 * Budgets (docs/CONTRACT.md §18, R154–R163, ADR 0053): a model that keeps calling tools is stopped by the step cap;
 * token and cost budgets stop a turn within one step of their limit; the deadline interrupts a running step on the
 * `TestClock`; the model is warned one step before a hard stop; a session budget counts what the log already holds,
 * across a close and reopen on a real SQLite file. Every log stays well-formed.
 */
import { LanguageModel, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool, Budget, Hooks } from "@harness/agent"
import { Ids, type SessionEvent, type Turn } from "@harness/domain"
import { LogCheck, SessionLog } from "@harness/session"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit, Fiber, Schema, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assertWellFormed, isDurable, noop, prompt, setup } from "./fixtures.js"

/** A reply that calls `noop` and reports `usage`. */
const looping = (usage?: SessionEvent.Usage): S.Reply => ({
  ...S.toolCallResponse(S.toolCall("noop")),
  ...(usage === undefined ? {} : { usage })
})

/** A model that always calls a tool: `n` such replies. */
const loop = (n: number, usage?: SessionEvent.Usage) => Array.from({ length: n }, () => looping(usage))

const turnEnds = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<Turn.TurnEndReason> =>
  log.flatMap((e) => (e.type === "turn/end" ? [e.data.reason] : []))

const steps = (log: ReadonlyArray<SessionEvent.SessionEvent>, turn: number) =>
  log.filter((e) => e.type === "step/start" && e.data.turn === turn).length

const warnings = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.flatMap((e) =>
    e.type === "user/message" && e.data.source.kind === "plugin" && e.data.source.plugin === "budget" ? [e.seq] : []
  )

/** Runs one prompt to its end and returns the log. */
const oneTurn = (agent: Agent.Service) =>
  Effect.gen(function*() {
    yield* agent.followup(prompt("go"))
    yield* agent.whenIdle
    const log = yield* agent.log
    assertWellFormed(log)
    return log
  })

describe("budgets", () => {
  it.scoped("R154: a model that always calls a tool is stopped at the default cap of 50 steps, end reason budget", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup({ tools: [noop] })
      const log = yield* oneTurn(agent)
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "steps",
        scope: "turn",
        step: 50,
        limit: 50,
        used: 50
      }])
      assert.strictEqual(steps(log, 1), 50)
      assert.strictEqual(yield* model.requestCount, 50)
      // Every call of the last step was answered by its handler, not by a synthetic result.
      const results = log.filter((e) => e.type === "tool/result")
      assert.strictEqual(results.length, 50)
      assert.isTrue(results.every((e) => e.type === "tool/result" && e.data.isError === false))
      // It settles as `completed` (like `max-tokens`, R58), with no `agent/error`.
      const events = yield* rec.events
      assert.deepStrictEqual(events.filter((e) => e.type === "agent/error"), [])
      const settled = events.find((e) => e.type === "agent/settled")
      assert.deepStrictEqual(settled?.type === "agent/settled" ? settled.reason : undefined, { kind: "completed" })
    }).pipe(Effect.provide(S.layer(loop(60)))))

  it.scoped("R154: maxSteps can be raised and lowered", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup({ tools: [noop], budget: { maxSteps: 3, warn: false } })
      const log = yield* oneTurn(agent)
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "steps",
        scope: "turn",
        step: 3,
        limit: 3,
        used: 3
      }])
      assert.deepStrictEqual(warnings(log), [])
    }).pipe(Effect.provide(S.layer(loop(10)))))

  it.scoped("R155: a turn's token budget stops it within one step of the limit", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup({ tools: [noop], budget: { maxTurnTokens: 1000 } })
      const log = yield* oneTurn(agent)
      // 300 tokens a step: 900 after step 3 is under the budget, 1200 after step 4 reaches it.
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "tokens",
        scope: "turn",
        step: 4,
        limit: 1000,
        used: 1200
      }])
      assert.strictEqual(yield* model.requestCount, 4)
    }).pipe(Effect.provide(S.layer(loop(10, { inputTokens: 250, outputTokens: 50 })))))

  it.scoped("R156: the session's cost budget, priced per model, stops the turn within one step of the limit", () =>
    Effect.gen(function*() {
      const prices = { m: { inputPerMillion: 2, outputPerMillion: 10 } }
      const { agent } = yield* setup({ tools: [noop], budget: { maxSessionCost: 1, prices } })
      const log = yield* oneTurn(agent)
      // 100 000 in at 2 and 10 000 out at 10 per million: 0.3 a step; 0.9 after step 3, 1.2 after step 4.
      const [end] = turnEnds(log)
      assert.strictEqual(end?.kind, "budget")
      if (end?.kind !== "budget") return
      assert.deepStrictEqual([end.budget, end.scope, end.step, end.limit], ["cost", "session", 4, 1])
      assert.closeTo(end.used, 1.2, 1e-9)
      assert.closeTo(Budget.usedBy(log, prices).cost, 1.2, 1e-9)
    }).pipe(Effect.provide(S.layer(loop(10, { inputTokens: 100_000, outputTokens: 10_000 })))))

  it.scoped("R156: a cost budget without a price for the agent's model is refused at creation", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Agent.make({
          model: "m",
          budget: { maxSessionCost: 1, prices: { other: { inputPerMillion: 1, outputPerMillion: 1 } } }
        })
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "needs a price for the model \"m\"")
      const zero = yield* Effect.exit(Agent.make({ model: "m", budget: { maxSteps: 0 } }))
      assert.isTrue(Exit.isFailure(zero))
      if (Exit.isFailure(zero)) assert.include(String(zero.cause), "budget.maxSteps must be a positive integer")
    }).pipe(Effect.provide(S.layer([]))))

  it.scoped("R158: the turn's deadline interrupts the running step on the TestClock; its calls are answered", () =>
    Effect.gen(function*() {
      const sleep = AgentTool.make(
        Tool.make("sleep", { parameters: { ms: Schema.Number }, success: Schema.String }),
        { handler: ({ ms }) => Effect.as(Effect.sleep(ms), "slept"), parallel: true }
      )
      const { agent, rec } = yield* setup({ tools: [sleep], budget: { turnTimeout: "25 seconds" } })
      yield* agent.followup(prompt("go"))
      // Each step's tool sleeps 10 s: steps 1 and 2 end at 20 s, step 3's call is cut at 25 s.
      yield* rec.waitFor(isDurable("step/start"))
      const idle = yield* Effect.fork(agent.whenIdle)
      for (let i = 0; i < 6; i++) yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(idle)
      const log = yield* agent.log
      assertWellFormed(log)
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "deadline",
        scope: "turn",
        step: 3,
        limit: 25_000,
        used: 25_000
      }])
      const last = log.filter((e) => e.type === "tool/result").at(-1)
      assert.strictEqual(last?.type === "tool/result" ? last.data.error?.code : undefined, "ABORTED")
      assert.deepStrictEqual((yield* rec.events).filter((e) => e.type === "agent/error"), [])
    }).pipe(
      Effect.provide(S.layer(Array.from({ length: 10 }, () => S.toolCallResponse(S.toolCall("sleep", { ms: 10_000 })))))
    ))

  it.scoped("R159: the model is warned one step before the step cap, and the warning is in its last request", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup({ tools: [noop], budget: { maxSteps: 3 } })
      const log = yield* oneTurn(agent)
      const [warning] = warnings(log)
      assert.isDefined(warning)
      // Logged after step 2 closed, before step 3 opened.
      const stepStarts = log.filter((e) => e.type === "step/start").map((e) => e.seq)
      const stepEnds = log.filter((e) => e.type === "step/end").map((e) => e.seq)
      assert.isTrue(warning! > stepEnds[1]! && warning! < stepStarts[2]!)
      assert.strictEqual(warnings(log).length, 1)
      const requests = yield* model.requests
      const text = JSON.stringify(requests[2]?.prompt.content.at(-1))
      assert.include(text, "your next step is the last one")
      assert.notInclude(JSON.stringify(requests[1]?.prompt), "your next step is the last one")
    }).pipe(Effect.provide(S.layer(loop(10)))))

  it.scoped("R159: no warning before the first step: a cap of one step runs that step unwarned", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup({ tools: [noop], budget: { maxSteps: 1 } })
      const log = yield* oneTurn(agent)
      assert.deepStrictEqual(warnings(log), [])
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "steps",
        scope: "turn",
        step: 1,
        limit: 1,
        used: 1
      }])
    }).pipe(Effect.provide(S.layer(loop(3)))))

  it.scoped("R159: a token budget warns when one more step like the last would reach it", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup({ tools: [noop], budget: { maxTurnTokens: 1000 } })
      const log = yield* oneTurn(agent)
      // 300 a step: after step 3 (900), a fourth would reach 1000: warned before step 4, stopped after it.
      const [warning] = warnings(log)
      const step4 = log.find((e) => e.type === "step/start" && e.data.step === 4)
      const step3End = log.find((e) => e.type === "step/end" && e.data.step === 3)
      assert.isTrue(warning! > step3End!.seq && warning! < step4!.seq)
    }).pipe(Effect.provide(S.layer(loop(10, { inputTokens: 250, outputTokens: 50 })))))

  it.live("R157: a session's token total survives a close and reopen on a SQLite file", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "harness-budget-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const store = SqliteStore.layer({ filename: path.join(dir, "sessions.db") })
      const id = Ids.SessionId.make("budgeted")
      const budget = { maxSessionTokens: 1000 }
      const run = (session: SessionLog.Service, replies: ReadonlyArray<S.Reply>) =>
        Effect.gen(function*() {
          const [model] = yield* S.make(replies)
          const agent = yield* Agent.make({ model: "m", session, tools: [noop], budget }).pipe(
            Effect.provideService(LanguageModel.LanguageModel, model)
          )
          return yield* oneTurn(agent)
        })
      const usage = { inputTokens: 250, outputTokens: 50 }
      // The first process: two steps of 300 tokens, then a reply: 900 tokens, under the budget.
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* run(yield* SessionLog.make({ id }), [looping(usage), looping(usage), {
          ...S.textResponse("done"),
          usage
        }])
        assert.deepStrictEqual(turnEnds(log), [{ kind: "completed" }])
      })).pipe(Effect.provide(store))
      // The second process counts those 900: its first step reaches 1200 and ends the turn.
      const reopened = yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* run(yield* SessionLog.open(id), loop(5, usage))
        assert.deepStrictEqual(turnEnds(log).at(-1), {
          kind: "budget",
          budget: "tokens",
          scope: "session",
          step: 1,
          limit: 1000,
          used: 1200
        })
        return log
      })).pipe(Effect.provide(store))
      // A third process finds the budget spent: its turn ends before any step, and the model is never asked.
      yield* Effect.scoped(Effect.gen(function*() {
        const [model, controls] = yield* S.make(loop(5, usage))
        const agent = yield* Agent.make({ model: "m", session: yield* SessionLog.open(id), tools: [noop], budget })
          .pipe(
            Effect.provideService(LanguageModel.LanguageModel, model)
          )
        const log = yield* oneTurn(agent)
        assert.deepStrictEqual(turnEnds(log).at(-1), {
          kind: "budget",
          budget: "tokens",
          scope: "session",
          step: 0,
          limit: 1000,
          used: 1200
        })
        assert.strictEqual(yield* controls.requestCount, 0)
        assert.strictEqual(log.length > reopened.length, true)
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
      })).pipe(Effect.provide(store))
    }).pipe(Effect.scoped))

  it.scoped("R160: a turnBudget hook's limit holds within the turn; the tighter of two hooks wins", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup({
        tools: [noop],
        hooks: Hooks.compose(
          { turnBudget: () => Effect.succeed({ maxTokens: 2000, maxSteps: 10 }) },
          {
            turnBudget: ({ trigger }) => Effect.succeed(trigger.kind === "message" ? { maxTokens: 700 } : undefined)
          }
        )
      })
      const log = yield* oneTurn(agent)
      assert.deepStrictEqual(turnEnds(log), [{
        kind: "budget",
        budget: "tokens",
        scope: "turn",
        step: 3,
        limit: 700,
        used: 900
      }])
    }).pipe(Effect.provide(S.layer(loop(10, { inputTokens: 250, outputTokens: 50 })))))
})
