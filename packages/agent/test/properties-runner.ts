/**
 * The property tests' runner: plays a scenario (`properties-arbitraries.ts`) against a real agent on the
 * `TestClock`, disposes the agent and returns everything the invariants need, and the checks every property runs on
 * what it returns (`problems`).
 */
import { LanguageModel, Tool } from "@effect/ai"
import { Agent, AgentTool } from "@harness/agent"
import type { AgentEvent, Ids as IdsT, Inbox, SessionEvent, Turn } from "@harness/domain"
import { Ids as DomainIds, Message, MessageSource } from "@harness/domain"
import { History, SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Exit, Fiber, Random, Ref, Schema, Scope, TestClock } from "effect"
import { isDeepStrictEqual } from "node:util"
import type { Nudge, Op, ReplySpec, Scenario, SendKind } from "./properties-arbitraries.js"

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
const annotation = (callId: string): string => `context of ${callId}`

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
      /** The ids `inbox` listed, in order. */
      readonly inbox: ReadonlyArray<string>
    }
    | undefined
  /** Whether disposal finished (it must). */
  readonly disposed: boolean
  /** The operation that never returned (a deadlock), if any; the run skipped the rest of its program. */
  readonly stuck: string | undefined
  /** What an operation returned that it should not have (e.g. a resend that returned a new id). */
  readonly anomalies: ReadonlyArray<string>
  /** How many `on` operations saw their event (`fired`) and how many gave up waiting for it (`missed`). */
  readonly reactions: { readonly fired: number; readonly missed: number }
  /** How many appends the store refused (injected faults that hit). */
  readonly refused: number
  /**
   * On a durable store: what the restart after disposal broke (see {@link restart}), and how many pending items it
   * restored; `undefined` otherwise.
   */
  readonly restart: { readonly problems: ReadonlyArray<string>; readonly restored: number } | undefined
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
const ON_ROUNDS = 4
const SETTLE_ROUNDS = 20
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

/** The message ids logged as `user/message` or `steering/message`, in log order. */
const loggedIds = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  log.flatMap((event) =>
    (event.type === "user/message" || event.type === "steering/message") && event.data.messageId !== undefined
      ? [event.data.messageId]
      : []
  )

/** The testkit's fate each receipt stands for (`unknown` stands for none: every id checked was accepted). */
const receiptFate: Record<Inbox.Receipt["_tag"], Invariants.Fate | undefined> = {
  pending: "pending",
  staged: "pending",
  ran: "logged",
  joined: "logged",
  applied: "logged",
  discarded: "discarded",
  withdrawn: "discarded",
  expired: "discarded",
  superseded: "discarded",
  rejected: "dropped",
  unknown: undefined
}

/**
 * The restart after a run on a durable store: the session is reopened from the store (a new process), its pending
 * inbox checked against the run, and a new agent resumes it (`restoredInbox: resume`) and is sent one follow-up
 * (which wakes it when `park` held everything).
 * Returns what broke, as readable lines:
 * - every pending item was accepted by the run, and is neither logged nor withdrawn (both settle an item durably);
 * - after a run drained to quiescence, the pending items are exactly the items `inbox` listed there, in order
 *   (disposal discards them, but settles nothing);
 * - a prompt claimed when the process ended (its admission neither refused by the hook nor cut by a cancel, its
 *   turn never opened) is pending: disposal settles nothing;
 * - resumed, restored context is logged at once and every restored item runs once, in acceptance order, before the
 *   follow-up (R31: parked items run ahead of a waking one behind them); no message is logged twice over both
 *   processes; the log is well formed.
 */
