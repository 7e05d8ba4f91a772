/**
 * The agent entity through `Entity.makeTestClient` (the entity's real handlers and RPC server, in memory, no message
 * storage): every RPC answers what the agent answers and round-trips its schemas; an open `Events` subscription does
 * not hold a send back, one opened after a seq resumes there, and one from now opens with the log's last seq; a
 * duplicate id is accepted once; a redelivered `ifTurn` cancel of a closed turn does nothing. Every test ends with the
 * session's stored log passing `checkLog`.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { RpcSchema } from "@effect/rpc"
import { assert, describe, it } from "@effect/vitest"
import { AgentEvent, Operations } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Layer, Option, Queue, Schema, Stream } from "effect"
import { AgentEntity } from "../src/index.js"
import { mid, prompt, roundTrip, sessionId, storedEvents } from "./fixtures.js"

const TestLayer = Layer.mergeAll(ShardingConfig.layer(), SessionStore.layerMemory, S.layer())

/** A test client of the entity for the session, its store and the scripted model. */
const setup = Effect.gen(function*() {
  const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
  const client = yield* makeClient(sessionId)
  return { client, store: yield* SessionStore.SessionStore, model: yield* S.ScriptedModel }
})

/** The stored log passes `checkLog`. */
const assertLogClean = (store: SessionStore.Service) =>
  Effect.map(storedEvents(store), (events) => assert.deepStrictEqual(LogCheck.checkLog(events), []))

type Client = Effect.Effect.Success<typeof setup>["client"]

/** An open `Events` subscription: its events land on a queue; open once its first event (the status) arrived. */
const subscribed = (client: Client) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<AgentEvent.AgentEvent>()
    yield* client.Events({}).pipe(Stream.runForEach((e) => Queue.offer(queue, e)), Effect.forkScoped)
    yield* takeUntil(queue, (e) => e.type === "agent/status")
    return queue
  })

/** Takes events from the queue up to and including the first that matches; answers them. */
const takeUntil = (queue: Queue.Dequeue<AgentEvent.AgentEvent>, match: (e: AgentEvent.AgentEvent) => boolean) =>
  Effect.gen(function*() {
    const taken: Array<AgentEvent.AgentEvent> = []
    while (true) {
      const event = yield* Queue.take(queue)
      taken.push(event)
      if (match(event)) return taken
    }
  })

const userMessageIds = (store: SessionStore.Service) =>
  Effect.map(
    storedEvents(store),
    (events) =>
      events.flatMap((e) => e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : [])
  )

