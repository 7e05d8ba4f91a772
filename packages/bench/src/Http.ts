/**
 * The HTTP scenario (ADR 0063): what reaching one Harness agent through `@harness/server` costs against
 * the same agent in process, each figure as a ratio HTTP ÷ in-process. One process, the server on loopback
 * (`Server.layerNode`, memory store, an instant scripted model), the typed client (`Client`) over Node's HTTP client:
 *
 * - **latency**: send → `agent/inbox/dequeue` of an idle agent (`followup` in process; `POST …/followup`, then the
 *   dequeue read from the session's Server-Sent Events), p50 and p99;
 * - **durable events/s to one subscriber**: a burst of turns (one `batch`), timed from the batch until the subscriber
 *   has received the last `turn/end` (in process `agent.subscribe`; over HTTP one `GET …/events`);
 * - **fan-out**: `subscribers` subscribers on one agent — heap per subscriber after a forced GC, and durable events
 *   delivered per second, all subscribers together, over a burst of turns. Over HTTP the heap counts both ends of
 *   each connection (client and server share the process): an upper bound on the server's share.
 *
 * Every phase checks what it measured: each sample saw the dequeue of its own message, and every subscriber received
 * every durable event once, in seq order, with no gap.
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Agent } from "@harness/agent"
import type { AgentEvent, Ids, SessionEvent } from "@harness/domain"
import { Message } from "@harness/domain"
import { Client, Server } from "@harness/server"
import { SessionLog, SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import { Deferred, Effect, Fiber, Layer, Queue, Redacted, Ref, Stream } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

/** How big a run is. */
export interface Sizes {
  /** Latency samples per side. */
  readonly samples: number
  /** Turns of the one-subscriber burst. */
  readonly turns: number
  /** Subscribers of the fan-out. */
  readonly subscribers: number
  /** Turns of the fan-out burst. */
  readonly fanoutTurns: number
}

/** The full run (`npm run http -w @harness/bench`). */
export const full: Sizes = { samples: 300, turns: 1000, subscribers: 1000, fanoutTurns: 20 }
/** `--quick`: seconds. */
export const quick: Sizes = { samples: 50, turns: 200, subscribers: 100, fanoutTurns: 5 }

/** One side's figures (in process, or over HTTP). */
interface Side {
  readonly latencyP50Micros: number
  readonly latencyP99Micros: number
  readonly durableEventsPerSecond: number
  readonly fanoutBytesPerSubscriber: number
  readonly fanoutEventsPerSecond: number
}

/** A run: both sides, what the bursts delivered, and every check that failed (none on a good run). */
export interface Figures {
  readonly sizes: Sizes
  readonly inProcess: Side
  readonly http: Side
  /** Durable events of the one-subscriber burst, and of the fan-out burst per subscriber. */
  readonly burstEvents: number
  readonly fanoutEvents: number
  readonly failures: ReadonlyArray<string>
}

const secret = "bench-http-secret"

/** A forced full GC (`--expose-gc` turned on at run time when the process was started without it). */
const gc: () => void = (() => {
  setFlagsFromString("--expose-gc")
  return runInNewContext("gc") as () => void // the function V8 just exposed
})()

const heap = Effect.sync(() => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
})

const now = Effect.sync(() => performance.now())

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN

/** What one subscriber received: the durable events' seqs, in order of arrival. */
interface Received {
  readonly seqs: Ref.Ref<Array<number>>
  readonly ends: Ref.Ref<number>
}

const received: Effect.Effect<Received> = Effect.suspend(() =>
  Effect.zipWith(Ref.make<Array<number>>([]), Ref.make(0), (seqs, ends) => ({ seqs, ends }))
)

const record = (into: Received, event: SessionEvent.SessionEvent) =>
  Effect.zipRight(
    Ref.update(into.seqs, (all) => {
      all.push(event.seq)
      return all
    }),
    event.type === "turn/end" ? Ref.update(into.ends, (n) => n + 1) : Effect.void
  )

/** Polls (yielding) until `check` holds. */
const until = (check: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    while (!(yield* check)) yield* Effect.sleep("1 millis")
  })