const restart = (
  store: SessionStore.Service,
  id: IdsT.SessionId,
  before: {
    readonly events: ReadonlyArray<AgentEvent.AgentEvent>
    readonly log: ReadonlyArray<SessionEvent.SessionEvent>
    readonly ids: Ids
    readonly inbox: ReadonlyArray<string> | undefined
    readonly refusedAdmissions: ReadonlyArray<string>
  },
  resume: "wake" | "park"
): Effect.Effect<{ readonly problems: ReadonlyArray<string>; readonly restored: number }> =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const reopened = yield* SessionLog.open(id)
    const pending = reopened.pendingInbox
    const pendingIds = pending.map((record) => record.message.id)
    // A send interrupted at its acceptance barrier (a hook's or tool's, when the turn ends) was accepted, but its
    // caller never saw the id: its enqueue names it. (An injection has no enqueue: only queued and steering items
    // are checked.)
    const known = new Set([
      ...before.ids.accepted,
      ...before.ids.injected,
      ...before.events.flatMap((event) => event.type === "agent/inbox/enqueue" ? [event.message.id] : [])
    ])
    const logged = new Set(loggedIds(before.log))
    const withdrawn = new Set(before.ids.withdrawn)
    for (const { message: { id: item }, placement } of pending) {
      if (placement !== "context" && !known.has(item)) out.push(`restart: ${item} is pending but was never accepted`)
      if (logged.has(item)) out.push(`restart: ${item} is pending but was logged`)
      if (withdrawn.has(item)) out.push(`restart: ${item} is pending again after its withdrawal`)
    }
    // A claimed prompt that never reached the log, whose admission the hook did not refuse and no cancel cut, was cut
    // by disposal, which settles nothing: it comes back.
    const refused = new Set(before.refusedAdmissions)
    before.events.forEach((event, at) => {
      if (event.type !== "agent/inbox/dequeue") return
      const claimed = event.message.id
      if (logged.has(claimed) || refused.has(claimed) || pendingIds.includes(claimed)) return
      if (before.events.slice(at).some((later) => later.type === "agent/cancel-requested")) return
      out.push(`restart: ${claimed}, claimed when the process ended, did not come back`)
    })
    if (before.inbox !== undefined && JSON.stringify(pendingIds) !== JSON.stringify(before.inbox)) {
      out.push(
        `restart: pending ${JSON.stringify(pendingIds)}, but the inbox at quiescence was ${
          JSON.stringify(before.inbox)
        }`
      )
    }

    const [model] = yield* S.make(pending.map(() => S.textResponse("resumed")).concat(S.textResponse("woken")))
    const scope = yield* Scope.make()
    const agent = yield* Agent.make({ model: "scripted", session: reopened, restoredInbox: resume }).pipe(
      Effect.provideService(LanguageModel.LanguageModel, model),
      Scope.extend(scope)
    )
    const wake = yield* Effect.orDie(agent.followup(Message.make("wake")))
    const idle = yield* Effect.fork(agent.whenIdle)
    if (!(yield* driveUntilDone(idle, DRAIN_ROUNDS))) {
      out.push("restart: the resumed agent never became idle")
      yield* Fiber.interrupt(idle)
    }
    const log = yield* agent.log
    const closing = yield* Effect.forkDaemon(Scope.close(scope, Exit.void))
    if (!(yield* driveUntilDone(closing, DISPOSAL_ROUNDS))) out.push("restart: disposal did not finish")

    const after = loggedIds(log).filter((item) => !logged.has(item))
    // A restored item whose ttl ran out (at the resume, or while the resumed agent ran) never runs (ADR 0059).
    const expired = new Set<string>()
    for (const record of pending) {
      if (record.expiresAt === undefined) continue
      const receipt = yield* agent.receipt(record.message.id).pipe(Effect.orDie)
      if (receipt._tag === "expired") expired.add(record.message.id)
    }
    const expected = [
      ...pending.filter((record) => record.placement === "context").map((record) => record.message.id),
      ...pending.filter((record) => record.placement !== "context" && !expired.has(record.message.id)).map((
        record
      ) => record.message.id),
      wake
    ]
    if (JSON.stringify(after) !== JSON.stringify(expected)) {
      out.push(`restart: logged ${JSON.stringify(after)} after resuming, expected ${JSON.stringify(expected)}`)
    }
    const all = loggedIds(log)
    for (const item of new Set(all)) {
      if (all.filter((other) => other === item).length > 1) out.push(`restart: ${item} was logged twice`)
    }
    out.push(...Invariants.logWellFormed(log).map((v) => `restart: ${Invariants.render([v])}`))
    return { problems: out, restored: pending.length }
  }).pipe(Effect.provideService(SessionStore.SessionStore, store), Effect.orDie)

/**
 * Plays a scenario against a fresh agent (in its own scope, recorded from before the first send), then drains or
 * disposes it as the scenario says, advancing the `TestClock` until disposal finishes.
 */
