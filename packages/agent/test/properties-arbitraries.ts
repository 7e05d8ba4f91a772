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
export type BatchItem =
  | { readonly _tag: "send"; readonly kind: SendKind }
  | { readonly _tag: "cancel"; readonly keepInbox: boolean }

/** One step of a program, run by the test fiber in order. */
export type Op =
  | BatchItem
  | { readonly _tag: "batch"; readonly items: ReadonlyArray<BatchItem> }
  | { readonly _tag: "advance"; readonly ms: number }
  | { readonly _tag: "yield"; readonly times: number }
  | { readonly _tag: "retry" }
  | { readonly _tag: "on"; readonly event: Trigger; readonly item: BatchItem }
  | { readonly _tag: "resend"; readonly pick: number }
  | { readonly _tag: "withdraw"; readonly pick: number }

/** The durable events an `on` operation reacts to: it waits (a bounded number of yields) for the next one. */
export type Trigger =
  | "turn/start"
  | "step/start"
  | "assistant/message"
  | "tool/call"
  | "tool/result"
  | "step/end"
  | "turn/end"

/** A tool call a reply makes. */
export type CallSpec =
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

/**
 * A random operation. `cancels` limits the cancels it may contain; `reactive` favours operations that react to the
 * agent's durable events (the edges of the acceptance window).
 */
export const op = (cancels: "any" | "keepInbox" | "none" = "any", reactive = false): fc.Arbitrary<Op> =>
  fc.oneof(
    { arbitrary: batchItem(cancels), weight: reactive ? 3 : 8 },
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
    { arbitrary: fc.nat({ max: 20 }).map((pick): Op => ({ _tag: "withdraw", pick })), weight: 2 },
    {
      arbitrary: fc.record({ event: trigger, item: batchItem(cancels) }).map((on): Op => ({ _tag: "on", ...on })),
      weight: reactive ? 16 : 4
    }
  )

const callSpec = (cancels: "any" | "keepInbox" | "none"): fc.Arbitrary<CallSpec> => {
  const nudges: Array<"steer" | "inject" | "cancel" | "cancel-keep"> = cancels === "none"
    ? ["steer", "inject"]
    : cancels === "keepInbox"
    ? ["steer", "inject", "cancel-keep"]
    : ["steer", "inject", "cancel", "cancel-keep"]
  return fc.oneof(
    fc.constant<CallSpec>({ tool: "quick" }),
    ms.map((ms): CallSpec => ({ tool: "slow", ms })),
    ms.map((ms): CallSpec => ({ tool: "stubborn", ms })),
    fc.constantFrom(...nudges).map((kind): CallSpec => ({ tool: "nudge", kind })),
    fc.boolean().map((conclude): CallSpec => ({ tool: "annotate", conclude }))
  )
}

const failureCode: fc.Arbitrary<LlmFailure.LlmFailureCode> = fc.constantFrom("RATE_LIMIT", "SERVER", "TIMEOUT", "AUTH")

/** A random reply. `hang` allows replies that never finish. */
export const reply = (hang = true, cancels: "any" | "keepInbox" | "none" = "any"): fc.Arbitrary<ReplySpec> =>
  fc.oneof(
    { arbitrary: fc.constant<ReplySpec>({ _tag: "text" }), weight: 4 },
    {
      arbitrary: fc.array(callSpec(cancels), { minLength: 1, maxLength: 2 }).map((calls): ReplySpec => ({
        _tag: "tools",
        calls
      })),
      weight: 5
    },
    { arbitrary: ms.map((ms): ReplySpec => ({ _tag: "delayed", ms })), weight: 2 },
    {
      arbitrary: fc.record({ code: failureCode, partial: fc.boolean() }).map((f): ReplySpec => ({
        _tag: "failure",
        ...f
      })),
      weight: 2
    },
    { arbitrary: fc.constant<ReplySpec>({ _tag: "maxTokens" }), weight: 1 },
    { arbitrary: fc.constant<ReplySpec>({ _tag: hang ? "hang" : "text" }), weight: 1 }
  )

const nudge: fc.Arbitrary<Nudge> = fc.constantFrom("none", "none", "steer", "inject", "fail")

const admission = (rejects: boolean): fc.Arbitrary<Admission> =>
  rejects
    ? fc.constantFrom("allow", "allow", "block", "fail", "slow", "context")
    : fc.constantFrom("allow", "slow", "context")

/** Fault positions are drawn below this: about the number of faultable appends a run makes. */
export const faultPositions = 10

/**
 * Preemption budgets: the runtime's default in one run of four, else any budget from 16 to 96 operations. Earlier
 * bugs broke only under narrow budgets (23–31, 36–39, 51–54), which a few fixed values never drew.
 */
export const preemption: fc.Arbitrary<number> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(2048) },
  { weight: 3, arbitrary: fc.integer({ min: 16, max: 96 }) }
)

/** A random scenario. */
export const scenario = (options: {
  readonly cancels?: "any" | "keepInbox" | "none"
  readonly rejects?: boolean
  readonly hang?: boolean
  readonly end?: "dispose" | "drain"
  /** Favour operations reacting to durable events (see {@link op}). */
  readonly reactive?: boolean
  /** Make some appends fail (see {@link Scenario.faults}). */
  readonly faults?: boolean
} = {}): fc.Arbitrary<Scenario> =>
  fc.record({
    ops: fc.array(op(options.cancels, options.reactive), { minLength: 1, maxLength: 14 }),
    replies: fc.array(reply(options.hang ?? true, options.cancels), { maxLength: 10 }),
    admission: fc.option(fc.array(admission(options.rejects ?? true), { minLength: 1, maxLength: 4 }), {
      nil: undefined
    }),
    retries: fc.option(fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }), { nil: undefined }),
    // A run makes about 9 faultable appends: positions beyond that would refuse nothing.
    faults: options.faults === true
      ? fc.array(fc.nat({ max: faultPositions - 1 }), { minLength: 1, maxLength: 3 })
      : fc.constant(undefined),
    steps: fc.option(fc.array(nudge, { minLength: 1, maxLength: 4 }), { nil: undefined, freq: 3 }),
    stopping: fc.option(fc.array(nudge, { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 3 }),
    end: options.end === undefined ? fc.constantFrom("dispose", "drain") : fc.constant(options.end),
    yieldingStore: fc.boolean(),
    maxOps: preemption,
    seed: fc.integer()
  })