/** The check that a subscriber received `expected` durable events, contiguous from `from`, once each. */
export const checkSeqs = (name: string, seqs: ReadonlyArray<number>, from: number, expected: number): Array<string> => {
  if (seqs.length !== expected) return [`${name}: ${seqs.length} durable events, expected ${expected}`]
  const bad = seqs.findIndex((seq, i) => seq !== from + i)
  return bad === -1 ? [] : [`${name}: event ${bad} has seq ${seqs[bad]}, expected ${from + bad}`]
}

const replies = (n: number) => Array.from({ length: n }, () => ScriptedModel.textResponse("ok"))

const turnsOf = (sizes: Sizes) => sizes.samples + sizes.turns + sizes.fanoutTurns + 10

const burst = (n: number, label: string) =>
  Array.from({ length: n }, (_, i) => ({
    send: [Message.make(`${label} ${i}`), { target: "next-turn", wakeup: true }] as const
  }))

/** What one side measured, in its own units: the raw figures {@link measured} turns into a {@link Side}. */
interface Measured {
  /** Send → dequeue, in µs, one per sample. */
  readonly latencies: Array<number>
  readonly burstEvents: number
  readonly burstSeconds: number
  /** The heap before and after the fan-out's subscribers subscribed. */
  readonly before: number
  readonly after: number
  readonly fanoutEvents: number
  readonly fanSeconds: number
  readonly failures: Array<string>
}

/** A side's figures from what it measured (sorts `latencies` in place), with its event counts and failures. */
const measured = (sizes: Sizes, m: Measured) => {
  m.latencies.sort((a, b) => a - b)
  return {
    side: {
      latencyP50Micros: percentile(m.latencies, 0.5),
      latencyP99Micros: percentile(m.latencies, 0.99),
      durableEventsPerSecond: m.burstEvents / m.burstSeconds,
      fanoutBytesPerSubscriber: (m.after - m.before) / sizes.subscribers,
      fanoutEventsPerSecond: (m.fanoutEvents * sizes.subscribers) / m.fanSeconds
    } satisfies Side,
    burstEvents: m.burstEvents,
    fanoutEvents: m.fanoutEvents,
    failures: m.failures
  }
}

/** The in-process side: one agent, its own subscriptions. */
const inProcess = (sizes: Sizes) =>
  Effect.gen(function*() {
    const failures: Array<string> = []
    const session = yield* SessionLog.make()
    const agent = yield* Agent.make({ session })

    // Latency: send → dequeue on an idle agent.
    const events = yield* agent.subscribe
    const latencies: Array<number> = []
    for (let i = 0; i < sizes.samples; i++) {
      const start = yield* now
      const id = yield* agent.followup(Message.make(`latency ${i}`))
      let seen = false
      while (!seen) {
        const event = yield* Queue.take(events)
        if (event.type === "agent/inbox/dequeue" && event.message.id === id) seen = true
      }
      latencies.push(((yield* now) - start) * 1000)
      yield* agent.whenIdle
    }
    if (latencies.length !== sizes.samples) failures.push("in process: a latency sample is missing")

    // One subscriber follows a burst.
    const one = yield* received
    const follower = yield* agent.subscribe
    const first = (yield* agent.log).length
    const reader = yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(follower), (event) =>
      event.type === "session/event" ? record(one, event.event) : Effect.void)))
    const burstStart = yield* now
    yield* agent.batch(burst(sizes.turns, "burst"))
    yield* until(Effect.map(Ref.get(one.ends), (n) =>
      n >= sizes.turns))
    const burstSeconds = ((yield* now) - burstStart) / 1000
    yield* agent.whenIdle
    yield* Fiber.interrupt(reader)
    const burstEvents = (yield* agent.log).length - first
    failures.push(...checkSeqs("in process, one subscriber", yield* Ref.get(one.seqs), first, burstEvents))

    // Fan-out.
    const before = yield* heap
    const subscribers = yield* Effect.forEach(Array.from({ length: sizes.subscribers }), () =>
      Effect.gen(function*() {
        const into = yield* received
        const queue = yield* agent.subscribe
        yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(queue), (event) =>
          event.type === "session/event" ? record(into, event.event) : Effect.void)))
        return into
      }))
    const after = yield* heap
    const fanFirst = (yield* agent.log).length
    const fanStart = yield* now
    yield* agent.batch(burst(sizes.fanoutTurns, "fan-out"))
    yield* until(Effect.map(
      Effect.forEach(subscribers, (s) => Ref.get(s.ends)),
      (all) => all.every((n) => n >= sizes.fanoutTurns)
    ))
    const fanSeconds = ((yield* now) - fanStart) / 1000
    yield* agent.whenIdle
    const fanoutEvents = (yield* agent.log).length - fanFirst
    for (const [i, s] of subscribers.entries()) {
      failures.push(...checkSeqs(`in process, subscriber ${i}`, yield* Ref.get(s.seqs), fanFirst, fanoutEvents))
    }
    return measured(sizes, { latencies, burstEvents, burstSeconds, before, after, fanoutEvents, fanSeconds, failures })
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.merge(SessionStore.layerMemory, ScriptedModel.layer(replies(turnsOf(sizes)))))
  )

