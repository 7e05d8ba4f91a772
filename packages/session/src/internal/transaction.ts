/**
 * The log's writer section (ADR 0051): one permit, taken by every append while it commits and by every
 * `transaction`, whose handle appends inside the section the transaction holds. A writer whose own state changes with
 * its appends (the agent's acceptance window) runs its critical sections as transactions of the log, so a section and
 * its appends take one permit, not two (ADR 0028).
 */
import type { SessionEvent } from "@harness/domain"
import { Effect } from "effect"
import type { Transaction } from "../SessionLog.js"
import type { SessionLogError } from "../SessionLogError.js"

/**
 * Runs `effect` holding one permit of `lock`, released on every exit. Uninterruptible, the wait for the permit
 * included: `Semaphore.take` counts a permit as taken while the waiter is still interruptible, so an interruption at
 * that instant would leak it.
 *
 * A free lock is taken in one synchronous step (`withPermitsIfAvailable`): `take` suspends the fiber even when the
 * permit is free (it is an async registration that resumes at once), which costs the fiber a trip out of its run
 * loop and back per section (ADR 0041). Only a held lock is waited for with `take`; the region being uninterruptible
 * already, a plain `matchCauseEffect` then releases it (`ensuring` would mask interruption a second time, ADR 0028).
 */
export const holding = <A, E, R>(lock: Effect.Semaphore, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptible(Effect.flatMap(
    lock.withPermitsIfAvailable(1)(effect),
    (held) =>
      held._tag === "Some" ? Effect.succeed(held.value) : Effect.zipRight(
        lock.take(1),
        Effect.matchCauseEffect(effect, {
          onFailure: (cause) => Effect.zipRight(lock.release(1), Effect.failCause(cause)),
          onSuccess: (a) => Effect.as(lock.release(1), a)
        })
      )
  ))

/**
 * An append made inside the section of `tx`: it refuses (a defect) once `tx` is closed, checked in the append's own
 * synchronous step.
 */
export type AppendIn = (
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  trusted: boolean,
  tx: LogTransaction
) => Effect.Effect<ReadonlyArray<SessionEvent.SessionEvent>, SessionLogError>

/**
 * One transaction's handle: open from the moment its section starts until it ends (on every exit). Its operations
 * are getters on its prototype, each read a fresh closure over the handle (as the log's own, ADR 0076): a section
 * pays only for the operations it reads, and a destructured handle works.
 */
export class LogTransaction implements Transaction {
  open = true
  readonly #appendIn: AppendIn
  constructor(appendIn: AppendIn) {
    this.#appendIn = appendIn
  }
  get append(): Transaction["append"] {
    const appendIn = this.#appendIn
    // The appended event is the validated copy of `input` with `seq` and `time` added, so its `type` is
    // `input.type`; TypeScript cannot see that through the union, hence the cast.
    return <E extends SessionEvent.SessionEventInput>(input: E) =>
      Effect.map(appendIn([input], false, this), (events) => events[0]!) as Effect.Effect<
        Extract<SessionEvent.SessionEvent, { readonly type: E["type"] }>,
        SessionLogError
      >
  }
  get appendAll(): Transaction["appendAll"] {
    const appendIn = this.#appendIn
    return (inputs) => appendIn(inputs, false, this)
  }
  get appendTrusted(): Transaction["appendTrusted"] {
    const appendIn = this.#appendIn
    return (inputs) => appendIn(inputs, true, this)
  }
}

/**
 * Runs `body` with a fresh handle in one section of `lock` (see {@link holding}): the handle is made and `body` called
 * each time the effect runs, and the handle is closed as the section ends, on every exit — in the continuation that
 * ends the section, so a transaction costs no interpreter step more than a plain section.
 */
export const transaction = <A, E, R>(
  lock: Effect.Semaphore,
  appendIn: AppendIn,
  body: (tx: Transaction) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask(() => {
    const tx = new LogTransaction(appendIn)
    const effect = body(tx)
    return Effect.matchCauseEffect(lock.withPermitsIfAvailable(1)(effect), {
      onFailure: (cause) => {
        tx.open = false
        return Effect.failCause(cause)
      },
      onSuccess: (held) => {
        if (held._tag === "Some") {
          tx.open = false
          return Effect.succeed(held.value)
        }
        return Effect.zipRight(
          lock.take(1),
          Effect.matchCauseEffect(effect, {
            onFailure: (cause) => {
              tx.open = false
              return Effect.zipRight(lock.release(1), Effect.failCause(cause))
            },
            onSuccess: (a) => {
              tx.open = false
              return Effect.as(lock.release(1), a)
            }
          })
        )
      }
    })
  })