export const run = (scenario: Scenario) =>
  Effect.gen(function*() {
    const model = yield* S.ScriptedModel
    yield* model.push(...scenario.replies.map(toReply))
    const memory = yield* SessionStore.makeMemory
    const disposing = yield* Ref.make(false)
    const attempts = yield* Ref.make(0)
    const refused = yield* Ref.make(0)
    // The ids whose withdrawal the store holds (written, not just recorded in the log).
    const withdrawnInStore = yield* Ref.make<ReadonlyArray<string>>([])
    const failing = new Set(scenario.faults ?? [])
    const faulty = (commit: SessionStore.Commit) =>
      Effect.gen(function*() {
        if (failing.size === 0 || (yield* Ref.get(disposing))) return false
        if (!commit.events.some((event) => FAULTY_TYPES.has(event.type))) return false
        const hit = failing.has(yield* Ref.getAndUpdate(attempts, (n) => n + 1))
        if (hit) yield* Ref.update(refused, (n) => n + 1)
        return hit
      })
    const store: SessionStore.Service = {
      ...memory,
      // A durable store: the log commits from a writer fiber, and the agent places its durability barriers.
      ...(scenario.durable === true ? { commitMode: "write-behind", volatile: false } : {}),
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
          const written = yield* memory.append(id, commit, options)
          const withdrawn = commit.inbox.flatMap((r) =>
            r.type === "inbox/settled" && r.fate === "withdrawn" ? [r.id] : []
          )
          if (withdrawn.length > 0) yield* Ref.update(withdrawnInStore, (all) => [...all, ...withdrawn])
          return written
        })
    }
    const session = yield* SessionLog.make().pipe(Effect.provideService(SessionStore.SessionStore, store), Effect.orDie)
    const anomalies = yield* Ref.make<ReadonlyArray<string>>([])
    const anomaly = (text: string) => Ref.update(anomalies, (all) => [...all, text])
    const ids = yield* Ref.make<Ids>({ accepted: [], injected: [], parked: [], withdrawn: [] })
    // On a durable store a send returns once its acceptance is stored (ADR 0017): checked as it returns.
    const record = (id: string, kind: SendKind) =>
      Effect.zipRight(
        scenario.durable === true
          ? Effect.flatMap(
            Effect.orDie(store.hasMessage(session.id, DomainIds.AgentMessageId.make(id))),
            (stored) => stored ? Effect.void : anomaly(`${kind} ${id} returned before its acceptance was stored`)
          )
          : Effect.void,
        Ref.update(ids, (all) => ({
          ...all,
          accepted: kind === "inject" ? all.accepted : [...all.accepted, id],
          injected: kind === "inject" ? [...all.injected, id] : all.injected,
          parked: kind === "park" ? [...all.parked, id] : all.parked
        }))
      )
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
    // The prompts the admission hook refused (blocked, or failed on).
    const refusedAdmissions = yield* Ref.make<ReadonlyArray<string>>([])
    const retries = yield* Ref.make(scenario.retries ?? [])
    const hooks: Agent.Options["hooks"] = {
      ...(scenario.admission === undefined ? {} : {
        promptSubmit: (input, next) =>
          Effect.gen(function*() {
            const decisions = scenario.admission!
            const decision = decisions[(yield* Ref.getAndUpdate(admissions, (n) => n + 1)) % decisions.length]!
            switch (decision) {
              case "allow":
                return yield* next
              case "block":
                yield* Ref.update(refusedAdmissions, (all) => [...all, input.message.id])
                return { kind: "block", reason: "blocked by the test" } satisfies Turn.PromptDecision
              case "fail":
                yield* Ref.update(refusedAdmissions, (all) => [...all, input.message.id])
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
    const reactions = yield* Ref.make({ fired: 0, missed: 0 })
    const guarded = <A>(op: Op, effect: Effect.Effect<A>): Effect.Effect<A | undefined> =>
      Effect.raceFirst(
        effect,
        Effect.gen(function*() {
          for (let i = 0; i < WATCHDOG_YIELDS; i++) yield* Effect.yieldNow()
          yield* Ref.set(stuck, JSON.stringify(op))
          return undefined
        })
      )

    /** One send of `kind` for `op`; returns its id (`undefined`: refused, or it never returned). */
    const sendOne = (op: Op, kind: SendKind) =>
      Effect.gen(function*() {
        const data = yield* message(kind)
        const id = yield* guarded(op, accepted(agent.send(data, sendOptions(kind))))
        if (id !== undefined) yield* record(id, kind)
        return id
      })

    /** A stale send (ADR 0059): `ttl` and `supersedes` on top of the kind's options. */
    const sendStale = (op: Extract<Op, { readonly _tag: "stale" }>) =>
      Effect.gen(function*() {
        const data = yield* message(op.kind)
        const options: Message.SendOptions = {
          ...sendOptions(op.kind),
          ...(op.ttl === undefined ? {} : { ttl: op.ttl }),
          ...(op.key === undefined ? {} : { supersedes: op.key })
        }
        const id = yield* guarded(op, accepted(agent.send(data, options)))
        if (id !== undefined) yield* record(id, op.kind)
      })

    /** Withdrawing a pending item removes exactly it; any other id is `NotPending` and changes nothing. */
    const withdraw = (op: Op, id: DomainIds.AgentMessageId) =>
      Effect.gen(function*() {
        const result = yield* guarded(op, agent.withdraw(id).pipe(Effect.orDie))
        if (result === undefined || result._tag !== "Withdrawn") return
        if (result.item.id !== id) yield* anomaly(`withdrawing ${id} removed ${result.item.id}`)
        // On a durable store a withdrawal is stored when `withdraw` returns (a crash must not bring it back).
        if (scenario.durable === true && !(yield* Ref.get(withdrawnInStore)).includes(id)) {
          yield* anomaly(`withdraw ${id} returned before its settlement was stored`)
        }
        yield* Ref.update(ids, (all) => ({ ...all, withdrawn: [...all.withdrawn, id] }))
        const listed = yield* guarded(op, agent.inbox)
        if (listed?.some((item) => item.id === id) === true) {
          yield* anomaly(`${id} is still in the inbox after its withdrawal`)
        }
      })

    const play = (op: Op): Effect.Effect<void> =>
      Effect.gen(function*() {
        switch (op._tag) {
          case "send":
            return yield* Effect.asVoid(sendOne(op, op.kind))
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
          case "take-back": {
            const sent = yield* sendOne(op, op.kind)
            if (sent !== undefined) yield* withdraw(op, sent)
            return
          }
          case "withdraw": {
            const listed = op.pending ? yield* guarded(op, agent.inbox) : undefined
            const pool = listed !== undefined && listed.length > 0
              ? listed.map((item) => item.id)
              : (yield* Ref.get(ids)).accepted
            if (pool.length === 0) return
            return yield* withdraw(op, DomainIds.AgentMessageId.make(pool[op.pick % pool.length]!))
          }
          case "change": {
            const listed = yield* guarded(op, agent.inbox)
            if (listed === undefined || listed.length === 0) return
            const id = listed[op.pick % listed.length]!.id
            const changed = op.change === "edit"
              ? agent.edit(id, Message.make(`edited ${id}`))
              : op.change === "move"
              ? agent.move(id, op.position)
              : op.change === "promote"
              ? agent.promote(id)
              : agent.demote(id)
            const result = yield* guarded(op, Effect.either(changed))
            if (result === undefined || result._tag === "Right") return
            if (result.left._tag !== "InboxChangeError") {
              yield* anomaly(`${op.change} ${id} failed: ${result.left.message}`)
            }
            return
          }
          case "stale":
            return yield* sendStale(op)
          case "busy": {
            // A refusal (`reject` while a turn runs) accepts nothing: no id, no event, no record.
            const data = yield* message(op.kind)
            const sent = agent.send(data, { ...sendOptions(op.kind), whenBusy: op.whenBusy }).pipe(
              Effect.catchTag("TurnRunningError", () => Effect.succeed(undefined))
            )
            const id = yield* guarded(op, accepted(sent))
            if (id !== undefined) yield* record(id, op.kind)
            return
          }
          case "script":
            return yield* model.push(...op.replies.map(toReply))
          case "settle": {
            const idle = yield* Effect.fork(agent.whenIdle)
            if (!(yield* driveUntilDone(idle, SETTLE_ROUNDS))) yield* Fiber.interrupt(idle)
            return
          }
          case "on": {
            // React as soon as the agent appends the next such event (as a `session/event` subscriber would), or
            // give up after a while (the agent may be idle or hanging).
            // While nothing comes, the clock moves on to the next scheduled sleep (a slow tool, a delayed reply), a
            // few times, so a reaction to an event that needs time still sees it.
            const seen = (yield* recorder.events).length
            let fired = false
            for (let round = 0; round < ON_ROUNDS && !fired; round++) {
              for (let i = 0; i < ON_PATIENCE && !fired; i++) {
                const events = yield* recorder.events
                fired = events.slice(seen).some((e) => e.type === "session/event" && e.event.type === op.event)
                if (!fired) yield* Effect.yieldNow()
              }
              const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
              if (fired || sleeps.length === 0) break
              yield* TestClock.adjust(Math.max(Math.min(...sleeps) - (yield* TestClock.currentTimeMillis), 0))
            }
            yield* Ref.update(reactions, (r) => fired ? { ...r, fired: r.fired + 1 } : { ...r, missed: r.missed + 1 })
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
        // Receipts (ADR 0050), computed from the log, agree with the fates the live events and the log tell.
        const events = yield* recorder.events
        const fates = Invariants.fates(events, yield* agent.log, (yield* Ref.get(ids)).accepted)
        for (const [id, fate] of fates) {
          const receipt = yield* agent.receipt(DomainIds.AgentMessageId.make(id)).pipe(Effect.orDie)
          const expected = receiptFate[receipt._tag]
          if (expected !== fate) yield* anomaly(`at quiescence: ${id}'s receipt is ${receipt._tag}, its fate ${fate}`)
        }
        quiescent = {
          events: yield* recorder.events,
          log: yield* agent.log,
          status: yield* agent.status,
          acceptsNextStep: yield* agent.acceptsNextStep,
          inbox: (yield* agent.inbox).map((item) => item.id)
        }
      } else {
        yield* Fiber.interrupt(idle)
      }
    }

    // R103: every request carried the derivation of the log before some step's `step/start`, in log order (a retried
    // request repeats its step's) — so a rollback's record (ADR 0061) left the same turn out of both.
    {
      const log = yield* agent.log
      const derived = log.flatMap((event, index) =>
        event.type === "step/start" ? [History.deriveMessages(log.slice(0, index))] : []
      )
      let at = 0
      for (const [n, request] of (yield* model.requests).entries()) {
        const sent = request.prompt.content.filter((message) => message.role !== "system")
        while (at < derived.length && !isDeepStrictEqual(derived[at], sent)) at++
        if (at === derived.length) {
          yield* anomaly(`request ${n + 1} is not the derivation of the log before a step/start`)
          break
        }
      }
    }

    yield* Ref.set(disposing, true)
    const beforeDisposal = (yield* recorder.events).length
    // A daemon: if disposal hangs (a bug), the run still ends and reports it instead of waiting for it forever.
    const closing = yield* Effect.forkDaemon(Scope.close(agentScope, Exit.void))
    const disposed = yield* driveUntilDone(closing, DISPOSAL_ROUNDS)
    const finalEvents = yield* recorder.events
    const finalLog = yield* agent.log
    const finalIds = yield* Ref.get(ids)
    return {
      events: finalEvents,
      log: finalLog,
      ids: finalIds,
      beforeDisposal,
      quiescent,
      disposed,
      stuck: yield* Ref.get(stuck),
      anomalies: yield* Ref.get(anomalies),
      reactions: yield* Ref.get(reactions),
      refused: yield* Ref.get(refused),
      restart: scenario.durable === true && disposed
        ? yield* restart(store, session.id, {
          events: finalEvents,
          log: finalLog,
          ids: finalIds,
          inbox: quiescent?.inbox,
          refusedAdmissions: yield* Ref.get(refusedAdmissions)
        }, scenario.resume ?? "park")
        : undefined
    } satisfies Outcome
  }).pipe(
    Effect.withMaxOpsBeforeYield(scenario.maxOps),
    Effect.withRandom(Random.make(scenario.seed)),
    Effect.provide(S.layer())
  )

/**
 * The interleavings a run reached, read from its live events: what the generators are shaped to make common (the
 * distribution test counts them over a sample of runs).
 */
export interface Tally {
  /** A tool call was made. */
  readonly tool: boolean
  /** Steering was accepted, or a cancel requested, while a tool call was running (between its `tool/call` and its
   * `tool/result`). */
  readonly steerOrCancelWhileTool: boolean
  /** A cancel was requested as a tool batch started: after the step's `assistant/message` with tool calls, before
   * its first `tool/result`. */
  readonly cancelAsBatchStarts: boolean
  /** `on` operations that saw their event, and those that gave up. */
  readonly reactions: { readonly fired: number; readonly missed: number }
  /** Appends the store refused. */
  readonly refused: number
  /** A `withdraw` found its item pending and removed it. */
  readonly withdrew: boolean
  /** On a durable store: the restart restored at least one pending item. */
  readonly restored: boolean
  /** A pending item expired, and one was superseded (ADR 0059). */
  readonly expired: boolean
  readonly superseded: boolean
  /** A `whenBusy: "rollback"` send rolled a turn back (a `turn/rollback` record, ADR 0061). */
  readonly rolledBack: boolean
}

/** What a run reached (see {@link Tally}). */
export const tally = (outcome: Outcome): Tally => {
  let tool = false
  let steerOrCancelWhileTool = false
  let cancelAsBatchStarts = false
  const running = new Set<string>()
  // After an assistant/message with tool calls, until the step's first tool/result.
  let batchStarting = false
  for (const event of outcome.events) {
    if (event.type === "session/event") {
      const durable = event.event
      switch (durable.type) {
        case "assistant/message":
          batchStarting = durable.data.content.some((block) => block.type === "tool-call")
          break
        case "tool/call":
          tool = true
          running.add(durable.data.callId)
          break
        case "tool/result":
          batchStarting = false
          running.delete(durable.data.callId)
          break
        case "step/end":
          batchStarting = false
          break
        case "turn/end":
          running.clear()
          batchStarting = false
          break
      }
    } else if (event.type === "agent/inbox/enqueue" && event.placement === "steering") {
      if (running.size > 0) steerOrCancelWhileTool = true
    } else if (event.type === "agent/cancel-requested") {
      if (running.size > 0) steerOrCancelWhileTool = true
      if (batchStarting) cancelAsBatchStarts = true
    }
  }
  return {
    tool,
    steerOrCancelWhileTool,
    cancelAsBatchStarts,
    reactions: outcome.reactions,
    refused: outcome.refused,
    withdrew: outcome.ids.withdrawn.length > 0,
    restored: (outcome.restart?.restored ?? 0) > 0,
    expired: outcome.events.some((event) => event.type === "agent/inbox/discard" && event.reason === "expired"),
    superseded: outcome.events.some((event) => event.type === "agent/inbox/discard" && event.reason === "superseded"),
    rolledBack: outcome.events.some((event) => event.type === "session/event" && event.event.type === "turn/rollback")
  }
}

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

/**
 * R31: a parked item runs only behind a waking one. When a parked item is claimed (its `dequeue`), a waking queued
 * item accepted after it must still be outstanding (enqueued, neither dequeued nor discarded nor withdrawn): the
 * claim that takes the parked head is made for it.
 */
const parkedWaitProblems = (
  events: ReadonlyArray<AgentEvent.AgentEvent>,
  parked: ReadonlySet<string>
): ReadonlyArray<string> => {
  const out: Array<string> = []
  // Parked now: a promote makes a parked item steering, a demote a waking queued turn (ADR 0050).
  const parkedNow = new Set(parked)
  // Outstanding queued items, in FIFO order (acceptance order, as moves and placements change it).
  const outstanding: Array<string> = []
  const leave = (id: string) => {
    const at = outstanding.indexOf(id)
    if (at >= 0) outstanding.splice(at, 1)
  }
  for (const event of events) {
    if (event.type === "agent/inbox/enqueue" && event.placement === "queued") outstanding.push(event.message.id)
    else if (event.type === "agent/inbox/discard") event.messages.forEach((message) => leave(message.id))
    else if (event.type === "agent/inbox/place") {
      // Promoted: steering now, no longer queued. Demoted: a waking queued turn, last (ADR 0050).
      leave(event.message.id)
      parkedNow.delete(event.message.id)
      if (event.placement === "queued") outstanding.push(event.message.id)
    } else if (event.type === "agent/inbox/move" && outstanding.includes(event.message.id)) {
      leave(event.message.id)
      outstanding.splice(event.position, 0, event.message.id)
    } else if (event.type === "agent/inbox/dequeue") {
      const id = event.message.id
      const at = outstanding.indexOf(id)
      if (parkedNow.has(id) && at >= 0 && !outstanding.slice(at + 1).some((behind) => !parkedNow.has(behind))) {
        out.push(`parked item ${id} was claimed with no waking item queued behind it (R31)`)
      }
      leave(id)
    }
  }
  return out
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
  const out: Array<string> = [...(outcome.restart?.problems ?? [])]
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
  out.push(...parkedWaitProblems(outcome.events, new Set(outcome.ids.parked)))
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
  // The placement an item has now: a promote or demote changes it (ADR 0050).
  for (const e of quiescent.events) {
    if (e.type === "agent/inbox/enqueue" || e.type === "agent/inbox/place") placement.set(e.message.id, e.placement)
  }
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
