/**
 * `RemoteAgent` over the entity's test client: the local agent's operations, ids minted on the client, sends from
 * concurrent callers accepted in call order, events that open with the status, and event streams that survive a cut
 * subscription — ended, interrupted, re-sent in place with its first payload (repeats), or re-sent from now (a gap) —
 * with every durable event exactly once, in seq order; and a stream from now cut before its first durable event, which
 * resumes from where the entity subscribed.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import type { AgentEvent } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Cause, Deferred, Effect, Fiber, FiberId, Layer, Queue, Ref, Schedule, Stream, TestClock } from "effect"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { prompt, sessionId, storedEvents } from "./fixtures.js"

const TestLayer = Layer.mergeAll(ShardingConfig.layer(), SessionStore.layerMemory, S.layer())

const setup = Effect.gen(function*() {
  const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
  const agent = yield* RemoteAgent.fromClient(sessionId, yield* makeClient(sessionId))
  return { agent, store: yield* SessionStore.SessionStore, model: yield* S.ScriptedModel }
})

describe("RemoteAgent", () => {
  it.scoped("R191: a mutating call is not sent before the one before it was answered", () =>
    Effect.gen(function*() {
      const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
      const client = yield* makeClient(sessionId)
      const trace = yield* Ref.make<ReadonlyArray<string>>([])
      const gate = yield* Deferred.make<void>()
      const firstSent = yield* Deferred.make<void>()
      const note = (line: string) => Ref.update(trace, (lines) => [...lines, line])
      // The first send is held on the wire until the gate opens; every send notes when it leaves and is answered.
      const held = {
        ...client,
        Send: (input: Parameters<typeof client.Send>[0]) =>
          Effect.gen(function*() {
            const text = input.operation.message.content[0].text
            yield* note(`sent ${text}`)
            if (text === "one") {
              yield* Deferred.succeed(firstSent, undefined)
              yield* Deferred.await(gate)
            }
            const id = yield* client.Send(input)
            yield* note(`answered ${text}`)
            return id
          })
      } as unknown as RemoteAgent.Client // the test client with its Send wrapped: the same call shape
      const agent = yield* RemoteAgent.fromClient(sessionId, held)
      const parked = { target: "next-turn", wakeup: false } as const
      const sends = yield* Effect.fork(Effect.all(
        ["one", "two", "three"].map((text) => agent.send(prompt(text), parked)),
        { concurrency: "unbounded" }
      ))
      yield* Deferred.await(firstSent)
      yield* TestClock.adjust(0)
      assert.deepStrictEqual(yield* Ref.get(trace), ["sent one"])
      yield* Deferred.succeed(gate, undefined)
      const ids = yield* Fiber.join(sends)
      assert.deepStrictEqual(yield* Ref.get(trace), [
        "sent one",
        "answered one",
        "sent two",
        "answered two",
        "sent three",
        "answered three"
      ])
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), ids)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R184: ids are minted on the client; the live events open with the status", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* setup
      const [first] = yield* agent.events.pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(first, { type: "agent/status", status: "idle" })
      yield* model.push(S.textResponse("a"), S.textResponse("b"), S.textResponse("c"), S.textResponse("d"))
      const parked = { target: "next-turn", wakeup: false } as const
      const ids = yield* Effect.all(
        ["one", "two", "three"].map((text) => agent.send(prompt(text), parked)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(ids).size, 3)
      assert.deepStrictEqual((yield* agent.inbox).map((item) => item.id), ids)
      // A send that names an id keeps it: here one already accepted, so it is the same message again.
      assert.strictEqual(yield* agent.followup(prompt("again"), { id: ids[0]! }), ids[0])
      // A waking send claims the parked items first, in order.
      const last = yield* agent.followup(prompt("four"))
      yield* agent.whenIdle
      assert.strictEqual(yield* agent.status, "idle")
      const receipt = yield* agent.awaitReceipt(ids[2]!)
      assert.strictEqual(receipt._tag, "ran")
      const events = yield* storedEvents(store)
      assert.deepStrictEqual(
        events.flatMap((e) => e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []),
        [...ids, last]
      )
      assert.deepStrictEqual(LogCheck.checkLog(events), [])
    }).pipe(Effect.provide(TestLayer)))
})

/**
 * Runs `stream` in the scope, its events onto a queue: `takeThrough(match)` takes them, one at a time, into `seen`, up
 * to and including the first that matches.
 */
