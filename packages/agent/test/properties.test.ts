/**
 * Property tests over random interleavings of `followup` / `steer` / `inject` / `send(next-turn, false)` / `cancel`
 * (with and without `keepInbox`) / `batch` of several of these / `retry` / `TestClock` advances / sends and cancels
 * made the moment a given durable event is published (as a `session/event` subscriber would), against a scripted
 * model whose replies are random: text; calls to one or two tools (quick; slow on the `TestClock`; slow with
 * `onCancel: "finish"`; one that steers, injects or cancels its own agent; one that attaches a context and may
 * conclude the turn); delayed replies; failures with codes, also after partial output; max-tokens; replies that
 * hang. Optional hooks: `promptSubmit` (allow, block, fail, slow, add a context), `requestError` (retry or fail), and
 * `step` / `turnStopping` hooks that steer, inject or fail. Resends of accepted ids must return the same id;
 * withdrawals take back an item pending now, or one just sent (a take-back). One property makes the store refuse
 * chosen appends; one runs on a durable (write-behind) store, then reopens the session and resumes it. Half of the runs use a store whose appends yield (as real I/O
 * does), and five in six preempt every fiber after 16–96 operations (often 16–32), so the test's operations also land
 * between the agent's critical sections. The reactive property's programs are episodes shaped for the interleavings
 * that broke before (PROPERTIES.md says how, what the runs reach, and which re-introduced bugs it finds). Every run
 * ends by disposing the agent (half of them after draining it to quiescence). Virtual time only; `problems` in properties-runner.ts
 * does the checking, with the folds of `Invariants` (@harness/testkit).
 *
 * Invariants checked after every run:
 *  1. FIFO conservation (R88): every enqueued id gets exactly one `dequeue` or one `discard` membership; the
 *     outstanding count never goes negative and is 0 after disposal; no dequeue/discard of an unknown id; no
 *     injected id in any inbox event (R29).
 *  2. Status trace (R23): starts idle, alternates running/idle, never repeats; turns start and settle only while
 *     `running`; never `idle` while a turn is open; `idle` at the end.
 *  3. Steering never lands in a closed turn: every `steering/message` names the open turn; and steering accepted
 *     into an open window is logged before that turn ends normally (a turn ending aborted, disposed or in error
 *     leaves it staged for the next turn, R56/R81).
 *  4. Message fates: every accepted id ends in exactly one of {logged, discarded and reported, dropped at admission
 *     (dequeued as a prompt, never logged)}; nothing is still pending after disposal.
 *  5. One send, one turn (R32): a logged queued prompt is inside a turn, alone.
 *  6. Every turn that ends settles exactly once, unless a retry turn follows it at once (R57).
 *  7. Admission (R45, R80): a turn's opening keeps R45's order (steering staged before its prompt was claimed
 *     precedes the prompt, steering accepted during the admission follows it); a prompt whose admission saw an
 *     effective cancel is dropped, never opening a turn.
 *  8. No injected context is ever lost: every injected id is logged exactly once, as a `user/message`.
 *  9. Tool contexts are never lost: every successful `annotate` result's context is logged exactly once (R68), and
 *     none is logged for a call that did not succeed.
 * 10. With `keepInbox`-only cancels nothing is discarded before disposal.
 * 11. The log is well formed: `LogCheck.checkLog(log) = []` (gap-free seq, turns numbered and closed, steps nested,
 *     every tool call answered once).
 * 12. Every operation returns (no deadlock), disposal finishes, and `agent/disposed` is the last event.
 * 13. At quiescence (`whenIdle` resolved): `idle`, `acceptsNextStep` false, every queued item still outstanding is a
 *     parked one (R25, R31), and invariants 1–7 and 11 hold on the events and log so far.
 * 14. Without cancels and without a rejecting admission hook, no prompt is dropped, and a run without hanging
 *     replies always reaches quiescence.
 * 15. R31: a parked item is claimed only for a waking item queued behind it, still outstanding (not withdrawn).
 * 16. On a durable store (ADR 0008, ADR 0017): every send's acceptance and every withdrawal is in the store when the
 *     call returns; after disposal the reopened session's pending inbox holds only accepted items that were neither
 *     logged nor withdrawn, every prompt claimed when the process ended, and — after a drained run — exactly what
 *     `inbox` listed at quiescence; resumed (`restoredInbox` wake or park) and sent one follow-up, the agent logs
 *     restored context at once and runs every restored item once, in order, before that follow-up; no message is
 *     logged twice over both processes, and the log stays well formed.
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message } from "@harness/domain"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, FastCheck as fc, Schema } from "effect"
import type { Scenario } from "./properties-arbitraries.js"
import { faultPositions, scenario } from "./properties-arbitraries.js"
import type { CheckOptions, Tally } from "./properties-runner.js"
import { describeScenario, problems, run, tally } from "./properties-runner.js"

/** Runs a scenario and asserts that it broke nothing (see `problems`). */
const check = (scenario: Scenario, options: CheckOptions = {}) =>
  Effect.gen(function*() {
    const outcome = yield* run(scenario)
    assert.deepStrictEqual(problems(outcome, options), [], `scenario: ${describeScenario(scenario)}`)
  })

