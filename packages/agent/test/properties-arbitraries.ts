/**
 * The property tests' scenarios and their arbitraries: a scenario is a random program of sends, cancels, batches,
 * retries and clock advances, against a random script of model replies, tools and hooks, with a preemption budget
 * and optional store faults. `properties-runner.ts` plays one against a real agent and checks what it left behind.
 */
import type { LlmFailure } from "@harness/domain"
import { FastCheck as fc } from "effect"

// ---------------------------------------------------------------------------------------------------------------
// Scenarios

/** How a message is sent. `park` is `send(next-turn, wakeup: false)`. */
export type SendKind = "followup" | "steer" | "inject" | "park"

/** One operation of a batch. */
type BatchItem =
  | { readonly _tag: "send"; readonly kind: SendKind }
  | { readonly _tag: "cancel"; readonly keepInbox: boolean }

/** A sender taking back what it just sent: a send of `kind`, then `withdraw` of the id it returned. */
interface TakeBack {
  readonly _tag: "take-back"
  readonly kind: "followup" | "steer" | "park"
}

/** One step of a program, run by the test fiber in order. */
export type Op =
  | BatchItem
  | { readonly _tag: "batch"; readonly items: ReadonlyArray<BatchItem> }
  | { readonly _tag: "advance"; readonly ms: number }
  | { readonly _tag: "yield"; readonly times: number }
  | { readonly _tag: "retry" }
  | { readonly _tag: "on"; readonly event: Trigger; readonly item: BatchItem | TakeBack }
  | { readonly _tag: "resend"; readonly pick: number }
  /**
   * Withdraw an id: with `pending`, one of the items pending now (as `inbox` lists them; any accepted id when none
   * is); otherwise any id a send returned (most of them are logged or discarded by then: `NotPending`).
   */
  | { readonly _tag: "withdraw"; readonly pick: number; readonly pending: boolean }
  | TakeBack
  /**
   * Change one of the items pending now (ADR 0050): edit its content, move it to `position`, promote or demote it;
   * a refusal (`InboxChangeError`) is an expected answer.
   */
  | {
    readonly _tag: "change"
    readonly change: "edit" | "move" | "promote" | "demote"
    readonly pick: number
    readonly position: number
  }
  /**
   * A send of stale input (ADR 0059): with a `ttl` (ms on the `TestClock`), a `supersedes` key, or both; at least one
   * is set. Keys are few, so later sends supersede earlier ones often.
   */
  | {
    readonly _tag: "stale"
    readonly kind: "followup" | "steer" | "park"
    readonly ttl: number | undefined
    readonly key: "a" | "b" | undefined
  }
  /**
   * A send with `whenBusy` (ADR 0050, ADR 0061): a follow-up that, if a turn runs at that instant,
   * is refused (`reject`), steers, interrupts the turn, or rolls it back. `TurnRunningError` is an expected answer.
   */
  | {
    readonly _tag: "busy"
    readonly kind: "followup"
    readonly whenBusy: "reject" | "steer" | "interrupt" | "rollback"
  }
  /** Let the agent run (advancing the clock) until it is idle, or nothing is left to wake it (bounded). */
  | { readonly _tag: "settle" }
  /** Append these replies to the model's script (an episode's own replies, pushed as it starts). */
  | { readonly _tag: "script"; readonly replies: ReadonlyArray<ReplySpec> }

/** The durable events an `on` operation reacts to: it waits (a bounded number of yields) for the next one. */
type Trigger =
  | "turn/start"
  | "step/start"
  | "assistant/message"
  | "tool/call"
  | "tool/result"
  | "step/end"
  | "turn/end"

/** A tool call a reply makes. */
type CallSpec =
  | { readonly tool: "quick" }
  | { readonly tool: "slow"; readonly ms: number }
  | { readonly tool: "stubborn"; readonly ms: number }
  | { readonly tool: "nudge"; readonly kind: "steer" | "inject" | "cancel" | "cancel-keep" }
  | { readonly tool: "annotate"; readonly conclude: boolean }

