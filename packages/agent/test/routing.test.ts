/**
 * Routing of `send` (R28, R29, R92) for all four (target × wakeup) cells, with the acceptance window closed (idle)
 * and open (held inside admission, inside a step hook, inside a delayed model request); and what acceptance
 * checks and copies (R20–R22, with R22's departure: input is decoded, validated and frozen at `send`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import type { AgentEvent } from "@harness/domain"
import { MessageSource } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Cause, Effect, Exit, Layer, Option, TestClock } from "effect"
import {
  awaitSleeper,
  claimed,
  coarseTrace,
  coarseTurn,
  conversation,
  ctx,
  inboxEvents,
  isDurable,
  lie,
  makeHold,
  mid,
  routes,
  setup,
  shape,
  textOf,
  user
} from "./fixtures.js"

type Window = "idle" | "admission" | "step hook" | "model"
type Cell = "inject" | "steer" | "followup" | "park"

/** Which inbox placement each cell publishes (R28); `undefined`: injection, which never enters a FIFO (R29). */
const placementOf: Record<Window, Record<Cell, "queued" | "steering" | undefined>> = {
  idle: { inject: undefined, steer: "queued", followup: "queued", park: "queued" },
  admission: { inject: undefined, steer: "steering", followup: "queued", park: "queued" },
  "step hook": { inject: undefined, steer: "steering", followup: "queued", park: "queued" },
  model: { inject: undefined, steer: "steering", followup: "queued", park: "queued" }
}

const turn1 = ["turn/start:1", "user:first", "step/start:1", "assistant:a1", "step/end:1", "turn/end:1:completed"]
const turnOf = (n: number, prompt: string, answer: string) => [
  `turn/start:${n}`,
  `user:${prompt}`,
  "step/start:1",
  `assistant:${answer}`,
  "step/end:1",
  `turn/end:${n}:completed`
]

/** Accepted while the turn is held in admission or in its `step` hook: drained before `step/start` (R45 step 7, R49). */
const beforeFirstStep = (row: string) => [
  "turn/start:1",
  "user:first",
  row,
  "step/start:1",
  "assistant:a1",
  "step/end:1",
  "turn/end:1:completed"
]

/** A follow-up or parked `x` accepted while turn 1 runs: its own turn after it (parked: run first by "later", R31). */
const laterTurns = {
  followup: [...turn1, ...turnOf(2, "x", "a2")],
  park: [...turn1, ...turnOf(2, "x", "a2"), ...turnOf(3, "later", "a3")]
}

/**
 * Where the message `x` lands in the log (R28, R45, R48, R56). For parked items (`park`) the test afterwards sends a
 * follow-up "later", which must run the parked item first, as its own turn (R31).
 */
const expectedLog: Record<Window, Record<Cell, ReadonlyArray<string>>> = {
  idle: {
    inject: ["user:x"],
    steer: turnOf(1, "x", "a1"),
    followup: turnOf(1, "x", "a1"),
    park: [...turnOf(1, "x", "a1"), ...turnOf(2, "later", "a2")]
  },
  // accepted during admission: after the prompt (R45 step 7)
  admission: { inject: beforeFirstStep("user:x"), steer: beforeFirstStep("steer:x"), ...laterTurns },
  // during the `step` hook: drained at D1, before `step/start`, so this step's request sees it (R49, R56)
  "step hook": { inject: beforeFirstStep("user:x"), steer: beforeFirstStep("steer:x"), ...laterTurns },
  model: {
    // during the request: drained at D2, after the assistant message, before `step/end` (R56); context adds no
    // step, steering forces one (R48)
    inject: [
      "turn/start:1",
      "user:first",
      "step/start:1",
      "assistant:a1",
      "user:x",
      "step/end:1",
      "turn/end:1:completed"
    ],
    steer: [
      "turn/start:1",
      "user:first",
      "step/start:1",
      "assistant:a1",
      "steer:x",
      "step/end:1",
      "step/start:2",
      "assistant:a2",
      "step/end:2",
      "turn/end:1:completed"
    ],
    ...laterTurns
  }
}

/** The requests of a follow-up or parked `x` accepted while turn 1 runs: turn 2 sees it (then "later" in turn 3). */
const laterRequests = {
  followup: [["user:first"], ["user:first", "assistant:a1", "user:x"]],
  park: [["user:first"], ["user:first", "assistant:a1", "user:x"], [
    "user:first",
    "assistant:a1",
    "user:x",
    "assistant:a2",
    "user:later"
  ]]
}