/**
 * The bound of each property: CPU only (the TestClock, in-memory stores), deterministic for its seed; up to 74 s
 * beside a CPU hog where a quiet machine takes a few, so vitest's clock must not decide it.
 */
const slow = 300_000
/** The least share of the durable sample whose run rolls a turn back (measured: see PROPERTIES.md). */
const ROLLBACK_FLOOR = 0.025

describe("properties: random interleavings", () => {
  it.scoped.prop(
    "R88, R23, R28–R31, R77–R85: every invariant holds over random sends, batches, cancels and clock advances",
    { scenario: scenario() },
    ({ scenario }) => check(scenario),
    { timeout: slow, fastCheck: { numRuns: 100 } }
  )

  it.scoped.prop(
    "R24, R47–R57: sends and cancels reacting to durable events (the window's edges) keep every invariant",
    { scenario: scenario({ reactive: true }) },
    ({ scenario }) => check(scenario),
    { timeout: slow, fastCheck: { numRuns: 100 } }
  )

  it.scoped.prop(
    "R77, R81: with keepInbox-only cancels nothing is ever discarded (before disposal)",
    { scenario: scenario({ cancels: "keepInbox" }) },
    ({ scenario }) => check(scenario, { keepInboxOnly: true }),
    { timeout: slow, fastCheck: { numRuns: 50 } }
  )

  it.scoped.prop(
    "R43, R60: appends the store refuses (prompts, steering, context, chunks, turn/start, headers, steps) lose nothing accepted and leave the log well formed",
    { scenario: scenario({ faults: true }) },
    ({ scenario }) => check(scenario),
    { timeout: slow, fastCheck: { numRuns: 50 } }
  )

  it.scoped.prop(
    "ADR 0008, ADR 0017: on a durable (write-behind) store every send and withdrawal is stored when it returns, and a restart restores exactly what was pending",
    { scenario: scenario({ durable: true }) },
    ({ scenario }) => check(scenario),
    { timeout: slow, fastCheck: { numRuns: 30 } }
  )

  it.scoped.prop(
    "R25, R32, R42: without cancels or rejecting admissions no prompt is dropped, and the agent reaches quiescence",
    { scenario: scenario({ cancels: "none", rejects: false, hang: false, end: "drain" }) },
    ({ scenario }) => check(scenario, { quiescence: true, noDrops: true }),
    { timeout: slow, fastCheck: { numRuns: 50 } }
  )
})