/** One scripted model reply. */
export type ReplySpec =
  | { readonly _tag: "text" }
  | { readonly _tag: "tools"; readonly calls: ReadonlyArray<CallSpec> }
  | { readonly _tag: "delayed"; readonly ms: number }
  | { readonly _tag: "failure"; readonly code: LlmFailure.LlmFailureCode; readonly partial: boolean }
  | { readonly _tag: "maxTokens" }
  | { readonly _tag: "hang" }

/** What a `step` or `turnStopping` hook does once: nothing, steer, inject, or fail (which fails the turn). */
export type Nudge = "none" | "steer" | "inject" | "fail"

/** What the `promptSubmit` hook decides for one admission (cycled through). */
export type Admission = "allow" | "block" | "fail" | "slow" | "context"

/** A whole random run. */
export interface Scenario {
  readonly ops: ReadonlyArray<Op>
  readonly replies: ReadonlyArray<ReplySpec>
  /** The `promptSubmit` hook's decisions, cycled; no hook when absent. */
  readonly admission?: ReadonlyArray<Admission> | undefined
  /** The `requestError` hook's answers (true = retry), each used once, then `fail`; no hook when absent. */
  readonly retries?: ReadonlyArray<boolean> | undefined
  /** What the `step` hook does at each step, in order, then nothing; no hook when absent. */
  readonly steps?: ReadonlyArray<Nudge> | undefined
  /** What the `turnStopping` hook does each time, in order, then nothing; no hook when absent. */
  readonly stopping?: ReadonlyArray<Nudge> | undefined
  /** `drain`: advance the clock until `whenIdle` resolves (bounded) before disposing; `dispose`: dispose at once. */
  readonly end: "dispose" | "drain"
  /**
   * Store faults: the appends (counting only those of `user/message`, `steering/message`, `assistant/chunk`,
   * `turn/start`, `request/header` and `step/start`) whose attempt number is listed fail, until disposal begins.
   */
  readonly faults?: ReadonlyArray<number> | undefined
  /** Every log append yields (as a store doing real I/O would), so the test's operations interleave at each one. */
  readonly yieldingStore: boolean
  /**
   * The store is a durable one (write-behind, not volatile): the log commits from a writer fiber and the agent
   * places its durability barriers; after disposal the session is reopened and resumed (see the runner's `restart`).
   */
  readonly durable?: boolean | undefined
  /** How the agent that resumes a durable run's session restores its inbox (`restoredInbox`). */
  readonly resume?: "wake" | "park" | undefined
  /**
   * Preempt every fiber after this many operations (`Effect.withMaxOpsBeforeYield`; the runtime's default is 2048),
   * so the agent's fibers and the test's also interleave between the agent's critical sections. (Values of 8 or
   * less livelock Effect 3.22's runtime: a resumed fiber yields again before it runs anything.)
   */
  readonly maxOps: number
  /** The seed of the agent's `Random` (message ids). */
  readonly seed: number
}

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries

const ms = fc.constantFrom(0, 1, 10, 100, 1000, 3000)

const sendKind: fc.Arbitrary<SendKind> = fc.constantFrom("followup", "steer", "inject", "park")

const batchItem = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<BatchItem> => {
  const send = sendKind.map((kind): BatchItem => ({ _tag: "send", kind }))
  if (cancels === "none") return send
  const keepInbox = cancels === "keepInbox" ? fc.constant(true) : fc.boolean()
  return fc.oneof(
    { arbitrary: send, weight: 4 },
    { arbitrary: keepInbox.map((keepInbox): BatchItem => ({ _tag: "cancel", keepInbox })), weight: 1 }
  )
}

const trigger: fc.Arbitrary<Trigger> = fc.constantFrom(
  "turn/start",
  "step/start",
  "assistant/message",
  "tool/call",
  "tool/result",
  "step/end",
  "turn/end"
)