/** The last message of each model request, to show which request saw `x`. */
const expectedRequests: Record<Window, Record<Cell, ReadonlyArray<ReadonlyArray<string>>>> = {
  idle: {
    inject: [],
    steer: [["user:x"]],
    followup: [["user:x"]],
    park: [["user:x"], ["user:x", "assistant:a1", "user:later"]]
  },
  admission: { inject: [["user:first", "user:x"]], steer: [["user:first", "user:x"]], ...laterRequests },
  "step hook": { inject: [["user:first", "user:x"]], steer: [["user:first", "user:x"]], ...laterRequests },
  model: {
    inject: [["user:first"]],
    steer: [["user:first"], ["user:first", "assistant:a1", "user:x"]],
    ...laterRequests
  }
}

/**
 * Builds an agent and, unless `window` is `idle`, holds it with its acceptance window open: a follow-up "first"
 * is claimed and then held inside its admission (`promptSubmit` waits), inside its first `step` hook, or inside its
 * first model request (delayed on the `TestClock`). `release` lets it go on.
 */
const openWindow = (window: Window) =>
  Effect.gen(function*() {
    const hold = yield* makeHold
    const model = yield* S.ScriptedModel
    yield* model.push(
      window === "model" ? S.delayed("1 second", S.textResponse("a1")) : S.textResponse("a1"),
      S.textResponse("a2"),
      S.textResponse("a3")
    )
    const { agent, rec: recorder } = yield* setup({
      hooks: {
        promptSubmit: (input, next) =>
          window === "admission" && textOf(input.message.content) === "first" ? Effect.zipRight(hold.wait, next) : next,
        step: ({ step, turn }) => (window === "step hook" && turn === 1 && step === 1 ? hold.wait : Effect.void)
      }
    })
    let release: Effect.Effect<void> = Effect.void
    if (window === "admission" || window === "step hook") {
      yield* agent.followup(user("first"))
      yield* hold.reached
      release = hold.release
    } else if (window === "model") {
      yield* agent.followup(user("first"))
      yield* recorder.waitFor(isDurable("step/start"))
      yield* awaitSleeper
      release = TestClock.adjust("1 second")
    }
    return { agent, recorder, model, release }
  })

const messageIdsIn = (events: ReadonlyArray<AgentEvent.AgentEvent>): ReadonlyArray<string> =>
  inboxEvents(events).flatMap((event) =>
    event.type === "agent/inbox/discard" ? event.messages.map((m) => m.id) : [event.message.id]
  )

