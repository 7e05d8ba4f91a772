/**
 * The machinery of the property tests: a scenario (a random program of sends, cancels, batches, retries and clock
 * advances, against a random script of model replies, tools and hooks), its arbitraries, and a runner that plays it
 * against a real agent on the `TestClock`, disposes the agent and returns everything the invariants need, and the
 * checks every property runs on what it returns (`problems`).
 */
import { Tool } from "@effect/ai"
import { Agent, AgentTool } from "@harness/agent"
import type { AgentEvent, LlmFailure, SessionEvent, Turn } from "@harness/domain"
import { Ids as DomainIds, Message, MessageSource } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Exit, FastCheck as fc, Fiber, Random, Ref, Schema, Scope, TestClock } from "effect"

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

// ---------------------------------------------------------------------------------------------------------------
// The agent under test

const quickTool = Tool.make("quick", { parameters: {}, success: Schema.String })
const slowTool = Tool.make("slow", { parameters: { ms: Schema.Number }, success: Schema.String })
const stubbornTool = Tool.make("stubborn", { parameters: { ms: Schema.Number }, success: Schema.String })
const nudgeTool = Tool.make("nudge", {
  parameters: { kind: Schema.Literal("steer", "inject", "cancel", "cancel-keep") },
  success: Schema.String
})
const annotateTool = Tool.make("annotate", { parameters: { conclude: Schema.Boolean }, success: Schema.String })

/** The text of the context the `annotate` call `callId` attaches to its result. */
export const annotation = (callId: string): string => `context of ${callId}`

/** The ids a run's sends returned. */
export interface Ids {
  /** Every id returned by a send other than an injection. */
  readonly accepted: ReadonlyArray<string>
  /** Every id returned by an injection. */
  readonly injected: ReadonlyArray<string>
  /** The ids of parked sends (`next-turn`, no wakeup). */
  readonly parked: ReadonlyArray<string>
  /** The ids `withdraw` reported `Withdrawn`. */
  readonly withdrawn: ReadonlyArray<string>
}

const toReply = (spec: ReplySpec): S.Reply => {
  switch (spec._tag) {
    case "text":
      return S.textResponse("answer")
    case "tools":
      return S.toolCallResponse(
        ...spec.calls.map((call) =>
          call.tool === "quick"
            ? S.toolCall("quick", {})
            : call.tool === "nudge"
            ? S.toolCall("nudge", { kind: call.kind })
            : call.tool === "annotate"
            ? S.toolCall("annotate", { conclude: call.conclude })
            : S.toolCall(call.tool, { ms: call.ms })
        )
      )
    case "delayed":
      return S.delayed(spec.ms, S.textResponse("late answer"))
    case "failure":
      return spec.partial ? S.failureAfter([S.text("partial")], spec.code) : S.failure(spec.code)
    case "maxTokens":
      return S.maxTokensResponse(S.text("truncated"), S.toolCall("quick", {}))
    case "hang":
      return S.hanging(S.text("thinking"))
  }
}

/** What a run left behind. */
export interface Outcome {
  readonly events: ReadonlyArray<AgentEvent.AgentEvent>
  readonly log: ReadonlyArray<SessionEvent.SessionEvent>
  readonly ids: Ids
  /** How many events were recorded before disposal began. */
  readonly beforeDisposal: number
  /** The events and log at quiescence, when `end: "drain"` reached it. */
  readonly quiescent:
    | {
      readonly events: ReadonlyArray<AgentEvent.AgentEvent>
      readonly log: ReadonlyArray<SessionEvent.SessionEvent>
      readonly status: AgentEvent.AgentStatus
      readonly acceptsNextStep: boolean
    }
    | undefined
  /** Whether disposal finished (it must). */
  readonly disposed: boolean
  /** The operation that never returned (a deadlock), if any; the run skipped the rest of its program. */
  readonly stuck: string | undefined
  /** What an operation returned that it should not have (e.g. a resend that returned a new id). */
  readonly anomalies: ReadonlyArray<string>
}

