/**
 * Failover with real processes over PostgreSQL (R253): two runner processes host four sessions, this process is a
 * client-only node, and the runner hosting a chosen session is SIGKILLed at seeded points — during acceptance (sends
 * in flight), mid-turn, mid-cancel (a cancel in flight while its turn unwinds) and during a batch — then replaced by a
 * fresh runner. Afterwards every send the client saw answered is in its session's log exactly once, no message id is
 * accepted (enqueued) twice, every log passes `checkLog`, and every call made around a kill was answered. Every
 * session has two subscribers attached through `RemoteAgent` from the start (one from seq -1, one from now); each saw
 * every durable seq of its session's log exactly once, in order, across the kills (R214).
 *
 * `HARNESS_CLUSTER_KILLS` sets the number of kills (default 2, so the file stays small in `npm test`);
 * `HARNESS_CLUSTER_SEED` the seed. The failover time of each kill (SIGKILL until the cut session's log shows the cut
 * turn closed by the new host) is printed with the sharding settings used, and how the subscribers' `Events`
 * requests ended.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Store } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Clock, Effect, Fiber } from "effect"
import { RemoteAgent } from "../src/index.js"
import { prompt, storedEvents, storedRecords } from "./fixtures.js"
import type { NodeConfig } from "./fixtures/node.js"
import * as Processes from "./processes.js"
import { attachSubscribers, freePort, postgresCluster, sharding, until } from "./runners.js"

const kills = Number(process.env.HARNESS_CLUSTER_KILLS ?? 2)
const seed = Number(process.env.HARNESS_CLUSTER_SEED ?? 7)
const kinds = ["mid-turn", "accept", "mid-cancel", "batch"] as const
const sessions = [0, 1, 2, 3].map((i) => Ids.SessionId.make(`f-${i}`))

const turnEnds = (events: ReadonlyArray<{ readonly type: string; readonly data?: unknown }>) =>
  events.filter((e) => e.type === "turn/end").length

describe("AgentEntity: failover over PostgreSQL", () => {
  it.live(
    `R253: ${kills} SIGKILLs of the hosting runner lose no accepted message, enqueue none twice, keep every log well-formed`,
    () =>
      Effect.gen(function*() {
        const { client, program, store, url } = yield* postgresCluster
        const startRunner = Effect.gen(function*() {
          const config: NodeConfig = { role: "runner", store: { kind: "pg", url }, port: yield* freePort, sharding }
          const node = yield* Processes.start(program, config)
          // Generous: a node starts in about a second alone, far slower on a machine shared with other work.
          yield* node.waitFor("ready", (l) => l._tag === "ready", { deadline: 120_000 })
          return node
        })
        const runners = [yield* startRunner, yield* startRunner]
        yield* until("two runners holding the shards", client.shardOwners, (n) => n === 2, 60_000)
        const agents = yield* Effect.forEach(sessions, (id) => Effect.provide(RemoteAgent.make(id), client.context))
        const subscribers = yield* Effect.provide(attachSubscribers(sessions), client.context)
        const answered: Array<Ids.AgentMessageId> = []
        const failovers: Array<{ readonly kind: string; readonly millis: number }> = []

        for (let k = 0; k < kills; k++) {
          const kind = kinds[k % kinds.length]!
          const index = (seed * 7919 + k * 104_729) % sessions.length
          const agent = agents[index]!
          const marker = `k${k}`
          const asked = (l: Processes.Line) => l._tag === "asked" && String(l.text).startsWith(marker)
          yield* agent.whenIdle
          const before = turnEnds(yield* storedEvents(store, sessions[index]!))
          const calls: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
          const send = (text: string) =>
            Effect.fork(Effect.tap(agent.followup(prompt(text)), (id) => Effect.sync(() => answered.push(id))))

          if (kind === "batch") {
            calls.push(
              yield* Effect.fork(
                Effect.tap(
                  agent.batch([1, 2, 3].map((i) => ({
                    send: [prompt(`${marker}.${i} [slow:800]`), { target: "next-turn", wakeup: true }] as const
                  }))),
                  (ids) => Effect.sync(() => answered.push(...ids.flatMap((id) => id === undefined ? [] : [id])))
                )
              )
            )
          } else if (kind === "mid-cancel") {
            const id = yield* agent.followup(prompt(`${marker}.1 [slow:3000]`))
            answered.push(id)
            calls.push(yield* send(`${marker}.2`))
          } else {
            calls.push(yield* send(`${marker}.1 [slow:${kind === "mid-turn" ? 3000 : 800}]`))
            if (kind === "accept") { for (const i of [2, 3]) calls.push(yield* send(`${marker}.${i}`)) }
          }
          const host = yield* Effect.raceAll(
            runners.map((node) => Effect.as(node.waitFor("the kill point's request", asked), node))
          )
          if (kind === "mid-cancel") {
            // The cancel names the turn it means (R185): a redelivery after the kill cannot cancel a later turn.
            const receipt = yield* agent.receipt(answered[answered.length - 1]!)
            const turn = receipt._tag === "ran" ? receipt.turn : undefined
            assert.isDefined(turn, `the cancelled message is running: ${JSON.stringify(receipt)}`)
            calls.push(yield* Effect.fork(agent.cancel("user", { ifTurn: turn!, keepInbox: true })))
            // The kill lands while the cancel is in flight or the turn unwinds, wherever the scheduler puts it.
            yield* Effect.yieldNow()
          }
          yield* host.signal("SIGKILL")
          const killedAt = yield* Clock.currentTimeMillis
          runners.splice(runners.indexOf(host), 1)
          yield* until(
            "the cut turn closed by the next host",
            storedEvents(store, sessions[index]!),
            (events) => turnEnds(events) > before,
            60_000
          )
          failovers.push({ kind, millis: (yield* Clock.currentTimeMillis) - killedAt })
          for (const call of calls) yield* Fiber.join(call)
          runners.push(yield* startRunner)
          yield* until("two runners holding the shards", client.shardOwners, (n) => n === 2, 60_000)
        }

        for (const agent of agents) yield* agent.whenIdle
        for (const id of sessions) {
          const events = yield* storedEvents(store, id)
          assert.deepStrictEqual(LogCheck.checkLog(events), [], `session ${id}`)
          const logged = events.flatMap((e) =>
            e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []
          )
          assert.strictEqual(new Set(logged).size, logged.length, `a message logged twice in ${id}`)
          const accepted = (yield* storedRecords(store, id)).flatMap((r) =>
            Store.isInboxRecord(r) && r.type === "inbox/accepted" ? [r.message.id] : []
          )
          assert.strictEqual(new Set(accepted).size, accepted.length, `a message enqueued twice in ${id}`)
        }
        const everyLogged = new Set<string>()
        for (const id of sessions) {
          for (const e of yield* storedEvents(store, id)) {
            if (e.type === "user/message" && e.data.messageId !== undefined) everyLogged.add(e.data.messageId)
          }
        }
        assert.deepStrictEqual(answered.filter((id) => !everyLogged.has(id)), [], "answered sends that were lost")
        const subscriptions = yield* subscribers.check(store)
        console.log(JSON.stringify({ kills, seed, failovers, subscriptions, sharding }))
      }).pipe(Effect.scoped),
    { timeout: 120_000 + kills * 90_000 }
  )
})