describe("routing table (R28)", () => {
  for (const window of ["idle", "admission", "step hook", "model"] as const) {
    for (const cell of ["inject", "steer", "followup", "park"] as const) {
      const options = routes[cell]
      const placement = placementOf[window][cell]
      it.scoped(
        `R28 R29 R92: ${cell} (${options.target}, wakeup ${options.wakeup}) with the window ${
          window === "idle" ? "closed (idle)" : `open (${window})`
        } → ${placement === undefined ? "no FIFO" : `enqueue ${placement}`}, lands where the table says`,
        () =>
          Effect.gen(function*() {
            const { agent, model, recorder, release } = yield* openWindow(window)
            assert.strictEqual(yield* agent.acceptsNextStep, window !== "idle", "acceptsNextStep reflects the window")
            yield* recorder.clear

            const id = yield* agent.send(cell === "inject" ? ctx("x") : user("x"), options)

            // What `send` did before returning (R20, R92): the enqueue, with its placement, or (idle injection) the
            // append; an injection never publishes an inbox event (R29).
            const immediate = yield* recorder.events
            const enqueued = immediate.filter((e): e is AgentEvent.AgentEventOf<"agent/inbox/enqueue"> =>
              e.type === "agent/inbox/enqueue"
            )
            if (placement === undefined) {
              assert.deepStrictEqual(inboxEvents(immediate), [])
              if (window === "idle") {
                const log = yield* agent.log
                assert.deepStrictEqual(log.map((e) => [e.type, e.data]), [[
                  "user/message",
                  { messageId: id, content: [{ type: "text", text: "x" }], source: MessageSource.plugin("test") }
                ]])
              }
            } else {
              assert.strictEqual(enqueued.length, 1, "exactly one enqueue, published before send returned")
              assert.strictEqual(enqueued[0]!.placement, placement)
              assert.strictEqual(enqueued[0]!.message.id, id)
              assert.deepStrictEqual(enqueued[0]!.message, {
                content: [{ type: "text", text: "x" }],
                id,
                source: { kind: "user" }
              })
              assert.isTrue(Object.isFrozen(enqueued[0]!.message), "the published message is frozen")
            }

            yield* release
            yield* agent.whenIdle
            if (cell === "park") {
              // Still parked after the window closed; a later waking send runs it first (R31).
              assert.strictEqual(yield* agent.status, "idle")
              yield* agent.followup(user("later"))
              yield* agent.whenIdle
            }

            const log = yield* agent.log
            assert.deepStrictEqual(shape(log), expectedLog[window][cell])
            assert.deepStrictEqual(LogCheck.checkLog(log), [])
            const requests = (yield* model.requests).map((r) => conversation(r).filter((m) => !m.startsWith("system:")))
            assert.deepStrictEqual(requests, expectedRequests[window][cell])

            // The message's own id: every logged copy carries it; FIFO items are enqueued and dequeued exactly once
            // (R88, R92); an injection appears in no inbox event at all (R29).
            const all = yield* recorder.events
            const logged = log.flatMap((e) =>
              (e.type === "user/message" || e.type === "steering/message") && textOf(e.data.content) === "x"
                ? [e.data.messageId]
                : []
            )
            assert.deepStrictEqual(logged, [id])
            const mentions = messageIdsIn(all).filter((m) => m === id)
            assert.deepStrictEqual(mentions, placement === undefined ? [] : [id, id])
            if (window === "idle") {
              // Canonical orders: an idle injection is one bare durable event and nothing else (no status change,
              // no model call); an idle waking send is R89's flow.
              const canonical: Record<Cell, ReadonlyArray<string>> = {
                inject: ["user/message"],
                steer: [...claimed, ...coarseTurn, "status:idle"],
                followup: [...claimed, ...coarseTurn, "status:idle"],
                // parked: nothing happens until the waking "later" arrives; then two turns in one running interval
                park: ["enqueue:queued", ...claimed, ...coarseTurn, "dequeue", ...coarseTurn, "status:idle"]
              }
              assert.deepStrictEqual(yield* coarseTrace(recorder), canonical[cell])
            }
            const dequeued = all.flatMap((e) => (e.type === "agent/inbox/dequeue" && e.message.id === id ? [e] : []))
            if (placement !== undefined) {
              assert.strictEqual(dequeued[0]!.message, enqueued[0]!.message, "dequeue carries the same frozen message")
            }
          }).pipe(Effect.provide(S.layer()))
      )
    }
  }
})

const validText = [{ type: "text", text: "x" }]
const goal = (change: unknown) => ({ kind: "goal", goalId: "g", revision: 1, round: 0, change })
const cyclic = () => {
  const value: Record<string, unknown> = { a: 1 }
  value.self = value
  return value
}

/** Inputs a lying caller can hand `send`: each must be refused (R22: every input is validated at acceptance). */
const invalidInputs: ReadonlyArray<readonly [string, unknown]> = [
  ["empty content", { content: [], source: { kind: "user" } }],
  ["a non-text block", { content: [{ type: "image", url: "https://example.com/a.png" }], source: { kind: "user" } }],
  ["a text block whose text is a number", { content: [{ type: "text", text: 42 }], source: { kind: "user" } }],
  ["content that is a string", { content: "x", source: { kind: "user" } }],
  ["an unknown source kind", { content: validText, source: { kind: "tool" } }],
  ["no source", { content: validText }],
  ["a plugin source without its name", { content: validText, source: { kind: "plugin" } }],
  ["a goal change holding a bigint", { content: validText, source: goal({ at: 10n }) }],
  ["a goal change holding NaN", { content: validText, source: goal({ n: Number.NaN }) }],
  ["a goal change holding -0", { content: validText, source: goal({ n: -0 }) }],
  ["a goal change holding a Date", { content: validText, source: goal({ when: new Date(0) }) }],
  ["a goal change holding undefined", { content: validText, source: goal({ x: undefined }) }],
  ["a goal change holding a function", { content: validText, source: goal({ f: () => 1 }) }],
  ["a goal change holding a Map", { content: validText, source: goal({ m: new Map([["k", 1]]) }) }],
  // eslint-disable-next-line no-sparse-arrays -- the hole is what this case tests
  ["a goal change holding a sparse array", { content: validText, source: goal({ list: [1, , 3] }) }],
  ["a goal change holding a cycle", { content: validText, source: goal(cyclic()) }],
  ["a round-0 goal source without its change", {
    content: validText,
    source: { kind: "goal", goalId: "g", revision: 1, round: 0 }
  }],
  ["an unknown top-level key", { content: validText, source: { kind: "user" }, priority: "high" }],
  ["an unknown key in a block", { content: [{ type: "text", text: "x", bold: true }], source: { kind: "user" } }],
  ["an unknown key in the source", { content: validText, source: { kind: "user", admin: true } }],
  ["null", null],
  ["a string", "hello"],
  ["undefined", undefined]
]