const FAULTY_TYPES: ReadonlySet<string> = new Set([
  "user/message",
  "steering/message",
  "assistant/chunk",
  "turn/start",
  "request/header",
  "step/start"
])
const ON_PATIENCE = 200
const WATCHDOG_YIELDS = 5000
const DRAIN_ROUNDS = 100
const DISPOSAL_ROUNDS = 100

/**
 * Lets the agent's fibers run, advancing the clock straight to the next scheduled sleep each round, until `fiber` is
 * done (true), nothing is left to wake (false: the rest hangs until interrupted), or `rounds` run out (false).
 * (`TestClock.adjust` waits on real timers to see the fibers suspended, so it is called only when needed.)
 */
const driveUntilDone = (fiber: Fiber.Fiber<unknown, unknown>, rounds: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const done = Effect.map(Fiber.poll(fiber), (exit) => exit._tag === "Some")
    for (let i = 0; i < rounds; i++) {
      for (let j = 0; j < 64 && !(yield* done); j++) yield* Effect.yieldNow()
      if (yield* done) return true
      let sleeps = yield* TestClock.sleeps()
      if (Chunk.isEmpty(sleeps)) {
        yield* TestClock.adjust(0)
        if (yield* done) return true
        sleeps = yield* TestClock.sleeps()
        if (Chunk.isEmpty(sleeps)) return false
      }
      const now = yield* TestClock.currentTimeMillis
      yield* TestClock.adjust(Math.max(Math.min(...Chunk.toReadonlyArray(sleeps)) - now, 0))
    }
    return yield* done
  })

/**
 * Plays a scenario against a fresh agent (in its own scope, recorded from before the first send), then drains or
 * disposes it as the scenario says, advancing the `TestClock` until disposal finishes.
 */
