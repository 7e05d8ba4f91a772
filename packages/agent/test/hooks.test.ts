/**
 * The hooks (R49–R54, R59, R91): a failing `step`, `request` or `turnStopping` hook fails the turn; the `request`
 * hook replaces the route recorded in `request/header` (reasons `initial`, `resume`, `change`) and a routing
 * `LanguageModel` reads it from `Agent.CurrentRequest`; `system` as a string or as an Effect evaluated at each step;
 * `Hooks.compose<never>(outer, inner)` (waterfall: outer decides or delegates through `next`; serial: outer then inner).
 */
import { LanguageModel, type Response } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, Hooks } from "@harness/agent"
import type { RequestConfig } from "@harness/agent/Hooks"
import type { SessionEvent, Turn } from "@harness/domain"
import { Message, MessageSource } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { ev, promptTurn, stamp } from "@harness/testkit/Events"
import { Effect, Ref, Stream } from "effect"
import {
  assertCleanLog,
  assertReconstructable,
  firstRequest,
  idleLog,
  logShape,
  noop,
  ofType,
  requestViews,
  setup,
  traceOf
} from "./fixtures.js"

/** The logged request headers with their reasons (the advertised tools left out). */
const headers = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  ofType(log, "request/header").map((e) => {
    const { tools: _tools, ...header } = e.data.header
    return { reason: e.data.reason, ...header }
  })

/** A routing `LanguageModel`: answers `via <model>` after reading the route the agent decided for this request. */
const routingModel = (seen: Ref.Ref<ReadonlyArray<RequestConfig>>) =>
  LanguageModel.make({
    generateText: () => Effect.dieMessage("not used by the agent"),
    streamText: () =>
      Stream.unwrap(Effect.gen(function*() {
        const route = yield* Agent.CurrentRequest
        yield* Ref.update(seen, (all) => [...all, route])
        const parts: ReadonlyArray<Response.StreamPartEncoded> = [
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: `via ${route.model}` },
          { type: "text-end", id: "t" },
          { type: "finish", reason: "stop", usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } }
        ]
        return Stream.fromIterable(parts)
      }))
  })