/** A take-back, most often of a parked send (which stays pending until a waking send claims it). */
const takeBack: fc.Arbitrary<TakeBack> = fc.constantFrom<TakeBack["kind"]>("park", "park", "followup", "steer").map((
  kind
): TakeBack => ({
  _tag: "take-back",
  kind
}))

/** A stale send: a ttl among the clock steps the programs take, a key of two, or both. */
const stale: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom("followup" as const, "steer" as const, "park" as const, "park" as const, "park" as const),
  ttl: fc.option(fc.constantFrom(0, 10, 100, 1000, 3000), { nil: undefined }),
  key: fc.option(fc.constantFrom("a" as const, "a" as const, "b" as const), { nil: undefined })
}).map(({ key, kind, ttl }): Op => ({ _tag: "stale", kind, ttl: ttl ?? (key === undefined ? 100 : undefined), key }))

/** A `whenBusy` send; `interrupt` and `rollback` cancel (keeping the inbox), so only where cancels are allowed. */
const busy = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<Op> =>
  fc.record({
    // A parked send that found a turn running would be routed as a waking one (steering, or the head of the queue):
    // the checks count parked sends by how they were sent, so these are follow-ups.
    kind: fc.constant("followup" as const),
    whenBusy: cancels === "none"
      ? fc.constantFrom("reject" as const, "steer" as const)
      : fc.constantFrom(
        "reject" as const,
        "steer" as const,
        "interrupt" as const,
        "rollback" as const,
        "rollback" as const
      )
  }).map((busy): Op => ({ _tag: "busy", ...busy }))

/**
 * A random operation. `cancels` limits the cancels it may contain. (Reactive programs are built from episodes
 * instead: see {@link episode}.)
 */
const op = (cancels: "any" | "keepInbox" | "none" = "any"): fc.Arbitrary<Op> =>
  fc.oneof(
    { arbitrary: batchItem(cancels), weight: 8 },
    {
      arbitrary: fc.array(batchItem(cancels), { minLength: 2, maxLength: 4 }).map((items): Op => ({
        _tag: "batch",
        items
      })),
      weight: 2
    },
    { arbitrary: ms.map((ms): Op => ({ _tag: "advance", ms })), weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: 20 }).map((times): Op => ({ _tag: "yield", times })), weight: 3 },
    { arbitrary: fc.constant<Op>({ _tag: "retry" }), weight: 1 },
    { arbitrary: fc.nat({ max: 20 }).map((pick): Op => ({ _tag: "resend", pick })), weight: 1 },
    // Mostly an item pending now, or one just sent: drawn from every accepted id, a withdrawal found a live item in
    // 4 % of the runs (0 % of the reactive ones).
    {
      arbitrary: fc.record({ pick: fc.nat({ max: 20 }), pending: fc.constantFrom(true, true, true, false) }).map((
        withdraw
      ): Op => ({ _tag: "withdraw", ...withdraw })),
      weight: 2
    },
    { arbitrary: takeBack, weight: 3 },
    {
      arbitrary: fc.record({
        change: fc.constantFrom("edit" as const, "move" as const, "promote" as const, "demote" as const),
        pick: fc.nat({ max: 20 }),
        position: fc.nat({ max: 4 })
      }).map((change): Op => ({ _tag: "change", ...change })),
      weight: 2
    },
    { arbitrary: stale, weight: 4 },
    { arbitrary: busy(cancels), weight: 3 },
    {
      arbitrary: fc.record({ event: trigger, item: batchItem(cancels) }).map((on): Op => ({ _tag: "on", ...on })),
      weight: 4
    }
  )

/**
 * The events a reaction waits for, weighted towards the edges where earlier bugs hid: a tool call starting or
 * ending (steering or a cancel while a tool runs), a step's `step/end` (steering after a concluding step), the
 * assistant message that starts a tool batch (a cancel as the batch starts).
 */
const reactionTrigger: fc.Arbitrary<Trigger> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Trigger>("tool/call") },
  { weight: 3, arbitrary: fc.constant<Trigger>("step/end") },
  { weight: 3, arbitrary: fc.constant<Trigger>("assistant/message") },
  { weight: 2, arbitrary: fc.constant<Trigger>("tool/result") },
  { weight: 1, arbitrary: fc.constantFrom<Trigger>("turn/start", "step/start", "turn/end") }
)