export const run = (scenario: Scenario) =>
  Effect.gen(function*() {
    const model = yield* S.ScriptedModel
    yield* model.push(...scenario.replies.map(toReply))
    const ids = yield* Ref.make<Ids>({ accepted: [], injected: [], parked: [], withdrawn: [] })
    const record = (id: string, kind: SendKind) =>
      Ref.update(ids, (all) => ({
        ...all,
        accepted: kind === "inject" ? all.accepted : [...all.accepted, id],
        injected: kind === "inject" ? [...all.injected, id] : all.injected,
        parked: kind === "park" ? [...all.parked, id] : all.parked
      }))
    // A send's id, or `undefined` when the log refused an idle injection's append (nothing was accepted).
    const accepted = <A>(send: Effect.Effect<A, Agent.SendError>): Effect.Effect<A | undefined> =>
      send.pipe(Effect.catchTag("SessionLogError", () => Effect.succeed(undefined)), Effect.orDie)
    const counter = yield* Ref.make(0)
    const text = (prefix: string) => Effect.map(Ref.getAndUpdate(counter, (n) => n + 1), (n) => `${prefix} ${n}`)

    const tools = [
      AgentTool.make(quickTool, { handler: () => Effect.succeed("quick done"), parallel: true }),
      AgentTool.make(slowTool, { handler: ({ ms }) => Effect.as(Effect.sleep(ms), "slept"), parallel: true }),
      AgentTool.make(stubbornTool, {
        handler: ({ ms }) => Effect.as(Effect.sleep(ms), "finished anyway"),
        onCancel: "finish"
      }),
      AgentTool.make(nudgeTool, {
        handler: ({ kind }, { agent }) =>
          Effect.gen(function*() {
            if (kind === "cancel" || kind === "cancel-keep") {
              // A tool may cancel its own agent (the cancel does not wait for the turn to unwind).
              yield* Effect.orDie(agent.cancel("user", { keepInbox: kind === "cancel-keep" }))
              return "cancelled"
            }
            const data = Message.make(yield* text(`tool ${kind}`), MessageSource.plugin("nudge"))
            const id = yield* accepted(kind === "steer" ? agent.steer(data) : agent.inject(data))
            if (id !== undefined) yield* record(id, kind)
            return "nudged"
          })
      }),
      AgentTool.make(annotateTool, {
        handler: ({ conclude }, { callId }) =>
          Effect.succeed(AgentTool.outcome("noted", {
            concludeTurn: conclude,
            contexts: [Message.make(annotation(callId), MessageSource.plugin("annotate"))]
          }))
      })
    ]

    const steps = yield* Ref.make(scenario.steps ?? [])
    const stopping = yield* Ref.make(scenario.stopping ?? [])
    // A hook's next nudge: steering and injected context it sends are tracked like the test's own sends.
    const nudgeWith = (plan: Ref.Ref<ReadonlyArray<Nudge>>, agent: Agent.Service, hook: string) =>
      Effect.gen(function*() {
        const next = yield* Ref.modify(plan, ([first, ...rest]) => [first ?? "none", rest] as const)
        if (next === "fail") return yield* Effect.fail(`the ${hook} hook failed`)
        if (next === "none") return
        const data = Message.make(yield* text(`${hook} ${next}`), MessageSource.plugin(hook))
        const id = yield* accepted(next === "steer" ? agent.steer(data) : agent.inject(data))
        if (id !== undefined) yield* record(id, next)
      })
    const admissions = yield* Ref.make(0)
    const retries = yield* Ref.make(scenario.retries ?? [])
    const hooks: Agent.Options["hooks"] = {
      ...(scenario.admission === undefined ? {} : {
        promptSubmit: (_input, next) =>
          Effect.gen(function*() {
            const decisions = scenario.admission!
            const decision = decisions[(yield* Ref.getAndUpdate(admissions, (n) => n + 1)) % decisions.length]!
            switch (decision) {
              case "allow":
                return yield* next
              case "block":
                return { kind: "block", reason: "blocked by the test" } satisfies Turn.PromptDecision
              case "fail":
                return yield* Effect.fail("the admission hook failed")
              case "slow":
                return yield* Effect.zipRight(Effect.sleep("2 seconds"), next)
              case "context":
                return yield* Effect.map(next, (d): Turn.PromptDecision =>
                  d.kind === "allow"
                    ? { ...d, additionalContexts: [Message.make("hook context", MessageSource.plugin("hook"))] }
                    : d)
            }
          })
      }),
      ...(scenario.retries === undefined ? {} : {
        requestError: (_input, next) =>
          Effect.flatMap(
            Ref.modify(retries, ([first, ...rest]) => [first ?? false, rest] as const),
            (retry) => retry ? Effect.succeed("retry" as const) : next
          )
      }),
      ...(scenario.steps === undefined ? {} : { step: ({ agent }) => nudgeWith(steps, agent, "step") }),
      ...(scenario.stopping === undefined
        ? {}
        : { turnStopping: ({ agent }) => nudgeWith(stopping, agent, "stopping") })
    }

    const memory = yield* SessionStore.makeMemory
    const disposing = yield* Ref.make(false)
    const attempts = yield* Ref.make(0)
    const failing = new Set(scenario.faults ?? [])
    const faulty = (commit: SessionStore.Commit) =>
      Effect.gen(function*() {
        if (failing.size === 0 || (yield* Ref.get(disposing))) return false
        if (!commit.events.some((event) => FAULTY_TYPES.has(event.type))) return false
        return failing.has(yield* Ref.getAndUpdate(attempts, (n) => n + 1))
      })
    const store: SessionStore.Service = {
      ...memory,
      append: (id, commit, options) =>
        Effect.gen(function*() {
          if (scenario.yieldingStore) yield* Effect.yieldNow()
          if (yield* faulty(commit)) {
            return yield* new SessionStore.SessionStoreError({
              reason: "Injected",
              message: "injected store fault",
              id
            })
          }
          return yield* memory.append(id, commit, options)
        })
    }
    const session = yield* SessionLog.make().pipe(Effect.provideService(SessionStore.SessionStore, store), Effect.orDie)
    const agentScope = yield* Scope.make()
    const agent = yield* Agent.make({ model: "scripted", tools, hooks, session }).pipe(Scope.extend(agentScope))
    const recorder = yield* EventRecorder.make(agent)

    const message = (kind: SendKind) => Effect.map(text(kind), (t) => Message.make(t))
    const sendOptions = (kind: SendKind): Message.SendOptions =>
      kind === "followup"
        ? { target: "next-turn", wakeup: true }
        : kind === "steer"
        ? { target: "next-step", wakeup: true }
        : kind === "inject"
        ? { target: "next-step", wakeup: false }
        : { target: "next-turn", wakeup: false }

    // An operation that takes the agent's lock returns after a bounded number of scheduler turns (nothing holding
    // the lock waits on the clock); one that does not is deadlocked, and the run records it instead of hanging.
    const stuck = yield* Ref.make<string | undefined>(undefined)
    const anomalies = yield* Ref.make<ReadonlyArray<string>>([])
    const guarded = <A>(op: Op, effect: Effect.Effect<A>): Effect.Effect<A | undefined> =>
      Effect.raceFirst(
        effect,
        Effect.gen(function*() {
          for (let i = 0; i < WATCHDOG_YIELDS; i++) yield* Effect.yieldNow()
          yield* Ref.set(stuck, JSON.stringify(op))
          return undefined
        })
      )

    const play = (op: Op): Effect.Effect<void> =>
      Effect.gen(function*() {
        switch (op._tag) {
          case "send": {
            const data = yield* message(op.kind)
            const id = yield* guarded(op, accepted(agent.send(data, sendOptions(op.kind))))
            if (id !== undefined) yield* record(id, op.kind)
            return
          }
          case "cancel":
            return yield* guarded(op, Effect.orDie(agent.cancel("user", { keepInbox: op.keepInbox })))
          case "batch": {
            const batch: Array<Agent.BatchOp> = []
            for (const item of op.items) {
              batch.push(
                item._tag === "send"
                  ? { send: [yield* message(item.kind), sendOptions(item.kind)] }
                  : { cancel: ["user", { keepInbox: item.keepInbox }] }
              )
            }
            // A batch that stops at a refused idle injection reports what it applied.
            const results = yield* guarded(
              op,
              agent.batch(batch).pipe(
                Effect.catchTag("BatchError", (error) => Effect.succeed(error.applied)),
                Effect.catchTag("SessionLogError", () => Effect.succeed([])),
                Effect.orDie
              )
            )
            for (const [i, item] of op.items.entries()) {
              const id = results?.[i]
              if (item._tag === "send" && id !== undefined) yield* record(id, item.kind)
            }
            return
          }
          case "advance":
            return yield* TestClock.adjust(op.ms)
          case "yield":
            for (let i = 0; i < op.times; i++) yield* Effect.yieldNow()
            return
          case "retry":
            return yield* guarded(op, Effect.ignore(agent.retry))
          case "resend": {
            // Idempotent acceptance: an id this agent already accepted comes back unchanged, and nothing happens.
            const accepted = (yield* Ref.get(ids)).accepted
            if (accepted.length === 0) return
            const id = accepted[op.pick % accepted.length]!
            const again = yield* guarded(
              op,
              agent.followup(yield* message("followup"), { id: DomainIds.AgentMessageId.make(id) }).pipe(Effect.orDie)
            )
            if (again !== undefined && again !== id) {
              yield* Ref.update(anomalies, (all) => [...all, `resending ${id} returned ${again}`])
            }
            return
          }
          case "withdraw": {
            // Withdrawing a pending item removes exactly it; any other id is `NotPending` and changes nothing.
            const accepted = (yield* Ref.get(ids)).accepted
            if (accepted.length === 0) return
            const id = DomainIds.AgentMessageId.make(accepted[op.pick % accepted.length]!)
            const result = yield* guarded(op, agent.withdraw(id).pipe(Effect.orDie))
            if (result === undefined) return
            if (result._tag === "Withdrawn") {
              if (result.item.id !== id) {
                yield* Ref.update(anomalies, (all) => [...all, `withdrawing ${id} removed ${result.item.id}`])
              }
              yield* Ref.update(ids, (all) => ({ ...all, withdrawn: [...all.withdrawn, id] }))
              const listed = yield* guarded(op, agent.inbox)
              if (listed?.some((item) => item.id === id) === true) {
                yield* Ref.update(anomalies, (all) => [...all, `${id} is still in the inbox after its withdrawal`])
              }
            }
            return
          }
          case "on": {
            // React as soon as the agent appends the next such event (as a `session/event` subscriber would), or
            // give up after a while (the agent may be idle or hanging).
            const seen = (yield* recorder.events).length
            for (let i = 0; i < ON_PATIENCE; i++) {
              const events = yield* recorder.events
              if (
                events.slice(seen).some((e) => e.type === "session/event" && e.event.type === op.event)
              ) break
              yield* Effect.yieldNow()
            }
            return yield* play(op.item)
          }
        }
      })

    for (const op of scenario.ops) {
      if ((yield* Ref.get(stuck)) !== undefined) break
      yield* play(op)
    }

    let quiescent: Outcome["quiescent"]
    if (scenario.end === "drain") {
      const idle = yield* Effect.fork(agent.whenIdle)
      if (yield* driveUntilDone(idle, DRAIN_ROUNDS)) {
        quiescent = {
          events: yield* recorder.events,
          log: yield* agent.log,
          status: yield* agent.status,
          acceptsNextStep: yield* agent.acceptsNextStep
        }
      } else {
        yield* Fiber.interrupt(idle)
      }
    }

    yield* Ref.set(disposing, true)
    const beforeDisposal = (yield* recorder.events).length
    // A daemon: if disposal hangs (a bug), the run still ends and reports it instead of waiting for it forever.
    const closing = yield* Effect.forkDaemon(Scope.close(agentScope, Exit.void))
    const disposed = yield* driveUntilDone(closing, DISPOSAL_ROUNDS)
    return {
      events: yield* recorder.events,
      log: yield* agent.log,
      ids: yield* Ref.get(ids),
      beforeDisposal,
      quiescent,
      disposed,
      stuck: yield* Ref.get(stuck),
      anomalies: yield* Ref.get(anomalies)
    } satisfies Outcome
  }).pipe(
    Effect.withMaxOpsBeforeYield(scenario.maxOps),
    Effect.withRandom(Random.make(scenario.seed)),
    Effect.provide(S.layer())
  )

