/**
 * Shared pieces of the runner-process tests: the sharding timings they run with (short, so a failover takes seconds),
 * this process as a client-only node over PostgreSQL, a free port, polling with a deadline, and event subscribers:
 * remote agents whose `Events` requests are watched, and subscribers checked against the log read back.
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { assert } from "@effect/vitest"
import type { AgentEvent, Ids } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { PostgresStore } from "@harness/store-postgres"
import type { Scope } from "effect"
import { Cause, Deferred, Effect, Layer, Option, Predicate, Redacted, Ref, Schedule, Stream } from "effect"
import * as net from "node:net"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { storedEvents } from "./fixtures.js"
import * as Postgres from "./postgres.js"
import * as Processes from "./processes.js"

/**
 * The sharding settings of the PostgreSQL tests: shard locks in a table with an expiry (an advisory lock would be held
 * by a frozen runner's open connection), a runner that stops heartbeating is gone after 3 s, its shards are taken
 * within the next refresh, and messages are polled every 200 ms.
 */
export const sharding = {
  shardsPerGroup: 12,
  shardLockDisableAdvisory: true,
  shardLockExpiration: "3 seconds",
  shardLockRefreshInterval: "1 second",
  refreshAssignmentsInterval: "300 millis",
  entityMessagePollInterval: "200 millis",
  entityReplyPollInterval: "100 millis",
  runnerHealthCheckInterval: "1 second",
  entityTerminationTimeout: "5 seconds",
  sendRetryInterval: "100 millis"
} as const

/** Polls `read` until `done` holds of its value; the deadline only bounds a failure. */
export const until = <A, E, R>(
  what: string,
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  deadline: number = 30_000
) =>
  read.pipe(
    Effect.filterOrFail(done, () => new Error(`not yet: ${what}`)),
    Effect.retry({
      schedule: Schedule.spaced("50 millis"),
      while: (e) => e instanceof Error && e.message.startsWith("not yet")
    }),
    Effect.timeoutFail({ duration: deadline, onTimeout: () => new Error(`no ${what} in time`) })
  )

/**
 * A fresh database, the bundled node program, and this process as a client-only node over the database with the
 * session store. The client comes first: it creates the tables, which two runners starting at once would race to
 * create.
 */
export const postgresCluster = Effect.gen(function*() {
  const url = yield* Postgres.database
  const program = yield* Processes.bundle
  const client = yield* clientLayer(url)
  const store = yield* Effect.provide(SessionStore.SessionStore, client.context)
  return { url, program, client, store }
})

/** A free loopback port. */
export const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * This process as a client-only node over the database at `url` (built in the scope), with the session store for
 * reading logs, and how many runners hold all the shards' locks between them (0 while some shard is unheld).
 */
export const clientLayer = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: sharding }).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(url) })),
        Layer.merge(PostgresStore.layer({ url: Redacted.make(url) }))
      )
    )
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const shardOwners = sql<{ readonly shards: string; readonly owners: string }>`
      SELECT COUNT(*) AS shards, COUNT(DISTINCT address) AS owners FROM cluster_locks
      WHERE acquired_at > NOW() - INTERVAL '3 seconds'`.pipe(
      Effect.map((rows) => Number(rows[0]?.shards) === sharding.shardsPerGroup ? Number(rows[0]?.owners) : 0),
      Effect.orElseSucceed(() => 0)
    )
    return { context, sql, shardOwners }
  })

/**
 * How one `Events` request went on the wire: the `after` it asked for, the `after` its first opening carried (where
 * its durable events start, R225), the durable events it carried, how many of them repeated a seq it had carried
 * already or skipped one (the cluster re-sends a request to the next host by itself, with its first payload), and how
 * it ended (`open` while it runs).
 */
interface Subscription {
  readonly after: number | undefined
  readonly opened: number | undefined
  readonly durable: number
  readonly repeats: number
  readonly skips: number
  readonly top: number | undefined
  readonly end: string
}

/** What an `Events` request carries: its opening (with `after`, R225), then the live events. */
type Element =
  | AgentEvent.AgentEvent
  | { readonly type: "agent/status"; readonly status: AgentEvent.AgentStatus; readonly after?: number | undefined }

const ending = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause)
    ? "interrupted by the entity"
    : Option.match(Cause.failureOption(cause), {
      onSome: (e) => `failed: ${Predicate.hasProperty(e, "_tag") ? String(e._tag) : String(e)}`,
      onNone: () => `died: ${Cause.pretty(cause).slice(0, 300)}`
    })

/**
 * A remote agent of session `id` through this node's `Sharding` whose entity client's `Events` requests are noted
 * (a proxy: the cluster's client is one, created lazily per RPC).
 */