/**
 * What a reaction does: mostly steer or cancel (the operations that race the agent's own sections); sometimes a
 * steer or follow-up taken back at once (a withdrawal racing the step that would drain or claim it).
 */
const reactionItem = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<BatchItem | TakeBack> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constant<BatchItem | TakeBack>({ _tag: "send", kind: "steer" }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom("steer" as const, "followup" as const).map((kind): TakeBack => ({
        _tag: "take-back",
        kind
      }))
    },
    ...(cancels === "none" ? [] : [{
      weight: 3,
      arbitrary: (cancels === "keepInbox" ? fc.constant(true) : fc.boolean()).map((keepInbox): BatchItem => ({
        _tag: "cancel",
        keepInbox
      }))
    }]),
    { weight: 2, arbitrary: sendKind.map((kind): BatchItem => ({ _tag: "send", kind })) }
  )

const callSpec = (cancels: "any" | "keepInbox" | "none", toolHeavy = false): fc.Arbitrary<CallSpec> => {
  const nudges: Array<"steer" | "inject" | "cancel" | "cancel-keep"> = cancels === "none"
    ? ["steer", "inject"]
    : cancels === "keepInbox"
    ? ["steer", "inject", "cancel-keep"]
    : ["steer", "inject", "cancel", "cancel-keep"]
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant<CallSpec>({ tool: "quick" }) },
    // Tool-heavy scripts favour calls that stay running on the clock, and turn-concluding calls.
    { weight: toolHeavy ? 2 : 1, arbitrary: ms.map((ms): CallSpec => ({ tool: "slow", ms })) },
    { weight: 1, arbitrary: ms.map((ms): CallSpec => ({ tool: "stubborn", ms })) },
    { weight: 1, arbitrary: fc.constantFrom(...nudges).map((kind): CallSpec => ({ tool: "nudge", kind })) },
    {
      weight: toolHeavy ? 2 : 1,
      arbitrary: (toolHeavy ? fc.constantFrom(true, true, false) : fc.boolean()).map((conclude): CallSpec => ({
        tool: "annotate",
        conclude
      }))
    }
  )
}

const failureCode: fc.Arbitrary<LlmFailure.LlmFailureCode> = fc.constantFrom("RATE_LIMIT", "SERVER", "TIMEOUT", "AUTH")

/** A random reply. `hang` allows replies that never finish; `toolHeavy` makes most replies call tools. */
const reply = (
  hang = true,
  cancels: "any" | "keepInbox" | "none" = "any",
  toolHeavy = false
): fc.Arbitrary<ReplySpec> =>
  fc.oneof(
    { arbitrary: fc.constant<ReplySpec>({ _tag: "text" }), weight: toolHeavy ? 2 : 4 },
    {
      arbitrary: fc.array(callSpec(cancels, toolHeavy), { minLength: 1, maxLength: toolHeavy ? 3 : 2 }).map((
        calls
      ): ReplySpec => ({ _tag: "tools", calls })),
      weight: toolHeavy ? 12 : 5
    },
    { arbitrary: ms.map((ms): ReplySpec => ({ _tag: "delayed", ms })), weight: 2 },
    {
      arbitrary: fc.record({ code: failureCode, partial: fc.boolean() }).map((f): ReplySpec => ({
        _tag: "failure",
        ...f
      })),
      weight: toolHeavy ? 1 : 2
    },
    { arbitrary: fc.constant<ReplySpec>({ _tag: "maxTokens" }), weight: 1 },
    { arbitrary: fc.constant<ReplySpec>({ _tag: hang ? "hang" : "text" }), weight: 1 }
  )

/** The order in which a turn publishes the events a reaction can wait for. */
const triggerOrder: Record<Trigger, number> = {
  "turn/start": 0,
  "step/start": 1,
  "assistant/message": 2,
  "tool/call": 3,
  "tool/result": 4,
  "step/end": 5,
  "turn/end": 6
}