/** A compact, readable description of a scenario, for failure messages and regression tests. */
export const describeScenario = (scenario: Scenario): string => JSON.stringify(scenario)

// ---------------------------------------------------------------------------------------------------------------
// Checks

/** Tool contexts are never lost: each successful `annotate` result's context is logged once, and no other. */
const toolContextProblems = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> => {
  const expected = new Set(
    log.flatMap((
      e
    ) => (e.type === "tool/result" && e.data.name === "annotate" && !e.data.isError ? [annotation(e.data.callId)] : []))
  )
  const logged = new Map<string, number>()
  for (const e of log) {
    const first = e.type === "user/message" ? e.data.content[0].text : undefined
    if (first !== undefined && first.startsWith("context of ")) logged.set(first, (logged.get(first) ?? 0) + 1)
  }
  return [
    ...[...expected].filter((text) => logged.get(text) !== 1).map((text) =>
      `tool context "${text}" logged ${logged.get(text) ?? 0} times`
    ),
    ...[...logged.keys()].filter((text) => !expected.has(text)).map((text) =>
      `tool context "${text}" logged without a successful result`
    )
  ]
}

/** What {@link problems} checks beyond the invariants every run keeps. */
export interface CheckOptions {
  /** Every cancel had `keepInbox`: nothing may be discarded before disposal. */
  readonly keepInboxOnly?: boolean | undefined
  /** The run must have reached quiescence (it had no hanging reply). */
  readonly quiescence?: boolean | undefined
  /** No prompt may have been dropped by the time of quiescence (no cancel, no rejecting hook). */
  readonly noDrops?: boolean | undefined
}