const recorded = (stream: Stream.Stream<AgentEvent.AgentEvent, RemoteAgent.RemoteAgentError>) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<AgentEvent.AgentEvent>()
    yield* stream.pipe(Stream.runForEach((e) => Queue.offer(queue, e)), Effect.forkScoped)
    const seen: Array<AgentEvent.AgentEvent> = []
    const takeThrough = (match: (e: AgentEvent.AgentEvent) => boolean) =>
      Effect.gen(function*() {
        while (true) {
          const event = yield* Queue.take(queue)
          seen.push(event)
          if (match(event)) return
        }
      })
    return { seen, takeThrough }
  })

/** How the first subscription is cut once it delivered turn 1's end, the way a runner's death or a shard move cuts it. */
type CutKind = "end" | "interrupt" | "die" | "replay" | "gap"

const isTurnEnd = (turn: number) => (e: AgentEvent.AgentEvent) =>
  e.type === "session/event" && e.event.type === "turn/end" && e.event.data.turn === turn

/**
 * The test client with its `Events` cut: the first subscription ends after turn 1's `turn/end` — by ending (the
 * runner's entity stopped), failing with an interruption (the entity's answer when it stops), dying (a client-only
 * node's socket to a killed runner), or by going on, once
 * the gate opens, with the same request again (`replay`: what the cluster does by itself when the runner dies: its
 * first payload, so repeats) or with a request from now (`gap`). Every later subscription waits for the gate, so
 * durable events are appended while the stream is cut. The `after` of each request is noted.
 */
const cutting = (client: RemoteAgent.Client, kind: CutKind, gate: Deferred.Deferred<void>) =>
  Effect.map(Ref.make<ReadonlyArray<number | undefined>>([]), (requests) => {
    const later = (payload: { readonly after?: number | undefined }) =>
      Stream.unwrap(Effect.as(Deferred.await(gate), client.Events(payload)))
    const events = (payload: { readonly after?: number | undefined }) =>
      Stream.unwrap(Effect.map(Ref.getAndUpdate(requests, (all) => [...all, payload.after]), (before): Stream.Stream<
        AgentEvent.AgentEvent,
        RemoteAgent.TransportError
      > => {
        if (before.length > 0) return later(payload)
        const head = client.Events(payload).pipe(Stream.takeUntil(isTurnEnd(1)))
        switch (kind) {
          case "end":
            return head
          case "interrupt":
            return Stream.concat(head, Stream.failCause(Cause.interrupt(FiberId.none)))
          case "die":
            // What a client-only node's socket to a SIGKILLed runner gives: a defect, not a typed failure.
            return Stream.concat(head, Stream.die(new Error("SocketError: An error occurred during Write")))
          case "replay":
            return Stream.concat(head, later(payload))
          case "gap":
            return Stream.concat(head, later({}))
        }
      }))
    // The test client with its Events replaced: the same call shape.
    return { client: { ...client, Events: events } as unknown as RemoteAgent.Client, requests }
  })

describe("RemoteAgent: events across cut subscriptions", () => {
  const cases: ReadonlyArray<readonly [CutKind, "events" | "eventsAfter"]> = [
    ["end", "eventsAfter"],
    ["interrupt", "eventsAfter"],
    ["die", "eventsAfter"],
    ["replay", "eventsAfter"],
    ["gap", "events"],
    ["end", "events"]
  ]
  for (const [kind, from] of cases) {
    it.scoped(`R214/R215: ${from}, cut by ${kind}, gives every durable event once, in seq order`, () =>
      Effect.gen(function*() {
        const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
        const gate = yield* Deferred.make<void>()
        const { client, requests } = yield* cutting(yield* makeClient(sessionId), kind, gate)
        const agent = yield* RemoteAgent.fromClient(sessionId, client, { resubscribe: Schedule.recurs(3) })
        const store = yield* SessionStore.SessionStore
        const model = yield* S.ScriptedModel
        yield* model.push(S.textResponse("a"), S.textResponse("b"), S.textResponse("c"), S.textResponse("d"))

        const { seen, takeThrough } = yield* recorded(from === "events" ? agent.events : agent.eventsAfter(-1))
        yield* takeThrough((e) => e.type === "agent/status")
        assert.strictEqual(seen.length, 1, "subscribed once its status arrived")

        // Turn 1 while subscribed; turns 2 and 3 while the subscription is cut; turn 4 once it is open again.
        for (const text of ["one", "two", "three"]) {
          yield* agent.followup(prompt(text))
          yield* agent.whenIdle
        }
        yield* takeThrough(isTurnEnd(1))
        yield* Deferred.succeed(gate, undefined)
        yield* takeThrough((e) => e.type === "agent/status")
        yield* agent.followup(prompt("four"))
        yield* agent.whenIdle
        yield* takeThrough(isTurnEnd(4))

        const stored = yield* storedEvents(store)
        const durable = seen.flatMap((e) => e.type === "session/event" ? [e.event.seq] : [])
        const expected = stored.map((e) => e.seq).filter((seq) => seq >= (from === "events" ? durable[0]! : 0))
        assert.deepStrictEqual(durable, expected, "every durable event once, in seq order, no gap")
        const turn1End = stored.find((e) => e.type === "turn/end" && e.data.turn === 1)!.seq
        // A repeat in place is dropped with no new request; every other cut resubscribes after turn 1's end.
        assert.deepStrictEqual(
          yield* Ref.get(requests),
          kind === "replay" ? [-1] : [from === "events" ? undefined : -1, turn1End]
        )
        assert.deepStrictEqual(LogCheck.checkLog(stored), [])
      }).pipe(Effect.provide(TestLayer)))
  }
})