/**
 * Opens a session's event stream after `lastEventId` in a fiber of the scope; returns that fiber once the stream's
 * `ready` frame arrived. Durable events go to `into`, live ones to `live` (when given).
 */
const follow = (
  baseUrl: string,
  session: Ids.SessionId,
  lastEventId: number,
  into: Received,
  live?: Queue.Queue<AgentEvent.AgentEvent>
) =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<void>()
    const fiber = yield* Client.events({ baseUrl, token: secret, session, lastEventId }).pipe(
      Stream.runForEach((frame) =>
        frame._tag === "Ready"
          ? Deferred.succeed(ready, undefined)
          : frame._tag === "Durable"
          ? record(into, frame.event)
          : frame._tag === "Live" && live !== undefined
          ? Queue.offer(live, frame.event)
          : Effect.void
      ),
      Effect.orDie,
      Effect.forkScoped
    )
    yield* Deferred.await(ready)
    return fiber
  })

/** The HTTP side: the same agent behind `Server.layer` on loopback, reached with the typed client. */
const overHttp = (sizes: Sizes) =>
  Effect.gen(function*() {
    const failures: Array<string> = []
    const baseUrl = yield* HttpServer.addressFormattedWith(Effect.succeed)
    const client = yield* Client.make({ baseUrl, token: secret })
    const { id } = yield* client.sessions.create({ payload: {} })
    const path = { id }

    const live = yield* Queue.unbounded<AgentEvent.AgentEvent>()
    const main = yield* received
    const mainFiber = yield* follow(baseUrl, id, -1, main, live)
    const latencies: Array<number> = []
    for (let i = 0; i < sizes.samples; i++) {
      const start = yield* now
      const sent = yield* client.agent.followup({ path, payload: { message: Message.make(`latency ${i}`) } })
      let seen = false
      while (!seen) {
        const event = yield* Queue.take(live)
        if (event.type === "agent/inbox/dequeue" && event.message.id === sent) seen = true
      }
      latencies.push(((yield* now) - start) * 1000)
      yield* until(Effect.map(Ref.get(main.ends), (n) => n >= i + 1))
    }

    const lastSeq = (yield* client.sessions.snapshot({ path, urlParams: { tail: 1 } })).lastSeq
    yield* until(Effect.map(Ref.get(main.seqs), (seqs) => seqs.at(-1) === lastSeq))
    yield* Fiber.interrupt(mainFiber)
    failures.push(...checkSeqs("HTTP, the latency subscriber", yield* Ref.get(main.seqs), 0, lastSeq + 1))
    const one = yield* received
    const oneFiber = yield* follow(baseUrl, id, lastSeq, one)
    const burstStart = yield* now
    yield* client.agent.batch({ path, payload: { operations: burst(sizes.turns, "burst") } })
    yield* until(Effect.map(Ref.get(one.ends), (n) => n >= sizes.turns))
    const burstSeconds = ((yield* now) - burstStart) / 1000
    const burstLast = (yield* client.sessions.snapshot({ path, urlParams: { tail: 1 } })).lastSeq
    const burstEvents = burstLast - lastSeq
    yield* until(Effect.map(Ref.get(one.seqs), (seqs) => seqs.at(-1) === burstLast))
    yield* Fiber.interrupt(oneFiber)
    failures.push(...checkSeqs("HTTP, one subscriber", yield* Ref.get(one.seqs), lastSeq + 1, burstEvents))

    const before = yield* heap
    const subscribers = yield* Effect.forEach(Array.from({ length: sizes.subscribers }), () =>
      Effect.flatMap(received, (into) => Effect.as(follow(baseUrl, id, burstLast, into), into)), {
      concurrency: 50
    })
    const after = yield* heap
    const fanStart = yield* now
    yield* client.agent.batch({ path, payload: { operations: burst(sizes.fanoutTurns, "fan-out") } })
    yield* until(Effect.map(
      Effect.forEach(subscribers, (s) =>
        Ref.get(s.ends)),
      (all) =>
        all.every((n) => n >= sizes.fanoutTurns)
    ))
    const fanSeconds = ((yield* now) - fanStart) / 1000
    const fanLast = (yield* client.sessions.snapshot({ path, urlParams: { tail: 1 } })).lastSeq
    const fanoutEvents = fanLast - burstLast
    for (const [i, s] of subscribers.entries()) {
      failures.push(...checkSeqs(`HTTP, subscriber ${i}`, yield* Ref.get(s.seqs), burstLast + 1, fanoutEvents))
    }
    return measured(sizes, { latencies, burstEvents, burstSeconds, before, after, fanoutEvents, fanSeconds, failures })
  }).pipe(
    Effect.scoped,
    Effect.provide(
      Server.layer({
        tokens: [{ name: "bench", scopes: ["admin"], secret: Redacted.make(secret) }],
        rateLimit: false,
        heartbeat: false,
        subscriberBuffer: 1_000_000
      }).pipe(
        Layer.provideMerge(Server.layerNode({ port: 0 })),
        Layer.provide([SessionStore.layerMemory, ScriptedModel.layer(replies(turnsOf(sizes)))]),
        Layer.merge(NodeHttpClient.layer)
      )
    )
  )