describe("properties: the generators reach the interleavings that broke before", () => {
  // Counted over a fixed sample, so a change that narrows a generator again fails here instead of silently
  // making the properties above weaker.
  it("preemption budgets cover the narrow windows; store faults land within a run's appends", () => {
    const sample = fc.sample(scenario({ faults: true }), { numRuns: 2_000, seed: 42 })
    const share = (predicate: (scenario: Scenario) => boolean) => sample.filter(predicate).length / sample.length
    const budget = (from: number, to: number) => share((s) => s.maxOps >= from && s.maxOps <= to)
    assert.isAbove(budget(16, 96), 0.65)
    for (const [from, to] of [[23, 31], [36, 39], [51, 54]] as const) assert.isAbove(budget(from, to), 0.015)
    assert.isBelow(share((s) => s.maxOps === 2048), 0.35)
    assert.strictEqual(share((s) => (s.faults ?? []).every((position) => position < faultPositions)), 1)
    assert.isAbove(share((s) => (s.faults ?? []).some((position) => position < 5)), 0.5)
  })

  // What the runs themselves reach (not what the generators draw): a fixed sample of each property's scenarios is
  // played, and `tally` reads from each run's events which interleavings it reached. The floors are well below what
  // the sample reaches (see PROPERTIES.md), and well above what the generators reached before they were reshaped.
  const reached = (sample: ReadonlyArray<Scenario>) =>
    Effect.gen(function*() {
      const tallies: Array<Tally> = []
      for (const scenario of sample) tallies.push(tally(yield* Effect.scoped(run(scenario))))
      const share = (predicate: (t: Tally) => boolean) => tallies.filter(predicate).length / tallies.length
      const fired = tallies.reduce((n, t) => n + t.reactions.fired, 0)
      const missed = tallies.reduce((n, t) => n + t.reactions.missed, 0)
      return {
        tool: share((t) => t.tool),
        steerOrCancelWhileTool: share((t) => t.steerOrCancelWhileTool),
        cancelAsBatchStarts: share((t) => t.cancelAsBatchStarts),
        refused: share((t) => t.refused > 0),
        withdrew: share((t) => t.withdrew),
        restored: share((t) => t.restored),
        expired: share((t) => t.expired),
        superseded: share((t) => t.superseded),
        rolledBack: share((t) => t.rolledBack),
        fired: fired + missed === 0 ? 0 : fired / (fired + missed)
      }
    })

  it.effect(
    "reactive runs: reactions fire, tools run, steering and cancels land while a tool runs and as a batch starts",
    () =>
      Effect.gen(function*() {
        // Before the reshaping (the same sample and tally): fired 13 %, tool 20 %, steering or a cancel while a tool
        // runs 10 %, a cancel as a batch starts 6 %. (Steering after a concluding step's `step/end`, once counted
        // here, can no longer happen: that step ends its turn in the same section, R54 and the regression below.)
        const shares = yield* reached(fc.sample(scenario({ reactive: true }), { numRuns: 200, seed: 7 }))
        const shown = JSON.stringify(shares)
        assert.isAtLeast(shares.fired, 0.4, shown)
        assert.isAtLeast(shares.tool, 0.55, shown)
        assert.isAtLeast(shares.steerOrCancelWhileTool, 0.25, shown)
        assert.isAtLeast(shares.cancelAsBatchStarts, 0.2, shown)
      }),
    { timeout: slow }
  )

  it.effect(
    "durable runs: withdrawals find their item pending, restarts restore pending items, stale sends expire and supersede",
    () =>
      Effect.gen(function*() {
        // Before `withdraw` drew pending items and take-backs existed: 4 % of the main property's runs withdrew an
        // item (0 % of the reactive ones); no run was on a durable store or restarted.
        const shares = yield* reached(fc.sample(scenario({ durable: true }), { numRuns: 40, seed: 7 }))
        assert.isAtLeast(shares.withdrew, 0.2, JSON.stringify(shares))
        assert.isAtLeast(shares.restored, 0.2, JSON.stringify(shares))
        // Stale sends (ADR 0059) expire and supersede in a fair share of the runs, restarts included.
        assert.isAtLeast(shares.expired, 0.1, JSON.stringify(shares))
        assert.isAtLeast(shares.superseded, 0.05, JSON.stringify(shares))
        // A rollback (ADR 0061) lands on a running turn in a share of the runs, restarts included.
        assert.isAtLeast(shares.rolledBack, ROLLBACK_FLOOR, JSON.stringify(shares))
      }),
    { timeout: slow }
  )

  it.effect("store-fault runs: most runs have an append refused", () =>
    Effect.gen(function*() {
      // Before: 49 % of the runs had an append refused.
      const shares = yield* reached(fc.sample(scenario({ faults: true }), { numRuns: 100, seed: 7 }))
      assert.isAtLeast(shares.refused, 0.55, JSON.stringify(shares))
    }), { timeout: slow })
})

/** A tool whose successful result concludes the turn (R70). */
const concludeTool = AgentTool.make(Tool.make("conclude", { parameters: {}, success: Schema.String }), {
  handler: () => Effect.succeed(AgentTool.outcome("done", { concludeTurn: true }))
})

