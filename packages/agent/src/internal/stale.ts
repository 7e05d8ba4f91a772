/**
 * Stale input (ADR 0059): a pending item whose `expiresAt` passed before a turn took it is discarded with cause
 * `expired`; a send with a `supersedes` key discards the pending items sent under that key (cause `superseded`).
 * Only sends that said `ttl`, `expiresAt` or `supersedes` ever reach this module: a plain send pays nothing here.
 */
import type { Ids, Message } from "@harness/domain"
import { Clock, Duration, Effect, Option } from "effect"
import type { Env } from "./env.js"
import * as Inbox from "./inbox.js"
import * as Lifecycle from "./lifecycle.js"
import { publish } from "./live.js"
import { locked, read, recordInbox } from "./state.js"

/** Whether a send said anything about staleness (one test for a plain send). */
export const isStale = (options: Message.SendOptions): boolean =>
  options.ttl !== undefined || options.expiresAt !== undefined || options.supersedes !== undefined

/** The staleness a send asks for, its `ttl` turned into an instant on the `Clock` (the earlier deadline wins). */
export const staleOf = (options: Message.SendOptions): Effect.Effect<Inbox.Stale> =>
  options.ttl === undefined
    ? Effect.succeed(fields(options.expiresAt, options.supersedes))
    : Effect.map(Clock.currentTimeMillis, (now) => {
      const at = now + options.ttl!
      return fields(options.expiresAt === undefined ? at : Math.min(at, options.expiresAt), options.supersedes)
    })

/** Only the fields that are set: a plain item carries no staleness keys at all. */
const fields = (expiresAt: number | undefined, supersedes: string | undefined): Inbox.Stale => ({
  ...(expiresAt === undefined ? {} : { expiresAt }),
  ...(supersedes === undefined ? {} : { supersedes })
})

/** Whether `stale` says the item has expired at the `Clock`'s instant now. */
export const hasExpired = (stale: Inbox.Stale): Effect.Effect<boolean> =>
  stale.expiresAt === undefined
    ? Effect.succeed(false)
    : Effect.map(Clock.currentTimeMillis, (now) => stale.expiresAt! <= now)

/**
 * Discards the pending items a send with key `key` supersedes, naming `by` (the new message). Must run holding the
 * lock, before `by` is accepted: one `inbox/settled { discarded, superseded, by }` per item, one live discard.
 */
export const supersedeLocked = Effect.fnUntraced(function*(env: Env, key: string, by: Ids.AgentMessageId) {
  const ids = yield* Inbox.withKey(env.inbox, key)
  if (ids.length === 0) return
  yield* discardLocked(env, ids, "superseded", by)
})

/**
 * Withdraws these pending items and settles them as discarded with `cause` (durably), then publishes one
 * `agent/inbox/discard { reason: cause }`. Must run holding the lock.
 */
const discardLocked = Effect.fnUntraced(function*(
  env: Env,
  ids: ReadonlyArray<Ids.AgentMessageId>,
  cause: "expired" | "superseded",
  by?: Ids.AgentMessageId
) {
  const messages: Array<Message.AgentMessage> = []
  for (const id of ids) {
    const item = yield* Inbox.withdraw(env.inbox, id, false)
    if (Option.isSome(item)) messages.push(item.value.message)
  }
  const [first, ...rest] = messages
  if (first === undefined) return
  yield* recordInbox(
    env,
    messages.map((message) =>
      by === undefined
        ? { type: "inbox/settled" as const, id: message.id, fate: "discarded" as const, cause }
        : { type: "inbox/settled" as const, id: message.id, fate: "discarded" as const, cause, by }
    )
  )
  yield* publish(env, { type: "agent/inbox/discard", messages: [first, ...rest], reason: cause })
})

/** Discards every pending item that has expired by now. Must run holding the lock; a disposed agent keeps them. */
const expireLocked = Effect.fnUntraced(function*(env: Env) {
  if (Lifecycle.isDisposed((yield* read(env)).lifecycle)) return
  const ids = yield* Inbox.expiredAt(env.inbox, yield* Clock.currentTimeMillis)
  if (ids.length > 0) yield* discardLocked(env, ids, "expired")
})

/**
 * Settles a message that expired without being pending any more (claimed at or after its deadline, or accepted
 * already expired): its discard record and event. Must run holding the lock.
 */
export const expiredLocked = Effect.fnUntraced(function*(env: Env, message: Message.AgentMessage) {
  yield* recordInbox(env, [{ type: "inbox/settled", id: message.id, fate: "discarded", cause: "expired" }])
  yield* publish(env, { type: "agent/inbox/discard", messages: [message], reason: "expired" })
})

/**
 * Arms the expiry of an item due at `at`: a fiber of the agent's own sleeps on the `Clock` until then and expires,
 * holding the lock, whatever is due (so `TestClock` decides it). Items taken meanwhile are simply not found.
 */
export const armExpiry = (env: Env, at: number): Effect.Effect<unknown> =>
  Effect.forkIn(
    // Forked from inside a critical section (uninterruptible): the sleep itself must stay interruptible, or disposal
    // (which closes the agent's fibers) would wait for the deadline.
    Effect.interruptible(Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.zipRight(Effect.sleep(Duration.millis(Math.max(0, at - now))), locked(env, () => expireLocked(env)))
    )),
    env.fibers
  )
