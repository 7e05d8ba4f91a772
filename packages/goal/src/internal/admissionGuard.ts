/**
 * The admission guard (R125), an outermost `promptSubmit` hook: a goal prompt runs only if it is the reserved round.
 * It runs in the agent's activity fiber, which a cancel interrupts: its bookkeeping steps are uninterruptible.
 * Admitting closes the gate mutations wait on until the round's prompt is logged (ADR 0014).
 */
import type { Hooks } from "@harness/agent"
import type { Message } from "@harness/domain"
import { Message as MessageSchema } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { Deferred, Effect, Ref, Schema } from "effect"
import { sync } from "./observer.js"
import type { Runtime, State } from "./runtime.js"
import { armedActive, enqueue, requestDrive } from "./runtime.js"

const sameContent = Schema.equivalence(MessageSchema.AgentMessage.fields.content)

const reservationValid = (s: State, message: Message.AgentMessage): boolean => {
  const attempt = s.attempt
  const source = message.source
  if (attempt === undefined || source.kind !== "goal") return false
  const text = message.content.length === 1 ? message.content[0]!.text : undefined
  return s.pending.length === 0 && attempt.phase === "queued" && !attempt.stale && attempt.messageId === message.id &&
    attempt.text === text &&
    source.goalId === attempt.goalId && source.revision === attempt.revision && source.round === attempt.round &&
    source.change === undefined && armedActive(s, attempt.goalId, attempt.revision) &&
    attempt.round === s.current.roundsStarted + 1
}

const STALE = "stale goal-round reservation"

export const guard = (
  slot: Ref.Ref<Runtime | undefined>
): NonNullable<Hooks.Hooks<never>["promptSubmit"]> =>
(input, next) =>
  Effect.gen(function*() {
    if (input.message.source.kind !== "goal") return yield* next
    const rt = yield* Ref.get(slot)
    if (rt === undefined || rt.agent !== input.agent) {
      return { kind: "block", reason: "goal-sourced prompts run only through the goal driver" } as const
    }
    const message = input.message
    const forget = (s: State): State =>
      s.attempt !== undefined && s.attempt.messageId === message.id ? { ...s, attempt: undefined } : s
    const abandon = Effect.uninterruptible(Effect.zipRight(Ref.update(rt.state, forget), requestDrive(rt)))
    const reject = Effect.as(abandon, { kind: "block", reason: STALE } as const)
    const check = SessionLog.holding(
      rt.lock,
      Effect.zipRight(sync(rt), Effect.map(Ref.get(rt.state), (s) => reservationValid(s, message)))
    )
    if (!(yield* check)) return yield* reject
    const decision = yield* Effect.tapErrorCause(next, () => abandon)
    const rewritten = decision.kind === "allow" && decision.content !== undefined &&
      !sameContent(decision.content, message.content)
    if (decision.kind === "block" || rewritten) {
      const reason = decision.kind === "block" ? decision.reason : "a goal round's prompt cannot be rewritten"
      // Forgetting the attempt and queueing its block are one step (a cancel between them would lose the block).
      return yield* Effect.uninterruptible(Effect.gen(function*() {
        const s = yield* Ref.getAndUpdate(rt.state, forget)
        const attempt = s.attempt
        if (
          attempt !== undefined && attempt.messageId === message.id && armedActive(s, attempt.goalId, attempt.revision)
        ) {
          yield* enqueue(rt, {
            _tag: "block",
            ref: { id: attempt.goalId, revision: attempt.revision },
            reason: { code: "prompt-rejected", message: reason }
          })
        }
        return { kind: "block", reason } as const
      }))
    }
    // The inner hooks may have let a mutation or human work in: checked again, then the gate closes.
    const admitted = yield* SessionLog.holding(
      rt.lock,
      Effect.gen(function*() {
        yield* sync(rt)
        const gate = yield* Deferred.make<void>()
        return yield* Ref.modify(rt.state, (s) =>
          reservationValid(s, message)
            ? [true, { ...s, gate, attempt: { ...s.attempt!, phase: "admitting" as const } }]
            : [false, s])
      })
    )
    return admitted ? decision : yield* reject
  })
