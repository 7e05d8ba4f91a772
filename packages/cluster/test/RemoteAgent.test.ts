/**
 * `RemoteAgent` over the entity's test client: the local agent's operations, ids minted on the client, sends from
 * concurrent callers accepted in call order, events that open with the status.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Layer, Stream } from "effect"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { prompt, sessionId, storedEvents } from "./fixtures.js"

const TestLayer = Layer.mergeAll(ShardingConfig.layer(), SessionStore.layerMemory, S.layer())

const setup = Effect.gen(function*() {
  const makeClient = yield* Entity.makeTestClient(AgentEntity.AgentEntity, AgentEntity.layer())
  const agent = yield* RemoteAgent.fromClient(sessionId, yield* makeClient(sessionId))
  return { agent, store: yield* SessionStore.SessionStore, model: yield* S.ScriptedModel }
})

describe("RemoteAgent", () => {
  it.scoped("R184/R191: ids are minted on the client; concurrent sends are accepted in call order", () =>
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
