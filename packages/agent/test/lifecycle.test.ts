/**
 * The agent's lifecycle (ADR 0021): the pure transitions between `Idle`, `Running`, `Disposing` and `Disposed`
 * tested directly — what each state allows and refuses — and, through the agent, the one behaviour the flat state
 * record got wrong: repairing a refused `turn/end` at the next turn's opening no longer closes that turn's window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect, Option, Ref } from "effect"
import type { Activity, Progress } from "../src/internal/activity.js"
import * as Lifecycle from "../src/internal/lifecycle.js"
import type { Lifecycle as L } from "../src/internal/lifecycle.js"
import { makeToolRuntime } from "../src/internal/state.js"
import { assertWellFormed, faultySession, isDurable, layerWithFaults, live, ofType } from "./fixtures.js"

/** A real driver fiber, idle deferred and activity, so the states hold what the agent puts in them. */
const parts = Effect.gen(function*() {
  const driver = yield* Effect.fork(Effect.never)
  const idle = yield* Effect.makeLatch(false)
  const activity: Activity = {
    job: { _tag: "retry" },
    fiber: yield* Effect.fork(Effect.never),
    progress: yield* Ref.make<Progress>({ turn: undefined, step: 0, ended: undefined, maxTokens: false }),
    tools: makeToolRuntime(),
    window: true,
    cause: undefined,
    logContextOnClose: false,
    span: yield* Effect.makeSpan("Agent.turn")
  }
  return { driver, idle, activity }
})

type Parts = Effect.Effect.Success<typeof parts>

/** Every transition, by name, with fixed arguments. */
const transitions = ({ activity, driver, idle }: Parts): ReadonlyArray<
  readonly [string, (l: L) => Option.Option<L>]
> => [
  ["driverStarted", (l) => Lifecycle.driverStarted(l, driver, idle)],
  ["activityStarted", (l) => Lifecycle.activityStarted(l, activity)],
  ["cancelled", (l) => Lifecycle.cancelled(l, "user", false)],
  ["windowClosed", Lifecycle.windowClosed],
  ["activitySettled", Lifecycle.activitySettled],
  ["driverStopped", Lifecycle.driverStopped],
  ["disposed", Lifecycle.disposed]
]

/** The names of the transitions a state allows. */
const allowed = (p: Parts, l: L) => transitions(p).flatMap(([name, f]) => Option.isSome(f(l)) ? [name] : [])

const run = (l: L, ...steps: ReadonlyArray<(l: L) => Option.Option<L>>): L =>
  steps.reduce((acc, step) => Option.getOrThrow(step(acc)), l)