describe("AgentEntity", () => {
  it.scoped("R186: every RPC of the protocol answers what the agent answers, and its payload and answer round-trip", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      const call = <A, E>(rpc: AgentEntity.Rpcs, payload: unknown, effect: Effect.Effect<A, E>) =>
        Effect.exit(effect).pipe(Effect.tap((exit) => roundTrip(rpc, payload, exit)), Effect.flatten)

      yield* model.push(S.hanging(S.text("working")))
      const first = { id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) }
      assert.strictEqual(yield* call(AgentEntity.Followup, first, client.Followup(first)), mid("m-1"))
      const status = yield* client.Status(undefined)
      assert.strictEqual(status, "running")

      const send = {
        id: mid("m-2"),
        operation: new Operations.Send({ message: prompt("two"), options: { target: "next-turn", wakeup: false } })
      }
      assert.strictEqual(yield* call(AgentEntity.Send, send, client.Send(send)), mid("m-2"))
      const steer = { id: mid("m-3"), operation: new Operations.Steer({ message: prompt("three") }) }
      assert.strictEqual(yield* call(AgentEntity.Steer, steer, client.Steer(steer)), mid("m-3"))
      const inject = { id: mid("m-4"), operation: new Operations.Inject({ message: prompt("four") }) }
      assert.strictEqual(yield* call(AgentEntity.Inject, inject, client.Inject(inject)), mid("m-4"))
      const batch = {
        id: mid("b-1"),
        operation: new Operations.Batch({
          operations: [
            { send: [prompt("five"), { target: "next-turn", wakeup: false }] },
            { send: [prompt("six"), { target: "next-turn", wakeup: false, id: mid("m-6") }] }
          ]
        })
      }
      // A send of a batch without an id takes the batch's id and its index.
      assert.deepStrictEqual(yield* call(AgentEntity.Batch, batch, client.Batch(batch)), [mid("b-1/0"), mid("m-6")])

      const list = new Operations.ListInbox({})
      const pending = yield* call(AgentEntity.ListInbox, list, client.ListInbox(list))
      assert.deepStrictEqual(pending.map((item) => item.id), [mid("m-2"), mid("m-3"), mid("b-1/0"), mid("m-6")])

      const edit = {
        id: mid("e-1"),
        operation: new Operations.Edit({ id: mid("m-2"), message: prompt("two, edited") })
      }
      assert.strictEqual((yield* call(AgentEntity.Edit, edit, client.Edit(edit))).content[0]?.type, "text")
      const move = { id: mid("e-2"), operation: new Operations.Move({ id: mid("m-6"), position: 0 }) }
      assert.strictEqual((yield* call(AgentEntity.Move, move, client.Move(move))).id, mid("m-6"))
      const demote = { id: mid("e-3"), operation: new Operations.Demote({ id: mid("m-3") }) }
      assert.strictEqual((yield* call(AgentEntity.Demote, demote, client.Demote(demote))).placement, "queued")
      const promote = { id: mid("e-4"), operation: new Operations.Promote({ id: mid("m-3") }) }
      assert.strictEqual((yield* call(AgentEntity.Promote, promote, client.Promote(promote))).placement, "steering")
      const withdraw = { id: mid("e-5"), operation: new Operations.Withdraw({ id: mid("b-1/0") }) }
      assert.strictEqual((yield* call(AgentEntity.Withdraw, withdraw, client.Withdraw(withdraw)))._tag, "Withdrawn")
      const receipt = new Operations.Receipt({ id: mid("m-2") })
      assert.strictEqual((yield* call(AgentEntity.Receipt, receipt, client.Receipt(receipt)))._tag, "pending")

      // A failure travels as the operation's own error: retry while a turn runs is AgentBusyError.
      const retry = { id: mid("r-1"), operation: new Operations.Retry({}) }
      const busy = yield* Effect.flip(call(AgentEntity.Retry, retry, client.Retry(retry)))
      assert.strictEqual(busy._tag, "AgentBusyError")

      const cancel = {
        id: mid("c-1"),
        operation: new Operations.Cancel({ cause: "user", options: { ifTurn: 1, keepInbox: true } })
      }
      yield* model.push(S.textResponse("done"), S.textResponse("done again"))
      yield* call(AgentEntity.Cancel, cancel, client.Cancel(cancel))
      yield* client.WhenIdle(undefined)
      const ran = new Operations.AwaitReceipt({ id: mid("m-1") })
      assert.strictEqual((yield* call(AgentEntity.AwaitReceipt, ran, client.AwaitReceipt(ran)))._tag, "ran")
      // m-2 was parked (`wakeup: false`): it is still pending after the steer's turn, and a retry now runs a turn.
      const retried = { id: mid("r-2"), operation: new Operations.Retry({}) }
      yield* call(AgentEntity.Retry, retried, client.Retry(retried))
      yield* client.WhenIdle(undefined)
      assert.strictEqual(yield* client.Status(undefined), "idle")
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R186: the live events round-trip the AgentEvent schema", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      yield* model.push(S.textResponse("hello"))
      const queue = yield* subscribed(client)
      yield* client.Followup({ id: mid("m-1"), operation: new Operations.Followup({ message: prompt("hi") }) })
      const seen = yield* takeUntil(queue, (e) => e.type === "agent/settled")
      for (const event of seen) {
        const json = JSON.stringify(yield* Schema.encode(AgentEvent.AgentEvent)(event))
        const decoded = yield* Schema.decode(AgentEvent.AgentEvent)(JSON.parse(json))
        assert.strictEqual(JSON.stringify(yield* Schema.encode(AgentEvent.AgentEvent)(decoded)), json)
      }
      assert.isTrue(seen.some((e) => e.type === "session/event" && e.event.type === "turn/end"))
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R187: an open Events subscription does not hold a send back", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      yield* model.push(S.textResponse("first"))
      const queue = yield* subscribed(client)
      const id = yield* client.Followup({
        id: mid("m-1"),
        operation: new Operations.Followup({ message: prompt("one") })
      })
      assert.strictEqual(id, mid("m-1"))
      const seen = yield* takeUntil(queue, (e) => e.type === "agent/inbox/enqueue" && e.message.id === mid("m-1"))
      assert.isTrue(seen.length > 0)
      yield* client.WhenIdle(undefined)
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R254: Events after a seq gives every later durable event once, in seq order, then the live ones", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      yield* model.push(S.textResponse("first"), S.textResponse("second"))
      yield* client.Followup({ id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) })
      yield* client.WhenIdle(undefined)
      const before = yield* storedEvents(store)
      const after = before[Math.floor(before.length / 2)]!.seq

      const queue = yield* Queue.unbounded<AgentEvent.AgentEvent>()
      yield* client.Events({ after }).pipe(Stream.runForEach((e) => Queue.offer(queue, e)), Effect.forkScoped)
      const opened = yield* takeUntil(queue, (e) => e.type === "agent/status")
      assert.strictEqual(opened.length, 1, "the status comes first")
      yield* client.Followup({ id: mid("m-2"), operation: new Operations.Followup({ message: prompt("two") }) })
      yield* client.WhenIdle(undefined)
      const seen = yield* takeUntil(
        queue,
        (e) => e.type === "session/event" && e.event.type === "turn/end" && e.event.data.turn === 2
      )

      const stored = (yield* storedEvents(store)).map((e) => e.seq).filter((seq) => seq > after)
      const durable = seen.flatMap((e) => e.type === "session/event" ? [e.event.seq] : [])
      assert.deepStrictEqual(durable, stored)
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R225: Events from now opens with the log's last seq as `after`, and every durable event after it follows", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      yield* model.push(S.textResponse("first"), S.textResponse("second"))
      const lastSeq = Effect.map(storedEvents(store), (events) => events.at(-1)?.seq ?? -1)
      const open = Effect.gen(function*() {
        const events = client.Events({})
        const queue = yield* Queue.unbounded<Stream.Stream.Success<typeof events>>()
        yield* events.pipe(Stream.runForEach((e) => Queue.offer(queue, e)), Effect.forkScoped)
        return { queue, opening: yield* Queue.take(queue) }
      })
      // On a new session, then after a turn.
      const fresh = yield* open
      assert.deepStrictEqual(fresh.opening, { type: "agent/status", status: "idle", after: yield* lastSeq })
      yield* client.Followup({ id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) })
      yield* client.WhenIdle(undefined)
      const anchor = yield* lastSeq
      const { opening, queue } = yield* open
      assert.deepStrictEqual(opening, { type: "agent/status", status: "idle", after: anchor })
      yield* client.Followup({ id: mid("m-2"), operation: new Operations.Followup({ message: prompt("two") }) })
      yield* client.WhenIdle(undefined)
      const seen: Array<AgentEvent.AgentEvent> = []
      while (!seen.some((e) => e.type === "session/event" && e.event.type === "turn/end" && e.event.data.turn === 2)) {
        seen.push(yield* Queue.take(queue))
      }
      const durable = seen.flatMap((e) => e.type === "session/event" ? [e.event.seq] : [])
      assert.deepStrictEqual(durable, (yield* storedEvents(store)).map((e) => e.seq).filter((seq) => seq > anchor))

      // On the wire: the opening keeps `after`; a peer that reads plain events sees a status; one without `after`
      // still decodes.
      // `RpcSchema` types the stream's element schema as any schema; it is `Events`' own, which needs no context.
      const element = Option.getOrThrow(RpcSchema.getStreamSchemas(AgentEntity.Events.successSchema.ast))
        .success as Schema.Schema<unknown, unknown>
      const json = JSON.parse(JSON.stringify(yield* Schema.encodeUnknown(element)(opening)))
      assert.deepStrictEqual(yield* Schema.decodeUnknown(element)(json), opening)
      assert.deepStrictEqual(yield* Schema.decodeUnknown(AgentEvent.AgentEvent)(json), {
        type: "agent/status",
        status: "idle"
      })
      assert.deepStrictEqual(yield* Schema.decodeUnknown(element)({ type: "agent/status", status: "running" }), {
        type: "agent/status",
        status: "running"
      })
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R184: a duplicate id answers the original result and leaves one enqueue in the log", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      yield* model.push(S.textResponse("once"))
      const queue = yield* subscribed(client)
      const followup = { id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) }
      assert.strictEqual(yield* client.Followup(followup), mid("m-1"))
      // Redelivered while pending or running, then after its turn ran: the same answer, nothing accepted again.
      assert.strictEqual(yield* client.Followup(followup), mid("m-1"))
      yield* client.WhenIdle(undefined)
      assert.strictEqual(yield* client.Followup(followup), mid("m-1"))
      // A batch redelivered: its sends (one named, one given `<batch>/<index>`) are found again.
      const batch = {
        id: mid("b-1"),
        operation: new Operations.Batch({
          operations: [
            { send: [prompt("two"), { target: "next-turn", wakeup: false }] },
            { send: [prompt("three"), { target: "next-turn", wakeup: false, id: mid("m-3") }] }
          ]
        })
      }
      const results = yield* client.Batch(batch)
      assert.deepStrictEqual(yield* client.Batch(batch), results)
      yield* client.WhenIdle(undefined)
      const enqueued = Chunk.toReadonlyArray(yield* Queue.takeAll(queue)).flatMap((e) =>
        e.type === "agent/inbox/enqueue" ? [e.message.id] : []
      )
      assert.deepStrictEqual(enqueued, [mid("m-1"), mid("b-1/0"), mid("m-3")])
      assert.deepStrictEqual(yield* userMessageIds(store), [mid("m-1")])
      assert.strictEqual((yield* model.requests).length, 1)
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))

  it.scoped("R185: a redelivered cancel with ifTurn of a closed turn interrupts nothing and discards nothing", () =>
    Effect.gen(function*() {
      const { client, model, store } = yield* setup
      const queue = yield* subscribed(client)
      const streaming = (turn: number) => (e: AgentEvent.AgentEvent) =>
        e.type === "session/event" && e.event.type === "assistant/chunk" && e.event.data.turn === turn
      yield* model.push(S.hanging(S.text("one")))
      yield* client.Followup({ id: mid("m-1"), operation: new Operations.Followup({ message: prompt("one") }) })
      yield* takeUntil(queue, streaming(1))
      const cancel = { id: mid("c-1"), operation: new Operations.Cancel({ cause: "user", options: { ifTurn: 1 } }) }
      yield* client.Cancel(cancel)
      yield* client.WhenIdle(undefined)
      // Turn 2 runs with a follow-up queued behind it when the cancel of turn 1 is delivered again.
      yield* model.push(S.hanging(S.text("two")), S.textResponse("three"))
      yield* client.Followup({ id: mid("m-2"), operation: new Operations.Followup({ message: prompt("two") }) })
      yield* client.Followup({ id: mid("m-3"), operation: new Operations.Followup({ message: prompt("three") }) })
      yield* takeUntil(queue, streaming(2))
      yield* client.Cancel(cancel)
      assert.strictEqual(yield* client.Status(undefined), "running")
      assert.deepStrictEqual((yield* client.ListInbox(new Operations.ListInbox({}))).map((i) => i.id), [mid("m-3")])
      // Aimed at the open turn, it cancels; with keepInbox the queued turn then runs.
      yield* client.Cancel({
        id: mid("c-2"),
        operation: new Operations.Cancel({ cause: "user", options: { ifTurn: 2, keepInbox: true } })
      })
      yield* client.WhenIdle(undefined)
      const ends = (yield* storedEvents(store)).flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : [])
      assert.deepStrictEqual(ends, ["aborted", "aborted", "completed"])
      yield* assertLogClean(store)
    }).pipe(Effect.provide(TestLayer)))
})