/**
 * Runs the scenario at `sizes`: the in-process side, then the HTTP side (each on a fresh agent).
 */
export const run = (sizes: Sizes): Effect.Effect<Figures> =>
  Effect.gen(function*() {
    const local = yield* inProcess(sizes)
    const remote = yield* overHttp(sizes)
    const failures = [...local.failures, ...remote.failures]
    if (local.burstEvents !== remote.burstEvents) {
      failures.push(`the bursts logged ${local.burstEvents} and ${remote.burstEvents} events: not the same work`)
    }
    return {
      sizes,
      inProcess: local.side,
      http: remote.side,
      burstEvents: remote.burstEvents,
      fanoutEvents: remote.fanoutEvents,
      failures
    }
  }).pipe(Effect.orDie)

const fixed = (n: number, digits = 1) => n.toFixed(digits)

/** The figures as a Markdown table: each row a figure on both sides and its ratio (HTTP ÷ in-process). */
export const table = (figures: Figures): string => {
  const a = figures.inProcess
  const b = figures.http
  const row = (name: string, x: number, y: number, better: string) =>
    `| ${name} | ${fixed(x)} | ${fixed(y)} | ${fixed(y / x, 2)} | ${better} |`
  const s = figures.sizes
  return [
    `| figure | in process | HTTP | HTTP ÷ in process | better |`,
    `|---|---:|---:|---:|---|`,
    row(`send → dequeue p50 (µs, ${s.samples} samples)`, a.latencyP50Micros, b.latencyP50Micros, "lower"),
    row(`send → dequeue p99 (µs)`, a.latencyP99Micros, b.latencyP99Micros, "lower"),
    row(
      `durable events/s to one subscriber (${s.turns} turns, ${figures.burstEvents} events)`,
      a.durableEventsPerSecond,
      b.durableEventsPerSecond,
      "higher"
    ),
    row(
      `heap per subscriber, ${s.subscribers} subscribers (bytes)`,
      a.fanoutBytesPerSubscriber,
      b.fanoutBytesPerSubscriber,
      "lower"
    ),
    row(
      `events/s delivered to ${s.subscribers} subscribers (${s.fanoutTurns} turns, ${figures.fanoutEvents} events each)`,
      a.fanoutEventsPerSecond,
      b.fanoutEventsPerSecond,
      "higher"
    )
  ].join("\n")
}