const watchedAgent = (id: Ids.SessionId, options?: RemoteAgent.Options) =>
  Effect.gen(function*() {
    const client = (yield* AgentEntity.AgentEntity.client)(id)
    const subscriptions = yield* Ref.make<ReadonlyArray<Subscription>>([])
    const update = (index: number, f: (s: Subscription) => Subscription) =>
      Ref.update(subscriptions, (all) => all.map((s, i) => i === index ? f(s) : s))
    const note = (index: number) => (event: Element) =>
      event.type === "agent/status"
        ? update(index, (s) => s.opened === undefined && "after" in event ? { ...s, opened: event.after } : s)
        : event.type !== "session/event"
        ? Effect.void
        : update(index, (s) => {
          const seq = event.event.seq
          return {
            ...s,
            durable: s.durable + 1,
            repeats: s.repeats + (s.top !== undefined && seq <= s.top ? 1 : 0),
            skips: s.skips + (s.top !== undefined && seq > s.top + 1 ? 1 : 0),
            top: s.top === undefined ? seq : Math.max(s.top, seq)
          }
        })
    const events = (payload: { readonly after?: number | undefined }) =>
      Stream.unwrap(
        Ref.modify(subscriptions, (all) =>
          [all.length, [...all, {
            after: payload.after,
            opened: undefined,
            durable: 0,
            repeats: 0,
            skips: 0,
            top: payload.after,
            end: "open"
          }]] as const).pipe(Effect.map((index) =>
            client.Events(payload).pipe(
              Stream.tap(note(index)),
              Stream.onEnd(update(index, (s) => ({ ...s, end: "ended" }))),
              Stream.tapErrorCause((cause) => update(index, (s) => ({ ...s, end: ending(cause) }))),
              Stream.ensuring(update(index, (s) => s.end === "open" ? { ...s, end: "cut by the client" } : s))
            )
          ))
      )
    // The same client with its Events noted: the same call shape.
    const proxy = new Proxy(client, {
      get: (target, key, receiver) => key === "Events" ? events : Reflect.get(target, key, receiver)
    })
    const agent = yield* RemoteAgent.fromClient(id, proxy, options)
    return { agent, subscriptions: Ref.get(subscriptions) }
  })

/** A subscriber: the durable seqs its stream delivered, in order, and its failure if it failed. */
interface Subscriber {
  readonly seqs: Effect.Effect<ReadonlyArray<number>>
  readonly failure: Effect.Effect<string | undefined>
}

/** Runs `events` in the scope, recording what it delivers; returns once it is subscribed (its first event came). */
const subscribe = (
  events: Stream.Stream<AgentEvent.AgentEvent, RemoteAgent.RemoteAgentError>
): Effect.Effect<Subscriber, never, Scope.Scope> =>
  Effect.gen(function*() {
    const seqs = yield* Ref.make<ReadonlyArray<number>>([])
    const failure = yield* Ref.make<string | undefined>(undefined)
    const opened = yield* Deferred.make<void>()
    yield* events.pipe(
      Stream.runForEach((e) =>
        Effect.zipRight(
          Deferred.succeed(opened, undefined),
          e.type === "session/event" ? Ref.update(seqs, (all) => [...all, e.event.seq]) : Effect.void
        )
      ),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(Ref.set(failure, Cause.pretty(cause)), Deferred.succeed(opened, undefined))
      ),
      Effect.forkScoped
    )
    yield* Deferred.await(opened)
    return { seqs: Ref.get(seqs), failure: Ref.get(failure) }
  })

/**
 * Waits (polling, up to `deadline`) until the subscriber delivered what the session's log holds, then asserts that it
 * saw every durable seq of the log above `after` once, in order: -1 for a subscriber from seq -1, the anchor its first
 * opening carried for a subscriber from now (R225).
 */
const sawTheLog = (
  subscriber: Subscriber,
  store: SessionStore.Service,
  id: Ids.SessionId,
  after: number,
  deadline = 60_000
) =>
  Effect.gen(function*() {
    const expected = (log: ReadonlyArray<number>) => log.filter((seq) => seq > after)
    const read = Effect.all([
      subscriber.seqs,
      Effect.map(storedEvents(store, id), (events) => events.map((e) => e.seq))
    ])
    // The deadline only bounds a failure: the assertion below says what differs.
    yield* Effect.ignore(until(
      `the subscriber of ${id} caught up`,
      read,
      ([seqs, log]) => JSON.stringify(seqs) === JSON.stringify(expected(log)),
      deadline
    ))
    const [seqs, log] = yield* read
    assert.isUndefined(yield* subscriber.failure, `the subscriber of ${id} failed`)
    assert.deepStrictEqual(seqs, expected(log), `the subscriber of ${id}: every durable seq once, in order`)
    return seqs.length
  })

/**
 * Two subscribers per session, attached now through watched remote agents of this node: one from seq -1, one from
 * now. `check` waits for each to catch up with its session's log, asserts that it saw every durable seq once, in
 * order (R214) — the one from now every seq above the anchor its first request's opening carried (R225) — and sums up the `Events` requests that carried them: the durable events each delivered, how many
 * requests there were, the repeats and skips they carried, and how they ended.
 */
export const attachSubscribers = (ids: ReadonlyArray<Ids.SessionId>) =>
  Effect.gen(function*() {
    const attached = yield* Effect.forEach(ids, (id) =>
      Effect.gen(function*() {
        const { agent, subscriptions } = yield* watchedAgent(id)
        const fromStart = yield* subscribe(agent.eventsAfter(-1))
        const fromNow = yield* subscribe(agent.events)
        return { id, subscriptions, fromStart, fromNow }
      }))
    const check = (store: SessionStore.Service) =>
      Effect.gen(function*() {
        const delivered: Array<number> = []
        for (const { fromNow, fromStart, id, subscriptions } of attached) {
          delivered.push(yield* sawTheLog(fromStart, store, id, -1))
          // The first request from now whose opening arrived anchored the stream.
          const anchor = (yield* subscriptions).find((s) => s.after === undefined && s.opened !== undefined)?.opened
          assert.isDefined(anchor, `the subscriber from now of ${id} was anchored`)
          delivered.push(yield* sawTheLog(fromNow, store, id, anchor!))
        }
        const requests = (yield* Effect.forEach(attached, (a) => a.subscriptions)).flat()
        const endings: Record<string, number> = {}
        for (const r of requests) endings[r.end] = (endings[r.end] ?? 0) + 1
        return {
          delivered,
          requests: requests.length,
          repeats: requests.reduce((n, r) => n + r.repeats, 0),
          skips: requests.reduce((n, r) => n + r.skips, 0),
          endings
        }
      })
    return { check }
  })
