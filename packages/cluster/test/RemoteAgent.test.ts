/**
 * `RemoteAgent` over the entity's test client: the local agent's operations, ids minted on the client, sends from
 * concurrent callers accepted in call order, events that open with the status.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Fiber, Layer, Ref, Stream, TestClock } from "effect"
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