describe("lifecycle transitions (ADR 0021)", () => {
  it.scoped("every transition from Disposed is refused; from Idle only a driver or disposal", () =>
    Effect.gen(function*() {
      const p = yield* parts
      assert.deepStrictEqual(allowed(p, Lifecycle.Lifecycle.Disposed()), [])
      assert.deepStrictEqual(allowed(p, Lifecycle.initial), ["driverStarted", "disposed"])
      assert.isTrue(Lifecycle.isDisposed(Lifecycle.Lifecycle.Disposed()))
      assert.strictEqual(Lifecycle.status(Lifecycle.Lifecycle.Disposed()), "idle")
    }))

  it.scoped("a driver's life: started idle, running with an activity, back to Idle once it is settled", () =>
    Effect.gen(function*() {
      const p = yield* parts
      const started = run(Lifecycle.initial, (l) => Lifecycle.driverStarted(l, p.driver, p.idle))
      // A driver that has claimed nothing yet has reported nothing: the status is still idle, no window.
      assert.strictEqual(started._tag, "Running")
      assert.strictEqual(Lifecycle.status(started), "idle")
      assert.isFalse(Lifecycle.windowOpen(started))
      assert.deepStrictEqual(allowed(p, started), ["activityStarted", "driverStopped", "disposed"])

      const running = run(started, (l) => Lifecycle.activityStarted(l, p.activity))
      assert.strictEqual(Lifecycle.status(running), "running")
      assert.isTrue(Lifecycle.windowOpen(running))
      // One activity at a time, and the driver cannot stop under it.
      assert.deepStrictEqual(allowed(p, running), ["cancelled", "windowClosed", "activitySettled", "disposed"])

      const closed = run(running, Lifecycle.windowClosed)
      assert.isFalse(Lifecycle.windowOpen(closed))
      const between = run(closed, Lifecycle.activitySettled)
      // Between activities the driver keeps the status it reported until it finds nothing more to do.
      assert.strictEqual(Lifecycle.status(between), "running")
      assert.strictEqual(Lifecycle.activity(between), undefined)
      assert.strictEqual(run(between, Lifecycle.driverStopped)._tag, "Idle")
    }))

  it.scoped("the first cancel cause wins; any default cancel makes the close log staged context", () =>
    Effect.gen(function*() {
      const p = yield* parts
      const running = run(
        Lifecycle.initial,
        (l) => Lifecycle.driverStarted(l, p.driver, p.idle),
        (l) => Lifecycle.activityStarted(l, p.activity)
      )
      const kept = run(running, (l) => Lifecycle.cancelled(l, "user", true))
      assert.strictEqual(Lifecycle.cause(kept), "user")
      assert.isFalse(Lifecycle.activity(kept)!.logContextOnClose)
      const both = run(kept, (l) => Lifecycle.cancelled(l, "disposed", false))
      assert.strictEqual(Lifecycle.cause(both), "user")
      assert.isTrue(Lifecycle.activity(both)!.logContextOnClose)
      // Settling the activity takes its cause with it: the next activity starts uncancelled.
      const next = run(both, Lifecycle.activitySettled, (l) => Lifecycle.activityStarted(l, p.activity))
      assert.strictEqual(Lifecycle.cause(next), undefined)
    }))

  it.scoped("disposal while a driver runs: Disposing finishes its activity, starts nothing, ends Disposed", () =>
    Effect.gen(function*() {
      const p = yield* parts
      const disposing = run(
        Lifecycle.initial,
        (l) => Lifecycle.driverStarted(l, p.driver, p.idle),
        (l) => Lifecycle.activityStarted(l, p.activity),
        Lifecycle.disposed
      )
      assert.strictEqual(disposing._tag, "Disposing")
      assert.isTrue(Lifecycle.isDisposed(disposing))
      // The activity is still there to be cancelled and closed; the status stays what was reported.
      assert.strictEqual(Lifecycle.status(disposing), "running")
      assert.deepStrictEqual(allowed(p, disposing), ["cancelled", "windowClosed", "activitySettled"])
      const drained = run(disposing, Lifecycle.windowClosed, Lifecycle.activitySettled)
      assert.strictEqual(drained._tag, "Disposing")
      // No new activity (a retry chain ends here), no second disposal: only the driver's exit.
      assert.deepStrictEqual(allowed(p, drained), ["driverStopped"])
      assert.strictEqual(run(drained, Lifecycle.driverStopped)._tag, "Disposed")
      // An idle agent is disposed at once.
      assert.strictEqual(run(Lifecycle.initial, Lifecycle.disposed)._tag, "Disposed")
    }))
})

describe("lifecycle through the agent", () => {
  it.scoped(
    "R57: repairing a refused turn/end at the next turn's opening leaves that turn's window open (a steer joins it)",
    () =>
      Effect.gen(function*() {
        const { faults, session } = yield* faultySession
        const agent = yield* Agent.make({ model: "m", session })
        const rec = yield* EventRecorder.make(agent)
        const model = yield* S.ScriptedModel
        yield* model.push(S.textResponse("hi"))
        yield* faults.failWhen(SessionStore.anyEvent((e) => e.type === "turn/end"))
        yield* agent.followup(Message.make("first"))
        yield* agent.whenIdle
        yield* faults.clear
        yield* rec.clear
        // The second turn's opening repairs the first turn's close; then the model hangs mid-reply.
        yield* model.push(S.hanging(S.text("partial")), S.textResponse("steered"))
        yield* agent.followup(Message.make("second"))
        yield* rec.waitFor(isDurable("assistant/chunk"))
        assert.isTrue(yield* agent.acceptsNextStep)
        yield* rec.clear
        yield* agent.steer(Message.make("steer"))
        assert.deepStrictEqual(live(yield* rec.events, "agent/inbox/enqueue").map((e) => e.placement), ["steering"])
        yield* agent.cancel("user", { keepInbox: true })
        yield* agent.whenIdle
        const log = yield* agent.log
        assert.deepStrictEqual(ofType(log, "turn/end").map((e) => [e.data.turn, e.data.reason.kind]), [
          [1, "completed"],
          [2, "aborted"],
          [3, "completed"]
        ])
        assertWellFormed(log)
      }).pipe(Effect.provide(layerWithFaults()))
  )
})