describe("hooks", () => {
  it.scoped("R50, R59, R91: a failing step hook fails the turn with no step opened", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({ hooks: { step: () => Effect.fail("step refused") } })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(traceOf(yield* recorder.events), [
        "enqueue:queued:P",
        "status:running",
        "dequeue:P",
        "turn/start:1",
        "user:P",
        "error",
        "turn/end:1:error",
        "settled:error",
        "status:idle"
      ])
      const events = yield* recorder.events
      const error = events.find((e) => e.type === "agent/error")
      assert.strictEqual(error?.type === "agent/error" ? error.turn : undefined, 1)
      assert.strictEqual(error?.type === "agent/error" ? error.step : undefined, 1)
      const end = ofType(yield* agent.log, "turn/end")[0]!
      assert.strictEqual(end.data.reason.kind, "error")
      assert.strictEqual(end.data.reason.kind === "error" ? end.data.reason.step : undefined, 1)
      assert.include(
        end.data.reason.kind === "error" && "message" in end.data.reason ? end.data.reason.message : "",
        "step refused"
      )
      const settled = events.find((e) => e.type === "agent/settled")
      assert.strictEqual(settled?.type === "agent/settled" ? settled.reason.kind : undefined, "error")
      const model = yield* S.ScriptedModel
      assert.deepStrictEqual(yield* model.requests, [])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("never")]))))

  it.scoped("R51, R103: the request hook replaces the route; request/header records it, reason `initial` on a fresh log", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({
        model: "m",
        hooks: { request: () => Effect.succeed({ model: "routed", provider: "p", options: { temperature: 0 } }) }
      })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(headers(log), [
        { reason: "initial", config: { model: "routed", provider: "p", options: { temperature: 0 } } }
      ])
      assert.deepStrictEqual(ofType(log, "assistant/message")[0]?.data.provenance, { model: "routed", provider: "p" })
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R51: without a hook the agent's `model` and `provider` labels are the route", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m", provider: "prov" })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(headers(yield* agent.log), [{
        reason: "initial",
        config: { model: "m", provider: "prov" }
      }])
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R51: `change` only when the header differs, never repeated when unchanged (across steps and turns)", () =>
    Effect.gen(function*() {
      const route = yield* Ref.make("a")
      const agent = yield* Agent.make({
        model: "m",
        tools: [noop],
        hooks: { request: () => Effect.map(Ref.get(route), (model) => ({ model })) }
      })
      // Turn 1: two steps on route a (one header).
      yield* agent.followup(Message.make("one"))
      yield* agent.whenIdle
      // Turn 2: still route a (no header).
      yield* agent.followup(Message.make("two"))
      yield* agent.whenIdle
      // Turn 3: route b (a change), then turn 4 back to a (another change).
      yield* Ref.set(route, "b")
      yield* agent.followup(Message.make("three"))
      yield* agent.whenIdle
      yield* Ref.set(route, "a")
      yield* agent.followup(Message.make("four"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(headers(log), [
        { reason: "initial", config: { model: "a" } },
        { reason: "change", config: { model: "b" } },
        { reason: "change", config: { model: "a" } }
      ])
      assert.deepStrictEqual(
        logShape(log).filter((s) => s.startsWith("step/start") || s.startsWith("request/header")),
        [
          "step/start:1.1",
          "request/header:initial",
          "step/start:1.2",
          "step/start:2.1",
          "step/start:3.1",
          "request/header:change",
          "step/start:4.1",
          "request/header:change"
        ]
      )
      yield* assertCleanLog(agent)
    }).pipe(
      Effect.provide(S.layer([
        S.toolCallResponse(S.toolCall("noop")),
        S.textResponse("1"),
        S.textResponse("2"),
        S.textResponse("3"),
        S.textResponse("4")
      ]))
    ))

  it.scoped("R51: on a seeded log that has a header the first request logs `resume` (even if unchanged), then only changes", () =>
    Effect.gen(function*() {
      const seed = stamp(promptTurn(1, "Hi", "Hello!"))
      const seededHeader = ofType(seed, "request/header")[0]!.data.header
      const session = yield* SessionLog.memory({ seed })
      const agent = yield* Agent.make({ session, model: seededHeader.config.model, system: seededHeader.system })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      yield* agent.followup(Message.make("P2"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(headers(log.slice(seed.length)), [{ reason: "resume", ...seededHeader }])
      assert.deepStrictEqual(logShape(log.slice(seed.length)).slice(0, 4), [
        "turn/start:2",
        "user:P",
        "step/start:2.1",
        "request/header:resume"
      ])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests)[0], [
        "system:You are a test.",
        "user:Hi",
        "assistant:Hello!",
        "user:P"
      ])
      assertReconstructable(log, requests, { from: seed.length })
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok"), S.textResponse("ok")]))))

  it.scoped("R51: a seeded log without a header gets `initial`", () =>
    Effect.gen(function*() {
      const session = yield* SessionLog.memory({ seed: stamp([ev.user("earlier context", MessageSource.plugin("p"))]) })
      const agent = yield* Agent.make({ session, model: "m" })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(headers(yield* agent.log), [{ reason: "initial", config: { model: "m" } }])
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R51: the route proposed to the request hook is the agent's at first, then the last logged header's", () =>
    Effect.gen(function*() {
      const proposed = yield* Ref.make<ReadonlyArray<RequestConfig>>([])
      const agent = yield* Agent.make({
        model: "m",
        tools: [noop],
        hooks: {
          // Escalates once, on the first request; afterwards it delegates.
          request: ({ config, step, turn }, next) =>
            Effect.zipRight(
              Ref.update(proposed, (all) => [...all, config]),
              turn === 1 && step === 1 ? Effect.succeed({ model: "big" }) : next
            )
        }
      })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(proposed), [{ model: "m" }, { model: "big" }])
      assert.deepStrictEqual(headers(yield* agent.log), [{ reason: "initial", config: { model: "big" } }])
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("noop")), S.textResponse("done")]))))

  it.scoped("R51: a routing LanguageModel reads the request hook's decision from Agent.CurrentRequest", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<RequestConfig>>([])
      const afterwards = yield* Ref.make<ReadonlyArray<RequestConfig>>([])
      const model = yield* routingModel(seen)
      const agent = yield* Agent.make({
        model: "default-route",
        hooks: {
          request: ({ turn }, next) =>
            turn === 2 ? Effect.succeed({ model: "big", provider: "x", options: { effort: "high" } }) : next,
          // Runs in the turn's fiber after the request: the route is the request's alone.
          turnStopping: () =>
            Effect.flatMap(Agent.CurrentRequest, (route) => Ref.update(afterwards, (all) => [...all, route]))
        }
      }).pipe(Effect.provideService(LanguageModel.LanguageModel, model))
      yield* agent.followup(Message.make("one"))
      yield* agent.whenIdle
      yield* agent.followup(Message.make("two"))
      yield* agent.whenIdle
      assert.deepStrictEqual(yield* Ref.get(seen), [
        { model: "default-route" },
        { model: "big", provider: "x", options: { effort: "high" } }
      ])
      assert.deepStrictEqual(yield* Ref.get(afterwards), [{ model: "default" }, { model: "default" }])
      const log = yield* agent.log
      assert.deepStrictEqual(ofType(log, "assistant/message").map((e) => [e.data.content, e.data.provenance]), [
        [[{ type: "text", text: "via default-route" }], { model: "default-route" }],
        [[{ type: "text", text: "via big" }], { model: "big", provider: "x" }]
      ])
      yield* assertCleanLog(agent)
    }))

  for (
    const [name, hook] of [
      ["fails", () => Effect.fail("no route")],
      ["returns a config without a model", () => Effect.succeed({ model: "" })]
    ] as const
  ) {
    it.scoped(`R51, R59, R91: a request hook that ${name} fails the turn (its step is closed, no request is made)`, () =>
      Effect.gen(function*() {
        const { agent, rec: recorder } = yield* setup({ hooks: { request: hook } })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.deepStrictEqual(traceOf(yield* recorder.events).slice(3), [
          "turn/start:1",
          "user:P",
          "step/start:1.1",
          "error",
          "step/end:1.1",
          "turn/end:1:error",
          "settled:error",
          "status:idle"
        ])
        const end = ofType(yield* agent.log, "turn/end")[0]!
        assert.deepStrictEqual(end.data.reason.kind === "error" ? end.data.reason.step : undefined, 1)
        const model = yield* S.ScriptedModel
        assert.deepStrictEqual(yield* model.requests, [])
        yield* assertCleanLog(agent)
      }).pipe(Effect.provide(S.layer([S.textResponse("never")]))))
  }

  it.scoped("R54, R59, R91: a failing turnStopping hook fails the turn after its step", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup({ hooks: { turnStopping: () => Effect.fail("cannot stop") } })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(traceOf(yield* recorder.events).slice(3), [
        ...firstRequest("P"),
        "assistant:ok",
        "step/end:1.1",
        "error",
        "turn/end:1:error",
        "settled:error",
        "status:idle"
      ])
      const end = ofType(yield* agent.log, "turn/end")[0]!
      assert.strictEqual(end.data.reason.kind === "error" ? end.data.reason.step : undefined, 1)
      assert.include(
        end.data.reason.kind === "error" && "message" in end.data.reason ? end.data.reason.message : "",
        "cannot stop"
      )
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

  it.scoped("R51, R103: `system` as a string is the request's system message and the header's system", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m", system: "Be brief.", tools: [noop] })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(headers(log).map((h) => [h.reason, h.system]), [["initial", "Be brief."]])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests), [
        ["system:Be brief.", "user:P"],
        ["system:Be brief.", "user:P", "assistant:+call:noop", "tool:noop"]
      ])
      assertReconstructable(log, requests)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("noop")), S.textResponse("done")]))))

  it.scoped("R51, R103: `system` as an Effect is evaluated at each step; its value reaches the request and the header", () =>
    Effect.gen(function*() {
      const counter = yield* Ref.make(0)
      const agent = yield* Agent.make({
        model: "m",
        system: Effect.map(Ref.getAndUpdate(counter, (n) => n + 1), (n) => `system v${n}`),
        tools: [noop]
      })
      yield* agent.followup(Message.make("P"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(headers(log).map((h) => [h.reason, h.system]), [
        ["initial", "system v0"],
        ["change", "system v1"]
      ])
      const model = yield* S.ScriptedModel
      const requests = yield* model.requests
      assert.deepStrictEqual(requestViews(requests).map((r) => r[0]), ["system:system v0", "system:system v1"])
      assertReconstructable(log, requests)
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("noop")), S.textResponse("done")]))))

  it.scoped("R59: a failing `system` Effect fails the turn", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make<never>({ model: "m", system: Effect.fail("no prompt") })
      yield* agent.followup(Message.make("P"))
      yield* agent.whenIdle
      assert.deepStrictEqual(logShape(yield* agent.log), ["turn/start:1", "user:P", "turn/end:1:error"])
      yield* assertCleanLog(agent)
    }).pipe(Effect.provide(S.layer([S.textResponse("never")]))))

  describe("Hooks.compose", () => {
    const block: Turn.PromptDecision = { kind: "block", reason: "outer says no" }

    it.scoped("waterfall: the outer hook delegates to the inner one through `next` and can amend its decision", () =>
      Effect.gen(function*() {
        const order = yield* Ref.make<ReadonlyArray<string>>([])
        const note = (what: string) => Ref.update(order, (all) => [...all, what])
        const hooks = Hooks.compose<never>(
          {
            promptSubmit: (_, next) =>
              Effect.gen(function*() {
                yield* note("outer:before")
                const decision = yield* next
                yield* note("outer:after")
                return decision.kind === "allow"
                  ? { ...decision, additionalContexts: [Message.make("outer ctx", MessageSource.plugin("outer"))] }
                  : decision
              })
          },
          {
            promptSubmit: (_, next) =>
              Effect.zipRight(
                note("inner"),
                Effect.map(
                  next,
                  (d): Turn.PromptDecision => ({
                    ...d,
                    kind: "allow",
                    content: [{ type: "text", text: "inner rewrite" }]
                  })
                )
              )
          }
        )
        const agent = yield* Agent.make({ model: "m", hooks })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.deepStrictEqual(yield* Ref.get(order), ["outer:before", "inner", "outer:after"])
        assert.deepStrictEqual(logShape(yield* agent.log).slice(0, 3), [
          "turn/start:1",
          "user:inner rewrite",
          "user:outer ctx"
        ])
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

    it.scoped("waterfall: the outer hook decides alone — the inner one never runs", () =>
      Effect.gen(function*() {
        const inner = yield* Ref.make(0)
        const hooks = Hooks.compose<never>(
          { promptSubmit: () => Effect.succeed(block) },
          { promptSubmit: (_, next) => Effect.zipRight(Ref.update(inner, (n) => n + 1), next) }
        )
        const agent = yield* Agent.make({ model: "m", hooks })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.strictEqual(yield* Ref.get(inner), 0)
        assert.deepStrictEqual(yield* agent.log, [])
      }).pipe(Effect.provide(S.layer([]))))

    it.scoped("waterfall (request): the outer hook amends the route the inner one chose", () =>
      Effect.gen(function*() {
        const hooks = Hooks.compose<never>(
          { request: (_, next) => Effect.map(next, (config) => ({ ...config, provider: "outer" })) },
          { request: () => Effect.succeed({ model: "inner" }) }
        )
        const agent = yield* Agent.make({ model: "m", hooks })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.deepStrictEqual(headers(yield* agent.log), [{
          reason: "initial",
          config: { model: "inner", provider: "outer" }
        }])
      }).pipe(Effect.provide(S.layer([S.textResponse("ok")]))))

    it.scoped("serial: step and turnStopping hooks run outer then inner; a missing side leaves the other alone", () =>
      Effect.gen(function*() {
        const order = yield* Ref.make<ReadonlyArray<string>>([])
        const note = (what: string) => Ref.update(order, (all) => [...all, what])
        const hooks = Hooks.compose<never>(
          Hooks.compose<never>(
            {
              step: ({ step }) => note(`outer:step${step}`),
              turnStopping: () => note("outer:stopping")
            },
            {
              step: ({ step }) => note(`inner:step${step}`),
              turnStopping: () => note("inner:stopping")
            }
          ),
          { promptSubmit: (_, next) => Effect.zipRight(note("promptSubmit"), next) }
        )
        const agent = yield* Agent.make({ model: "m", hooks, tools: [noop] })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.deepStrictEqual(yield* Ref.get(order), [
          "promptSubmit",
          "outer:step1",
          "inner:step1",
          "outer:step2",
          "inner:step2",
          "outer:stopping",
          "inner:stopping"
        ])
      }).pipe(Effect.provide(S.layer([S.toolCallResponse(S.toolCall("noop")), S.textResponse("done")]))))

    it.scoped("serial: a failing outer step hook stops the chain (the inner one does not run) and fails the turn", () =>
      Effect.gen(function*() {
        const inner = yield* Ref.make(0)
        const hooks = Hooks.compose<never>(
          { step: () => Effect.fail("outer failed") },
          { step: () => Ref.update(inner, (n) => n + 1) }
        )
        const agent = yield* Agent.make({ model: "m", hooks })
        yield* agent.followup(Message.make("P"))
        yield* agent.whenIdle
        assert.strictEqual(yield* Ref.get(inner), 0)
        assert.deepStrictEqual(logShape(yield* agent.log), ["turn/start:1", "user:P", "turn/end:1:error"])
      }).pipe(Effect.provide(S.layer([]))))
  })
})