/** Runs a scenario under every preemption budget from 16 to 80 and asserts that none broke anything. */
const replay = (scenario: Omit<Scenario, "maxOps">) =>
  Effect.gen(function*() {
    const broken: Record<number, ReadonlyArray<string>> = {}
    for (let maxOps = 16; maxOps <= 80; maxOps++) {
      const found = problems(yield* Effect.scoped(run({ ...scenario, maxOps })))
      if (found.length > 0) broken[maxOps] = found
    }
    assert.deepStrictEqual(broken, {}, `scenario (every budget): ${JSON.stringify(scenario)}`)
  })

describe("regressions", () => {
  // Found by the store-fault property once promote joined the generators (ADR 0050), then shrunk: a queued follow-up
  // promoted while an admission runs becomes steering; the admission fails, so the steering stays staged (R43) and
  // does not wake the agent. The run's own model took it for a waking queued item left at quiescence: the checks now
  // follow `agent/inbox/place`.
  it.scoped("R43, R138: a follow-up promoted during an admission that fails stays staged steering, not a waking queued item", () =>
    check({
      ops: [
        {
          _tag: "batch",
          items: [{ _tag: "send", kind: "followup" }, { _tag: "send", kind: "followup" }, {
            _tag: "send",
            kind: "followup"
          }]
        },
        { _tag: "resend", pick: 0 },
        { _tag: "change", change: "promote", pick: 13, position: 0 },
        { _tag: "send", kind: "followup" }
      ],
      replies: [],
      admission: ["fail"],
      faults: [0],
      end: "drain",
      yieldingStore: false,
      maxOps: 17,
      seed: 0
    }))

  // The durable property's counterexample (seed 1514370368): a parked item promoted to steering, then demoted, is a
  // waking queued turn (ADR 0050); R31's check took it for parked still and reported its claim as one with no waking
  // item behind it.
  it.scoped("R31, ADR 0050: a parked item promoted, then demoted, is claimed as the waking turn it became", () =>
    check({
      ops: [
        { _tag: "busy", kind: "followup", whenBusy: "reject" },
        { _tag: "send", kind: "park" },
        { _tag: "change", change: "promote", pick: 0, position: 0 },
        { _tag: "change", change: "demote", pick: 0, position: 0 }
      ],
      replies: [],
      admission: ["slow"],
      end: "drain",
      yieldingStore: false,
      maxOps: 16,
      seed: 0,
      durable: true,
      resume: "wake"
    }))

  // The interleaving property's counterexample (seed 877521773): steering staged in turn 1 survives the interrupting
  // follow-up's cancel, is edited while that follow-up's admission runs, and must still open turn 2 before the prompt
  // (it was staged before the claim). The edit replaces the outbox item's object; the claim's retained set used to
  // hold objects, so the edited steering was logged after the prompt.
  it.scoped("R45: steering edited during an admission stays retained: logged before the prompt it was staged before", () =>
    check({
      ops: [
        { _tag: "send", kind: "followup" },
        { _tag: "send", kind: "steer" },
        { _tag: "busy", kind: "followup", whenBusy: "interrupt" },
        { _tag: "change", change: "edit", pick: 0, position: 0 },
        { _tag: "take-back", kind: "park" }
      ],
      replies: [],
      end: "dispose",
      yieldingStore: false,
      maxOps: 16,
      seed: 0
    }))

  // The reactive property's counterexample (shrunk by fast-check, then by hand): a follow-up whose only reply calls a
  // turn-concluding tool, and a steer sent as soon as `step/end` is published. Under some preemption budgets the steer
  // is accepted as steering while the window is still open, and turn 1 ends `completed` without it. Which budgets
  // reach the gap depends on how many operations everything before it takes, so the replay sweeps a range.
  it.scoped("R24, R54: replay — a steer right after a concluding step's step/end, over preemption budgets 16–80", () =>
    replay({
      ops: [
        { _tag: "send", kind: "followup" },
        { _tag: "on", event: "step/end", item: { _tag: "send", kind: "steer" } }
      ],
      replies: [{ _tag: "tools", calls: [{ tool: "annotate", conclude: true }] }],
      end: "dispose",
      yieldingStore: false,
      seed: 0
    }))

  // Found by the reactive property as a run that never ended, then shrunk: a cancel that lands just as the activity
  // enters `runToolCalls` leaves the activity fiber suspended forever, so the turn is never closed, `whenIdle` never
  // resolves and disposal hangs. The cause is upstream (effect 3.22.4): a fiber interrupted at a preemption point
  // while `Effect.all(..., { concurrency })` is starting its children never completes; `runToolCalls` runs its
  // start and commit loops that way.
  for (const keepInbox of [false, true]) {
    it.scoped(
      `R72, R81, R86: replay — cancel${keepInbox ? " with keepInbox" : ""} as the tool batch starts: the turn closes ` +
        "and disposal finishes, over preemption budgets 16–80",
      () =>
        replay({
          ops: [
            { _tag: "send", kind: "followup" },
            { _tag: "on", event: "assistant/message", item: { _tag: "cancel", keepInbox } }
          ],
          replies: [{ _tag: "tools", calls: [{ tool: "quick" }] }],
          end: "dispose",
          yieldingStore: false,
          seed: 0
        })
    )
  }

  // The reshaped reactive property's own counterexamples, as fast-check shrank them, when each of the two bugs above
  // was re-introduced (PROPERTIES.md): steering stranded after a concluding step (found as `steering-joins-turn`),
  // and the deadlock of a cancel landing as a tool batch starts (found as an operation that never returned).
  it.scoped("R24, R54: the reactive property's shrunk case — a steer on a concluding step's step/end, budget 18", () =>
    check({
      ops: [
        { _tag: "settle" },
        {
          _tag: "script",
          replies: [{ _tag: "tools", calls: [{ tool: "annotate", conclude: true }, { tool: "quick" }] }]
        },
        { _tag: "send", kind: "followup" },
        { _tag: "on", event: "step/end", item: { _tag: "send", kind: "steer" } }
      ],
      replies: [],
      end: "dispose",
      yieldingStore: false,
      maxOps: 18,
      seed: 0
    }))

  it.scoped("R72, R81: the reactive property's shrunk case — a keepInbox cancel as a tool batch starts, budget 16", () =>
    check({
      ops: [
        { _tag: "settle" },
        { _tag: "script", replies: [{ _tag: "tools", calls: [{ tool: "slow", ms: 0 }] }] },
        { _tag: "send", kind: "followup" },
        { _tag: "on", event: "assistant/message", item: { _tag: "cancel", keepInbox: true } }
      ],
      replies: [],
      end: "dispose",
      yieldingStore: false,
      maxOps: 16,
      seed: 0
    }))

  // Found by the main property (`settled-once`), shrunk by fast-check: a follow-up whose request fails, a
  // `requestError` hook that answers `retry`, and a cancel sent as soon as the failed turn's `turn/end` is published.
  it.scoped("R57, R75: replay — cancel right after a failed turn whose hook asked for a retry", () =>
    check({
      ops: [
        { _tag: "on", event: "turn/start", item: { _tag: "send", kind: "followup" } },
        { _tag: "on", event: "turn/end", item: { _tag: "cancel", keepInbox: false } }
      ],
      replies: [],
      retries: [true],
      end: "dispose",
      yieldingStore: false,
      maxOps: 2048,
      seed: 0
    }))

  // The same, by hand. The driver settles the failed turn by starting the retry activity (no `agent/settled`: only
  // the last turn of a retry chain settles), but the retry turn's `turn/start` is written later, by that activity. A
  // cancel landing in between interrupts the retry before it opens a turn, and the no-turn path of `settle` publishes
  // nothing: the failed turn, now the last of its chain, never settles. Without the `yieldNow` the cancel lands
  // before the driver decides, the retry is dropped, and turn 1 settles `error` — the expected outcome both ways.
  for (const gap of [false, true]) {
    it.scoped(`R57, R75: a cancel between a failed turn and its retry's turn/start settles the failed turn once (gap: ${gap})`, () =>
      Effect.gen(function*() {
        const agent = yield* Agent.make({
          model: "scripted",
          hooks: { requestError: () => Effect.succeed("retry" as const) }
        })
        const recorder = yield* EventRecorder.make(agent)
        yield* (yield* S.ScriptedModel).push(S.failure("SERVER"), S.textResponse("recovered"))
        yield* agent.followup(Message.make("go"))
        yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "turn/end")
        if (gap) yield* Effect.yieldNow()
        yield* agent.cancel("user")
        yield* agent.whenIdle
        const events = yield* recorder.events
        const log = yield* agent.log
        const settled = events.flatMap((e) => (e.type === "agent/settled" ? [[e.turn, e.reason.kind]] : []))
        // A retry turn that did open must be the one that settles; one that did not leaves turn 1 as the last.
        const turns = log.filter((e) => e.type === "turn/start").length
        assert.deepStrictEqual(settled, turns === 1 ? [[1, "error"]] : [[turns, "aborted"]])
        assert.strictEqual(Invariants.render(Invariants.settledOnce(events, { final: true })), "")
        assert.strictEqual(Invariants.render(Invariants.logWellFormed(log)), "")
        assert.strictEqual(yield* agent.status, "idle")
      }).pipe(Effect.provide(S.layer())))
  }

  // Found by the main property once `Invariants.admissionCancel` existed: a cancel accepted while a claimed prompt
  // is still being admitted (its `dequeue` published, no `turn/start` yet) must drop the prompt — no turn opens, no
  // `turn/end`, no `agent/settled` (R80). When the activity has finished `promptSubmit` and is waiting for the lock
  // to open the turn, it waits uninterruptibly, so it opens the turn after the cancel and only then aborts: the
  // prompt is logged, `turn/start`…`turn/end { aborted }` and `settled` follow. With a default cancel that also
  // discards staged steering, the opening's retained count is stale and steering accepted during the admission is
  // logged before the prompt (R45). Preemption budgets make the activity reach that wait at the cancel.
  for (const keepInbox of [false, true]) {
    it.scoped(
      `R80, R45: replay — a ${
        keepInbox ? "keepInbox " : ""
      }cancel right after a follow-up is claimed drops the prompt, ` +
        "over preemption budgets 16–80",
      () =>
        replay({
          ops: [
            { _tag: "send", kind: "followup" },
            { _tag: "batch", items: [{ _tag: "cancel", keepInbox }, { _tag: "send", kind: "steer" }] }
          ],
          replies: [{ _tag: "text" }, { _tag: "text" }],
          end: "dispose",
          yieldingStore: false,
          seed: 0
        })
    )
  }

  // Found while writing `Invariants.steeringJoinsTurn` and reproduced by hand: after a concluding step's D2 drain and
  // `step/end`, the window used to stay open until a separate critical section wrote `turn/end`, and a steer
  // accepted in that gap was published as joining the turn but never drained into it. That section is now the one
  // that writes `step/end` (R54): a steer sent on `step/end` finds the turn ended and runs as a turn of its own,
  // under every preemption budget (each budget is deterministic).
  it.scoped("R24, R54, R57: a concluding step ends its turn in the section of its step/end; a steer sent then runs later", () =>
    Effect.gen(function*() {
      for (let maxOps = 16; maxOps <= 64; maxOps++) {
        yield* Effect.gen(function*() {
          const agent = yield* Agent.make({ model: "scripted", tools: [concludeTool] })
          const recorder = yield* EventRecorder.make(agent)
          yield* (yield* S.ScriptedModel).push(S.toolCallResponse(S.toolCall("conclude", {})), S.textResponse("again"))
          yield* agent.followup(Message.make("go"))
          yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "step/end")
          const id = yield* agent.steer(Message.make("late steer"))
          yield* agent.whenIdle
          const events = yield* recorder.events
          const log = yield* agent.log
          assert.strictEqual(Invariants.render(Invariants.logWellFormed(log)), "")
          assert.strictEqual(Invariants.render(Invariants.steeringJoinsTurn(events)), "")
          const stepEnd = log.findIndex((e) => e.type === "step/end" && e.data.turn === 1)
          const steer = log.findIndex((e) =>
            (e.type === "steering/message" || e.type === "user/message") && e.data.messageId === id
          )
          assert.deepStrictEqual(
            {
              maxOps,
              afterStepEnd: log[stepEnd + 1]?.type,
              reason: log[stepEnd + 1]?.type === "turn/end" ? log[stepEnd + 1]!.data : undefined,
              steerAfterTurn1: steer > stepEnd + 1,
              fate: Invariants.fates(events, log, [id]).get(id)
            },
            {
              maxOps,
              afterStepEnd: "turn/end",
              reason: { turn: 1, reason: { kind: "completed" } },
              steerAfterTurn1: true,
              fate: "logged"
            }
          )
        }).pipe(Effect.withMaxOpsBeforeYield(maxOps), Effect.scoped, Effect.provide(S.layer()))
      }
    }))
})