/**
 * How a subscription from now is cut right after its opening, before any durable event: it ends (its runner's entity
 * stopped), or the cluster re-sends the request from now to a new host once the gate opens (`reopen`: an opening past
 * the anchor).
 */
type EarlyCut = "end" | "reopen"

describe("RemoteAgent: a stream from now is anchored where the entity subscribed", () => {
  const kinds: ReadonlyArray<EarlyCut> = ["end", "reopen"]
  for (const kind of kinds) {
    it.scoped(`R225: events, cut by ${kind} before its first durable event, gives every later durable event once`, () =>
      Effect.gen(function*() {
        const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
        const inner = yield* makeClient(sessionId)
        const gate = yield* Deferred.make<void>()
        const requests = yield* Ref.make<ReadonlyArray<number | undefined>>([])
        const later = (payload: { readonly after?: number | undefined }) =>
          Stream.unwrap(Effect.as(Deferred.await(gate), inner.Events(payload)))
        const events = (payload: { readonly after?: number | undefined }) =>
          Stream.unwrap(Effect.map(Ref.getAndUpdate(requests, (all) => [...all, payload.after]), (before) => {
            if (before.length > 0) return later(payload)
            const opening = inner.Events(payload).pipe(Stream.take(1))
            return kind === "end" ? opening : Stream.concat(opening, later({}))
          }))
        // The test client with its Events replaced: the same call shape.
        const client = { ...inner, Events: events } as unknown as RemoteAgent.Client
        const agent = yield* RemoteAgent.fromClient(sessionId, client, { resubscribe: Schedule.recurs(3) })
        const store = yield* SessionStore.SessionStore
        const model = yield* S.ScriptedModel
        yield* model.push(S.textResponse("a"), S.textResponse("b"), S.textResponse("c"), S.textResponse("d"))

        // A turn before the subscription: the anchor is the last seq of the log when the entity subscribes.
        yield* agent.followup(prompt("zero"))
        yield* agent.whenIdle
        const anchor = (yield* storedEvents(store)).at(-1)!.seq

        const { seen, takeThrough } = yield* recorded(agent.events)
        yield* takeThrough((e) => e.type === "agent/status")
        assert.deepStrictEqual(seen, [{ type: "agent/status", status: "idle" }], "the opening, passed on as a status")

        // Turns 2 and 3 while the subscription is cut; turn 4 once it is open again.
        for (const text of ["one", "two"]) {
          yield* agent.followup(prompt(text))
          yield* agent.whenIdle
        }
        yield* Deferred.succeed(gate, undefined)
        yield* agent.followup(prompt("three"))
        yield* agent.whenIdle
        yield* takeThrough(isTurnEnd(4))

        const stored = yield* storedEvents(store)
        const durable = seen.flatMap((e) => e.type === "session/event" ? [e.event.seq] : [])
        assert.deepStrictEqual(
          durable,
          stored.map((e) => e.seq).filter((seq) => seq > anchor),
          "every durable event after the anchor once, in seq order, no gap"
        )
        assert.deepStrictEqual(yield* Ref.get(requests), [undefined, anchor], "resubscribed after the anchor")
        assert.deepStrictEqual(LogCheck.checkLog(stored), [])
      }).pipe(Effect.provide(TestLayer)))
  }
})
