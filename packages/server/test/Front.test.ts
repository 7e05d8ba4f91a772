/**
 * The server in front of the runners, over real HTTP on loopback: its agents are `@harness/cluster`'s
 * `ClusterAgent`s of an in-process cluster (`TestRunner`, one runner in memory) sharing the session store. Send,
 * events, inbox, withdraw and cancel answer as the local server's do, the durable events stream once and in order,
 * and the server never takes a session's writer lease: the runner does.
 */
import { MessageStorage, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { AgentEntity, ClusterAgent } from "@harness/cluster"
import type { AgentEvent } from "@harness/domain"
import { Ids, Message, SessionEvent, Store } from "@harness/domain"
import { LogCheck, SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import type { Queue } from "effect"
import { Chunk, Effect, Layer, Option, Redacted, Ref, Schema, Stream } from "effect"
import { Client, RemoteAgent, Server } from "../src/index.js"
import { addressOf, httpClient, tokens } from "./support.js"

/**
 * `TestRunner.layer` (one runner, storage in memory) whose entities get 1 s to stop at shutdown instead of 15 s: the
 * server's scope closes with entities still serving its subscriptions.
 */
const quickRunner = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(MessageStorage.layerMemory),
  Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
  Layer.provide(ShardingConfig.layer({ entityTerminationTimeout: "1 second" }))
)

/**
 * A cluster of one runner hosting the agent entity over a memory store, and a server in front of it whose agents are
 * `ClusterAgent`s over the same store, seen through a view that counts the leases the server asks for (and refuses
 * them). Serves on 127.0.0.1:0 in the current scope.
 */
const front = (replies: ReadonlyArray<ScriptedModel.Reply>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.makeMemory
    const runnerLeases = yield* Ref.make(0)
    const serverLeases = yield* Ref.make(0)
    const runnerStore: SessionStore.Service = {
      ...store,
      lease: (id) => Effect.zipRight(Ref.update(runnerLeases, (n) => n + 1), store.lease(id))
    }
    const serverStore: SessionStore.Service = {
      ...store,
      lease: (id) =>
        Effect.zipRight(
          Ref.update(serverLeases, (n) => n + 1),
          Effect.die(`the server asked for the writer lease of session ${id}`)
        )
    }
    const cluster = AgentEntity.layer().pipe(
      Layer.provideMerge(quickRunner),
      Layer.provide(Layer.succeed(SessionStore.SessionStore, runnerStore)),
      Layer.provideMerge(ScriptedModel.layer(replies))
    )
    const context = yield* Layer.build(
      Server.layer({ tokens, agents: ClusterAgent.make }).pipe(
        Layer.provideMerge(Server.layerNode()),
        Layer.provide(Layer.succeed(SessionStore.SessionStore, serverStore)),
        Layer.provideMerge(cluster)
      )
    )
    const { baseUrl } = addressOf(context)
    return {
      baseUrl,
      store,
      runnerLeases,
      serverLeases,
      client: yield* Client.make({ baseUrl, token: "send-secret" }).pipe(Effect.provide(httpClient))
    }
  })

/** Takes live events, one at a time, until one matches; answers them all. */
const takeUntil = (events: Queue.Dequeue<AgentEvent.AgentEvent>, done: (event: AgentEvent.AgentEvent) => boolean) =>
  Stream.fromQueue(events, { maxChunkSize: 1 }).pipe(
    Stream.takeUntil(done),
    Stream.runCollect,
    Effect.map(Chunk.toArray)
  )

const decodeRecord = Schema.decodeSync(Schema.parseJson(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord)))

describe("Server in front of the runners", () => {
  it.live(
    "R247: send, events, inbox, withdraw and cancel as the local server; the runner holds the lease",
    () =>
      Effect.gen(function*() {
        const server = yield* front([
          ScriptedModel.hanging(ScriptedModel.text("working")),
          ScriptedModel.textResponse("second answer")
        ])
        const client = server.client
        const { id } = yield* client.sessions.create({ payload: { title: "on the cluster" } })
        const path = { id }
        // A follower over Server-Sent Events, through the HTTP `RemoteAgent`: subscribed once the stream is ready.
        const follower = yield* RemoteAgent.make({
          baseUrl: server.baseUrl,
          token: Redacted.make("read-secret"),
          session: id
        })
          .pipe(Effect.provide(httpClient))
        const events = yield* follower.subscribe

        const first = yield* client.agent.send({
          path,
          payload: { message: Message.make("first"), options: { target: "next-turn", wakeup: true } }
        })
        const seen = yield* takeUntil(events, (e) => e.type === "session/event" && e.event.type === "assistant/chunk")
        const q1 = yield* client.agent.followup({ path, payload: { message: Message.make("q1") } })
        const q2 = yield* client.agent.followup({
          path,
          payload: { message: Message.make("q2"), options: { id: Ids.AgentMessageId.make("q-2") } }
        })
        assert.strictEqual(q2, "q-2")
        const inbox = yield* client.agent.inbox({ path })
        assert.deepStrictEqual(inbox.map((item) => [item.id, item.placement]), [[q1, "queued"], [q2, "queued"]])
        assert.strictEqual((yield* client.agent.withdraw({ path, payload: { id: q2 } }))._tag, "Withdrawn")
        const cancelled = yield* client.agent.cancel({ path, payload: { cause: "user", options: { keepInbox: true } } })
        assert.deepStrictEqual(cancelled, { discarded: [], kept: [q1] })
        seen.push(
          ...yield* takeUntil(
            events,
            (e) => e.type === "session/event" && e.event.type === "turn/end" && e.event.data.turn === 2
          )
        )
        assert.deepStrictEqual(yield* client.agent.inbox({ path }), [])
        assert.deepStrictEqual(yield* client.agent.receipt({ path, payload: { id: first } }), { _tag: "ran", turn: 1 })

        // What the store holds is what a local server's agent would have written, and the stream gave it all, in order.
        const records = (yield* client.sessions.records({ path })).trim().split("\n").map((line) => decodeRecord(line))
        const stored = records.filter((r): r is SessionEvent.SessionEvent => !Store.isInboxRecord(r))
        assert.deepStrictEqual(LogCheck.checkLog(stored), [])
        assert.deepStrictEqual(stored.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : []), [
          "aborted",
          "completed"
        ])
        assert.deepStrictEqual(stored.flatMap((e) => e.type === "user/message" ? [e.data.messageId] : []), [first, q1])
        // The live subscriber saw every durable event once, in seq order; a stream resumed from -1 gives them again.
        assert.deepStrictEqual(
          seen.flatMap((e) => e.type === "session/event" ? [e.event.seq] : []),
          stored.map((e) => e.seq)
        )
        const resumed = yield* Client.events({
          baseUrl: server.baseUrl,
          token: "read-secret",
          session: id,
          lastEventId: -1
        })
          .pipe(
            Stream.filterMap((e) => e._tag === "Durable" ? Option.some(e.event) : Option.none()),
            Stream.takeUntil((e) => e.seq === stored[stored.length - 1]!.seq),
            Stream.runCollect,
            Effect.provide(httpClient)
          )
        assert.deepStrictEqual(Chunk.toReadonlyArray(resumed), stored)
        assert.deepStrictEqual(yield* follower.log, stored)

        // The sessions list is the store's; the lease was the runner's only.
        assert.deepStrictEqual((yield* client.sessions.list()).map((s) => s.id), [id])
        assert.isAtLeast(yield* Ref.get(server.runnerLeases), 1)
        assert.strictEqual(yield* Ref.get(server.serverLeases), 0)
      }).pipe(Effect.scoped),
    120_000
  )
})