/** Options a lying caller can hand `send`. */
const invalidOptions: ReadonlyArray<readonly [string, unknown]> = [
  ["an unknown target", { target: "now", wakeup: true }],
  ["no wakeup", { target: "next-turn" }],
  ["no target", { wakeup: true }],
  ["a wakeup that is a string", { target: "next-step", wakeup: "yes" }],
  ["an unknown key", { target: "next-turn", wakeup: true, priority: 1 }],
  ["an empty id", { target: "next-turn", wakeup: true, id: "" }],
  ["an id that is a number", { target: "next-step", wakeup: false, id: 7 }],
  ["no options at all", undefined],
  ["null", null]
]

/** Runs `effect` and checks it failed (not died) with `InvalidMessageError`. */
const expectInvalid = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    assert.isTrue(Exit.isFailure(exit), `${what}: accepted`)
    if (Exit.isFailure(exit)) {
      const failure = Cause.failureOption(exit.cause)
      assert.isTrue(Option.isSome(failure), `${what}: died instead of failing: ${Cause.pretty(exit.cause)}`)
      if (Option.isSome(failure)) {
        assert.strictEqual((failure.value as { readonly _tag?: string })._tag, "InvalidMessageError", what)
      }
    }
  })

describe("acceptance checks and copies (R21, R22)", () => {
  for (const window of ["idle", "admission", "model"] as const) {
    it.scoped(
      `R21 R22 R28: invalid input or options (window ${
        window === "idle" ? "closed" : `open: ${window}`
      }) fail with InvalidMessageError: no event, no enqueue, no append, id not taken`,
      () =>
        Effect.gen(function*() {
          const { agent, model, recorder, release } = yield* openWindow(window)
          const before = yield* agent.log
          const requestsBefore = (yield* model.requests).length
          yield* recorder.clear

          for (const [what, input] of invalidInputs) {
            for (const cell of ["inject", "steer", "followup", "park"] as const) {
              yield* expectInvalid(
                `${what} (${cell})`,
                agent.send(lie(input), { ...routes[cell], id: mid(`burn-${cell}`) })
              )
            }
            yield* expectInvalid(`${what} (followup preset)`, agent.followup(lie(input)))
            yield* expectInvalid(`${what} (steer preset)`, agent.steer(lie(input)))
            yield* expectInvalid(`${what} (inject preset)`, agent.inject(lie(input), { id: mid("burn-inject") }))
          }
          for (const [what, options] of invalidOptions) {
            yield* expectInvalid(`options with ${what}`, agent.send(user("x"), lie(options)))
            yield* expectInvalid(`options with ${what}`, agent.send(ctx("x"), lie(options)))
          }
          yield* expectInvalid("preset with an empty id", agent.followup(user("x"), { id: lie("") }))
          yield* expectInvalid("preset with a numeric id", agent.inject(ctx("x"), { id: lie(7) }))
          yield* expectInvalid("preset with a numeric id", agent.steer(user("x"), { id: lie(7) }))

          // Nothing happened: no live event of any kind, no append, no model call, the window unchanged.
          assert.deepStrictEqual(yield* recorder.events, [])
          assert.deepStrictEqual(yield* agent.log, before)
          assert.strictEqual((yield* model.requests).length, requestsBefore)
          assert.strictEqual(yield* agent.acceptsNextStep, window !== "idle")

          // An id offered with refused input was not accepted: it can still be used.
          const id = yield* agent.inject(ctx("fine"), { id: mid("burn-inject") })
          assert.strictEqual(id, mid("burn-inject"))
          const parked = yield* agent.send(user("parked"), { ...routes.park, id: mid("burn-park") })
          assert.strictEqual(parked, mid("burn-park"))
          const events = yield* recorder.events
          assert.deepStrictEqual(
            events.flatMap((e) => (e.type === "agent/inbox/enqueue" ? [e.message.id] : [])),
            [mid("burn-park")]
          )
          yield* release
          yield* agent.whenIdle
          assert.deepStrictEqual(LogCheck.checkLog(yield* agent.log), [])
        }).pipe(Effect.provide(S.layer()))
    )
  }

  it.scoped("R21: preset options are decoded too: an unknown key (or options that are not an object) fail with InvalidMessageError", () =>
    Effect.gen(function*() {
      const { agent, rec: recorder } = yield* setup()
      yield* expectInvalid("followup({ id, urgent })", agent.followup(user("x"), lie({ id: "a", urgent: true })))
      yield* expectInvalid("steer({ id, urgent })", agent.steer(user("x"), lie({ id: "b", urgent: true })))
      yield* expectInvalid("inject({ id, urgent })", agent.inject(ctx("x"), lie({ id: "c", urgent: true })))
      yield* expectInvalid("followup(m, \"an-id\")", agent.followup(user("x"), lie("an-id")))
      assert.deepStrictEqual(yield* recorder.events, [])
      assert.deepStrictEqual(yield* agent.log, [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped(
    "R21 R92: accepted input is a frozen copy: mutating the caller's objects afterwards changes nothing in the log, the events or the requests",
    () =>
      Effect.gen(function*() {
        const { agent, model, recorder, release } = yield* openWindow("admission")
        type Mutable = { content: Array<{ type: string; text: string }>; source: { kind: string; plugin?: string } }
        const mutable = (text: string, kind: "user" | "plugin"): Mutable => ({
          content: [{ type: "text", text }],
          source: kind === "user" ? { kind } : { kind, plugin: "p" }
        })
        const mutate = (input: Mutable) => {
          input.content[0]!.text = "MUTATED"
          input.content.push({ type: "text", text: "+extra" })
          input.source.kind = "plugin"
          input.source.plugin = "evil"
        }
        // Accepted while the window is open (held admission of "first"): staged context, steering, a queued turn.
        const staged = mutable("staged", "plugin")
        const steered = mutable("steered", "user")
        const queued = mutable("queued", "user")
        yield* agent.inject(lie(staged))
        yield* agent.steer(lie(steered))
        yield* agent.followup(lie(queued))
        mutate(staged)
        mutate(steered)
        mutate(queued)
        yield* release
        yield* agent.whenIdle
        // Accepted while idle: appended at once; mutated afterwards.
        const idle = mutable("idle", "plugin")
        yield* agent.inject(lie(idle))
        mutate(idle)

        // The caller's objects were copied, not frozen: mutation worked on them.
        assert.strictEqual(staged.content[0]!.text, "MUTATED")
        const log = yield* agent.log
        assert.deepStrictEqual(shape(log), [
          "turn/start:1",
          "user:first",
          "user:staged",
          "steer:steered",
          "step/start:1",
          "assistant:a1",
          "step/end:1",
          "turn/end:1:completed",
          ...turnOf(2, "queued", "a2"),
          "user:idle"
        ])
        for (const event of log) {
          if (event.type === "user/message" || event.type === "steering/message") {
            assert.strictEqual(event.data.content.length, 1)
            assert.notStrictEqual(event.data.source.kind === "plugin" ? event.data.source.plugin : "", "evil")
          }
        }
        const steeringEvent = log.find((e) => e.type === "steering/message")
        assert.deepStrictEqual(steeringEvent?.type === "steering/message" ? steeringEvent.data.source : undefined, {
          kind: "user"
        })
        const requests = (yield* model.requests).map(conversation)
        assert.deepStrictEqual(requests[1], [
          "user:first",
          "user:staged",
          "user:steered",
          "assistant:a1",
          "user:queued"
        ])

        // Observers receive frozen messages: the published payload cannot be changed by anyone (R21, R92).
        const events = yield* recorder.events
        const published = events.flatMap((e) =>
          e.type === "agent/inbox/enqueue" || e.type === "agent/inbox/dequeue" ? [e.message] : []
        )
        assert.deepStrictEqual(published.map((m) => textOf(m.content)), [
          "first", // enqueue
          "first", // dequeue (claimed, then held in admission)
          "steered", // enqueue steering
          "queued", // enqueue queued
          "steered", // dequeue (drained after the prompt)
          "queued" // dequeue (claimed for turn 2)
        ])
        for (const message of published) {
          assert.isTrue(
            Object.isFrozen(message) && Object.isFrozen(message.content) && Object.isFrozen(message.content[0])
          )
          assert.isTrue(Object.isFrozen(message.source))
          assert.throws(() => {
            lie<{ text: string }>(message.content[0]).text = "changed by an observer"
          }, TypeError)
        }
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
      }).pipe(Effect.provide(S.layer()))
  )

  it.scoped("R21: a goal source's nested change is copied too: the caller's object stays its own, the log keeps what was accepted", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const change = { status: "active", plan: { steps: ["a", "b"] } }
      const input = {
        content: [{ type: "text", text: "goal set" }],
        source: { kind: "goal", goalId: "g1", revision: 1, round: 0, change }
      }
      const id = yield* agent.inject(lie(input))
      change.status = "paused"
      change.plan.steps.push("c")
      assert.deepStrictEqual(
        change,
        { status: "paused", plan: { steps: ["a", "b", "c"] } },
        "the caller's object is not frozen"
      )
      const log = yield* agent.log
      assert.deepStrictEqual(log.map((e) => e.data), [{
        messageId: id,
        content: [{ type: "text", text: "goal set" }],
        source: {
          kind: "goal",
          goalId: "g1",
          revision: 1,
          round: 0,
          change: { status: "active", plan: { steps: ["a", "b"] } }
        }
      }])
    }).pipe(Effect.provide(S.layer())))

  it.scoped(
    "R28: an idle injection whose append fails fails the send with SessionLogError: no event, no append, the id not taken",
    () =>
      Effect.gen(function*() {
        const faults = yield* SessionStore.StoreFaults
        const session = yield* SessionLog.make()
        const { agent, rec: recorder } = yield* setup({ session })
        yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "user/message"))
        const exit = yield* Effect.exit(agent.inject(ctx("lost"), { id: mid("ctx-1") }))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const failure = Cause.failureOption(exit.cause)
          assert.strictEqual(Option.map(failure, (f) => f._tag).pipe(Option.getOrUndefined), "SessionLogError")
        }
        assert.deepStrictEqual(yield* recorder.events, [])
        assert.deepStrictEqual(yield* agent.log, [])
        assert.strictEqual(yield* agent.status, "idle")

        yield* faults.clear
        const id = yield* agent.inject(ctx("kept"), { id: mid("ctx-1") })
        assert.strictEqual(id, mid("ctx-1"))
        assert.deepStrictEqual(shape(yield* agent.log, { ids: true }), ["user:kept@ctx-1"])
      }).pipe(Effect.provide(Layer.merge(S.layer(), SessionStore.layerMemoryWithFaults)))
  )

  it.scoped(
    "R29 R77: injected context never enters a FIFO: a cancel discards the staged steering and queued turn beside it, never the context",
    () =>
      Effect.gen(function*() {
        const { agent, recorder, release } = yield* openWindow("step hook")
        const c = yield* agent.inject(ctx("c"))
        const s = yield* agent.steer(user("s"))
        const f = yield* agent.followup(user("f"))
        yield* agent.cancel("user")
        yield* release
        yield* agent.whenIdle
        const events = yield* recorder.events
        const discards = events.flatMap((e) => (e.type === "agent/inbox/discard" ? [e.messages.map((m) => m.id)] : []))
        // queued-then-steering order (R77 step 3); the context is not a FIFO item.
        assert.deepStrictEqual(discards, [[f, s]])
        assert.isFalse(messageIdsIn(events).includes(c))
        // Staged context is never silently wiped (R77, R135): a default cancel logs it.
        const log = yield* agent.log
        assert.deepStrictEqual(shape(log, { ids: true }).filter((e) => e.startsWith("user:c")), [`user:c@${c}`])
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
      }).pipe(Effect.provide(S.layer()))
  )
})