/**
 * Everything a finished run broke, as readable lines (empty when it broke nothing): disposal finished; every
 * `Invariants.check` invariant over the final events and log; tool contexts; and, at quiescence, `idle`, a closed
 * window, no waking item left queued (R25, R31) and the invariants that hold mid-run.
 */
export const problems = (outcome: Outcome, options: CheckOptions = {}): ReadonlyArray<string> => {
  const out: Array<string> = []
  if (outcome.stuck !== undefined) out.push(`operation never returned (deadlock): ${outcome.stuck}`)
  if (!outcome.disposed) out.push("disposal did not finish")
  out.push(...outcome.anomalies)
  const render = (violations: ReadonlyArray<Invariants.Violation>, when: string) =>
    violations.forEach((v) => out.push(`${when}: ${Invariants.render([v])}`))
  render(
    Invariants.check({
      events: outcome.events,
      log: outcome.log,
      accepted: outcome.ids.accepted,
      injected: outcome.ids.injected,
      final: true,
      keepInboxOnly: options.keepInboxOnly === true ? outcome.beforeDisposal : undefined
    }),
    "final"
  )
  out.push(...toolContextProblems(outcome.log))
  // Every withdrawn item's fate is "discarded" (by that withdrawal: a second discard would break message-fate).
  for (const [id, fate] of Invariants.fates(outcome.events, outcome.log, outcome.ids.withdrawn)) {
    if (fate !== "discarded") out.push(`withdrawn item ${id} ended ${fate}`)
  }
  const quiescent = outcome.quiescent
  if (quiescent === undefined) {
    if (options.quiescence === true) out.push("the agent never became quiescent")
    return out
  }
  if (quiescent.status !== "idle") out.push(`at quiescence: status is ${quiescent.status}`)
  if (quiescent.acceptsNextStep) out.push("at quiescence: acceptsNextStep is true")
  const parked = new Set(outcome.ids.parked)
  const placement = new Map<string, string>()
  for (const e of quiescent.events) if (e.type === "agent/inbox/enqueue") placement.set(e.message.id, e.placement)
  for (const [id, fate] of Invariants.fates(quiescent.events, quiescent.log, outcome.ids.accepted)) {
    if (fate === "pending" && placement.get(id) === "queued" && !parked.has(id)) {
      out.push(`at quiescence: waking item ${id} is still queued`)
    }
    if (fate === "dropped" && options.noDrops === true) out.push(`at quiescence: prompt ${id} was dropped`)
  }
  render(
    [
      ...Invariants.fifoConservation(quiescent.events, { injected: outcome.ids.injected }),
      ...Invariants.statusTrace(quiescent.events, { end: "idle" }),
      ...Invariants.steeringInOpenTurn(quiescent.log),
      ...Invariants.steeringJoinsTurn(quiescent.events),
      ...Invariants.messageFates(quiescent.events, quiescent.log, { accepted: outcome.ids.accepted }),
      ...Invariants.oneSendOneTurn(quiescent.events, quiescent.log),
      ...Invariants.settledOnce(quiescent.events, { final: true }),
      ...Invariants.admissionCancel(quiescent.events),
      ...Invariants.admissionOrder(quiescent.events),
      ...Invariants.injectedContext(quiescent.log, { injected: outcome.ids.injected }),
      ...Invariants.logWellFormed(quiescent.log)
    ],
    "at quiescence"
  )
  return out
}