/** One episode of a reactive program: its operations, and the replies its turn is meant to consume. */
export interface Episode {
  readonly ops: ReadonlyArray<Op>
  readonly replies: ReadonlyArray<ReplySpec>
}

const followup: Op = { _tag: "send", kind: "followup" }
const settle: Op = { _tag: "settle" }

const cancelItem = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<BatchItem> =>
  cancels === "none"
    ? fc.constant<BatchItem>({ _tag: "send", kind: "steer" })
    : (cancels === "keepInbox" ? fc.constant(true) : fc.boolean()).map((keepInbox): BatchItem => ({
      _tag: "cancel",
      keepInbox
    }))

/**
 * The episodes that broke before, each as a prompt sent to an agent left to settle first (so the reaction meets
 * that prompt's turn, not one still running from earlier), the reply its turn gets, and the reaction that races it:
 * steering right after a concluding step's `step/end`; a cancel as a tool batch starts (at the `assistant/message`
 * that calls the tools); steering or a cancel while a slow tool runs (at its `tool/call`).
 */
const pattern = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<Episode> =>
  fc.oneof(
    // The narrowest window: weighted double.
    {
      weight: 2,
      arbitrary: fc.array(callSpec(cancels, true), { maxLength: 1 }).map((others): Episode => ({
        ops: [settle, followup, { _tag: "on", event: "step/end", item: { _tag: "send", kind: "steer" } }],
        replies: [{ _tag: "tools", calls: [{ tool: "annotate", conclude: true }, ...others] }]
      }))
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.array(callSpec(cancels, true), { minLength: 1, maxLength: 3 }), cancelItem(cancels)).map((
        [calls, item]
      ): Episode => ({
        ops: [settle, followup, { _tag: "on", event: "assistant/message", item }],
        replies: [{ _tag: "tools", calls }]
      }))
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(10, 100, 1000), reactionItem(cancels)).map(([ms, item]): Episode => ({
        ops: [settle, followup, { _tag: "on", event: "tool/call", item }],
        replies: [{ _tag: "tools", calls: [{ tool: "slow", ms }] }, { _tag: "text" }]
      }))
    }
  )

/**
 * One episode of a reactive program: two in three a {@link pattern}; the others a waking send (so a turn is running
 * and the events reacted to will happen), one to three reactions to that turn's events in the order the turn
 * publishes them, at most two other operations, and one to three tool-heavy replies.
 */
const episode = (cancels: "any" | "keepInbox" | "none" = "any", hang = true): fc.Arbitrary<Episode> =>
  fc.oneof(
    { weight: 2, arbitrary: pattern(cancels) },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(followup) },
          {
            weight: 1,
            arbitrary: fc.array(batchItem(cancels), { maxLength: 2 }).map((rest): Op => ({
              _tag: "batch",
              items: [followup as BatchItem, ...rest]
            }))
          }
        ),
        fc.array(fc.record({ event: reactionTrigger, item: reactionItem(cancels) }), { minLength: 1, maxLength: 3 }),
        fc.array(op(cancels), { maxLength: 2 }),
        fc.array(reply(hang, cancels, true), { minLength: 1, maxLength: 3 })
      ).map(([wake, reactions, others, replies]): Episode => ({
        ops: [
          wake,
          ...[...reactions].sort((a, b) => triggerOrder[a.event] - triggerOrder[b.event]).map((on): Op => ({
            _tag: "on",
            ...on
          })),
          ...others
        ],
        replies
      }))
    }
  )

const nudge: fc.Arbitrary<Nudge> = fc.constantFrom("none", "none", "steer", "inject", "fail")

const admission = (rejects: boolean): fc.Arbitrary<Admission> =>
  rejects
    ? fc.constantFrom("allow", "allow", "block", "fail", "slow", "context")
    : fc.constantFrom("allow", "slow", "context")

/** Fault positions are drawn below this: about the number of faultable appends a run makes. */
export const faultPositions = 10

/**
 * A fault position: most of them among a run's first appends (a run that starts one turn makes only a few), the
 * rest anywhere below {@link faultPositions}.
 */
const faultPosition: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.nat({ max: 3 }) },
  { weight: 1, arbitrary: fc.nat({ max: faultPositions - 1 }) }
)

/**
 * Preemption budgets: the runtime's default in one run of six, else any budget from 16 to 96 operations, two in five
 * of those from 16 to 32. Earlier bugs broke only under narrow budgets (23–31, 36–39, 51–54), which a few fixed values
 * never drew; the smaller the budget, the more of the agent's short sections a preemption lands in.
 */
const preemption: fc.Arbitrary<number> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(2048) },
  { weight: 3, arbitrary: fc.integer({ min: 16, max: 96 }) },
  // Small budgets preempt a fiber within more of the agent's short sections.
  { weight: 2, arbitrary: fc.integer({ min: 16, max: 32 }) }
)

/** A random scenario. */
export const scenario = (options: {
  readonly cancels?: "any" | "keepInbox" | "none"
  readonly rejects?: boolean
  readonly hang?: boolean
  readonly end?: "dispose" | "drain"
  /** A program of episodes whose reactions race the agent's own sections (see {@link episode}). */
  readonly reactive?: boolean
  /** Make some appends fail (see {@link Scenario.faults}). */
  readonly faults?: boolean
  /** On a durable store (see {@link Scenario.durable}). */
  readonly durable?: boolean
} = {}): fc.Arbitrary<Scenario> =>
  fc.tuple(
    options.reactive === true
      // A reactive program is a run of episodes, each starting a turn whose events its reactions wait for, with the
      // replies that turn is meant to get; a few more replies are scripted from the start (they come first).
      ? fc.tuple(
        // The first episode is always one of the patterns that broke before.
        fc.tuple(
          pattern(options.cancels ?? "any"),
          fc.array(episode(options.cancels, options.hang ?? true), { maxLength: 3 })
        )
          .map(([first, rest]) => [first, ...rest]),
        fc.array(reply(options.hang ?? true, options.cancels, true), { maxLength: 3 })
      ).map(([[first, ...rest], more]) => ({
        // Each episode pushes its replies as it starts (after a pattern's settle), so the turn it starts gets them.
        ops: [first!, ...rest].flatMap((e): ReadonlyArray<Op> => {
          const script: Op = { _tag: "script", replies: e.replies }
          return e.ops[0]?._tag === "settle" ? [e.ops[0], script, ...e.ops.slice(1)] : [script, ...e.ops]
        }),
        replies: more
      }))
      : fc.record({
        ops: fc.array(op(options.cancels), { minLength: 1, maxLength: 14 }),
        replies: fc.array(reply(options.hang ?? true, options.cancels), { maxLength: 10 })
      }),
    fc.record({
      admission: fc.option(fc.array(admission(options.rejects ?? true), { minLength: 1, maxLength: 4 }), {
        nil: undefined
      }),
      retries: fc.option(fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }), { nil: undefined }),
      // A run makes about 9 faultable appends: positions beyond that would refuse nothing.
      faults: options.faults === true
        ? fc.array(faultPosition, { minLength: 1, maxLength: 3 })
        : fc.constant(undefined),
      steps: fc.option(fc.array(nudge, { minLength: 1, maxLength: 4 }), { nil: undefined, freq: 3 }),
      stopping: fc.option(fc.array(nudge, { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 3 }),
      end: options.end === undefined
        ? fc.constantFrom<Scenario["end"]>("dispose", "drain")
        : fc.constant<Scenario["end"]>(options.end),
      yieldingStore: fc.boolean(),
      maxOps: preemption,
      seed: fc.integer()
    }),
    options.durable === true ? fc.constantFrom<"wake" | "park">("wake", "park") : fc.constant(undefined)
  ).map(([program, rest, resume]): Scenario => ({
    ...program,
    ...rest,
    ...(resume === undefined ? {} : { durable: true, resume })
  }))
