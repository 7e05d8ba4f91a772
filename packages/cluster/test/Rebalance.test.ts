/**
 * Rebalance with real processes over PostgreSQL (R216, R224): one runner hosts eight sessions, six of them with two
 * subscribers attached through `RemoteAgent` (one from seq -1, one from now) and two with none. In each phase every
 * session runs a short turn that the model answers only once the test releases it (a gate file), with a follow-up
 * queued behind it; then a shard move starts — a second runner joins (loaded beforehand and released with a signal),
 * later it leaves with `SIGTERM` — and the test waits until every moving session's agent on the runner giving it up
 * has begun its graceful stop, and only then releases the turns. So what is asserted does not depend on how fast
 * anything runs: which sessions move is known before the move (the cluster's own assignment, a hash ring of the
 * runners, computed here and checked against the shard locks afterwards; the session ids are chosen from it so that
 * subscribed and unsubscribed sessions both move and stay), and every short turn of the move ends while its runner
 * holds it. Afterwards every short turn closed `completed`; each follow-up ran once, in order, on the session's host
 * after the move (the new one for a moved session, without running on the old one); every log passes `checkLog`;
 * every session ran its messages once each, in the order sent; every subscriber saw every durable seq of its session
 * exactly once, in order (R214). Each phase's outcome is printed as a table.
 */
import { EntityId, RunnerAddress, type ShardId } from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import type { SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Clock, Effect, HashRing } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { AgentEntity, RemoteAgent } from "../src/index.js"
import { prompt, storedEvents } from "./fixtures.js"
import type { NodeConfig } from "./fixtures/node.js"
import * as Processes from "./processes.js"
import { attachSubscribers, freePort, postgresCluster, sharding, until } from "./runners.js"

/**
 * The stop grace of the runners' entities: long, so that the test's own pace (seeing a runner's stop, writing the
 * gate files) never decides an outcome; the deadline only bounds a failure. The default grace (four fifths of
 * `entityTerminationTimeout`) is what a deployment gets.
 */
const stopGrace = "60 seconds"

/** How each turn of the log ended, by the id of the user message that opened it. */
const endsByMessage = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const turnOf = new Map<string, number>()
  const ends = new Map<number, string>()
  let turn = 0
  for (const e of events) {
    if (e.type === "turn/start") turn = e.data.turn
    if (e.type === "user/message" && e.data.messageId !== undefined) turnOf.set(e.data.messageId, turn)
    if (e.type === "turn/end") ends.set(e.data.turn, e.data.reason.kind)
  }
  return (id: Ids.AgentMessageId) => ends.get(turnOf.get(id) ?? -1)
}

/** Which runner port each shard of the group goes to with these runners: the cluster's own hash ring (weight 1). */
const assignment = (ports: ReadonlyArray<number>) => {
  const ring = HashRing.make<RunnerAddress.RunnerAddress>()
  for (const port of ports) HashRing.add(ring, RunnerAddress.make("127.0.0.1", port), { weight: 1 })
  const shards = HashRing.getShards(ring, sharding.shardsPerGroup) ?? []
  return (shard: ShardId.ShardId) => shards[shard.id - 1]!.port
}

describe("AgentEntity: rebalance over PostgreSQL", () => {
  it.live(
    "R216/R224: a runner joins and later leaves gracefully while short turns run and subscribers are attached; each turn finishes, its follow-up runs on the new host; no gap, no repeat",
    () =>
      Effect.gen(function*() {
        const { client, program, store, url } = yield* postgresCluster
        const gates = fs.mkdtempSync(path.join(os.tmpdir(), "harness-gates-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(gates, { recursive: true, force: true })))
        const ports = [yield* freePort, yield* freePort] as const
        const runner = (port: number, holdUntilSignal: boolean): NodeConfig => ({
          role: "runner",
          store: { kind: "pg", url },
          port,
          sharding,
          holdUntilSignal,
          gates,
          stopGrace
        })

        // The sessions, chosen by where the two-runner ring puts their shards: four that will move to the joining
        // runner (and back when it leaves), four that stay; three of each subscribed.
        const both = assignment(ports)
        const shardOf = (id: Ids.SessionId) =>
          Effect.provide(AgentEntity.AgentEntity.getShardId(EntityId.make(id)), client.context)
        const moving: Array<Ids.SessionId> = []
        const staying: Array<Ids.SessionId> = []
        for (let n = 0; moving.length < 4 || staying.length < 4; n++) {
          const id = Ids.SessionId.make(`r-${n}`)
          const group = both(yield* shardOf(id)) === ports[1] ? moving : staying
          if (group.length < 4) group.push(id)
        }
        const subscribed = [...moving.slice(0, 3), ...staying.slice(0, 3)]
        const sessions = [...subscribed, moving[3]!, staying[3]!]

        const first = yield* Processes.start(program, runner(ports[0], false))
        const second = yield* Processes.start(program, runner(ports[1], true))
        const nodes = [first, second] as const
        const nameOf = (node: Processes.Node) => node === first ? "first" : "second"
        // Generous: a node starts in about a second alone, far slower on a machine shared with other work.
        yield* first.waitFor("ready", (l) => l._tag === "ready", { deadline: 120_000 })
        yield* second.waitFor("held", (l) => l._tag === "held", { deadline: 120_000 })
        yield* until("one runner holding every shard", client.shardOwners, (n) => n === 1, 60_000)

        const agents = yield* Effect.forEach(sessions, (id) => Effect.provide(RemoteAgent.make(id), client.context))
        const subscribers = yield* Effect.provide(attachSubscribers(subscribed), client.context)
        const sent = new Map<Ids.SessionId, Array<Ids.AgentMessageId>>(sessions.map((id) => [id, []]))

        /** The nodes that asked the model for `text`'s turn (its newest user text), once per request. */
        const askedBy = (text: string) =>
          nodes.flatMap((node) => node.lines().filter((l) => l._tag === "asked" && l.text === text).map(() => node))

        /**
         * One phase: every session gets a gated turn and a follow-up; once every gated turn runs, `move` starts the
         * move; once each moving session's agent on its old runner has begun its graceful stop, the turns are
         * released; then the follow-ups run. `after` is the runner each session belongs to after the move. Answers,
         * per session, where its turn ran and how it ended, and where its follow-up ran and how it ended.
         */
        const phase = (name: string, move: Effect.Effect<void, Error>, after: (id: Ids.SessionId) => Processes.Node) =>
          Effect.gen(function*() {
            const texts = sessions.map((_, i) => [`${name}.${i}.1 [gate:${name}.${i}]`, `${name}.${i}.2`] as const)
            const ids = (i: number) => sent.get(sessions[i]!)!.slice(-2)
            // Sessions side by side (each in order).
            yield* Effect.forEach(sessions.keys(), (i) =>
              Effect.forEach(
                texts[i]!,
                (text) => Effect.map(agents[i]!.followup(prompt(text)), (id) => sent.get(sessions[i]!)!.push(id))
              ), { concurrency: "unbounded" })
            yield* until(
              `every ${name} turn running`,
              Effect.sync(() => texts.every(([turn]) => askedBy(turn).length > 0)),
              (all) => all,
              60_000
            )
            const hosts = texts.map(([turn]) => askedBy(turn)[0]!)
            const from = nodes.map((node) => node.lines().length)
            const start = yield* Clock.currentTimeMillis
            yield* move
            const owners = sessions.map(after)
            const movers = sessions.flatMap((_, i) => owners[i] === hosts[i] ? [] : [i])
            // Each moving session's short turn may end only once its old runner stopped taking work for it.
            yield* Effect.forEach(movers, (i) =>
              hosts[i]!.waitFor(
                `${sessions[i]}'s agent stopping on the ${nameOf(hosts[i]!)} runner`,
                (l) => l._tag === "agent-stopping" && l.session === sessions[i],
                { from: from[nodes.indexOf(hosts[i]!)]!, deadline: 120_000 }
              ), { concurrency: "unbounded" })
            const stopped = (yield* Clock.currentTimeMillis) - start
            for (const i of sessions.keys()) fs.writeFileSync(path.join(gates, `${name}.${i}`), "")
            const ended = (i: number) =>
              Effect.map(storedEvents(store, sessions[i]!), (events) => endsByMessage(events)(ids(i)[1]!) !== undefined)
            yield* Effect.forEach(sessions.keys(), (i) =>
              until(`${sessions[i]}'s ${name} follow-up closed`, ended(i), (done) => done, 120_000), {
              concurrency: "unbounded"
            })
            const millis = (yield* Clock.currentTimeMillis) - start
            const outcome = yield* Effect.forEach(sessions.entries(), ([i, id]) =>
              Effect.gen(function*() {
                const ends = endsByMessage(yield* storedEvents(store, id))
                const [turn, followup] = ids(i)
                return {
                  session: id,
                  subscribed: subscribed.includes(id),
                  turnOn: askedBy(texts[i]![0]).map(nameOf).join("+"),
                  moved: movers.includes(i),
                  turn: ends(turn!),
                  followupOn: askedBy(texts[i]![1]).map(nameOf).join("+"),
                  followup: ends(followup!)
                }
              }))
            console.log(`${name}: ${movers.length} sessions moved; stops seen ${stopped} ms, all done ${millis} ms`)
            console.table(outcome)
            for (const [i, o] of outcome.entries()) {
              const what = `${name}: ${JSON.stringify(o)}`
              assert.strictEqual(o.turn, "completed", what)
              assert.strictEqual(o.turnOn, nameOf(hosts[i]!), what)
              assert.strictEqual(o.followup, "completed", what)
              assert.strictEqual(o.followupOn, nameOf(owners[i]!), what)
            }
            return { name, millis, stopped, outcome }
          })

        // 1. The second runner joins: the first gives up the shards the new ring gives the second.
        const join = yield* phase(
          "join",
          Effect.zipRight(
            second.signal("SIGUSR2"),
            second.waitFor("ready", (l) =>
              l._tag === "ready", { deadline: 60_000 })
          ),
          (id) =>
            moving.includes(id) ? second : first
        )
        // The prediction was the cluster's: the shard locks now say the same.
        const lockPorts = client.sql<{ readonly shard_id: string; readonly address: string }>`
          SELECT shard_id, address FROM cluster_locks`.pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.shard_id, Number(r.address.split(":").pop())])))
        )
        const expected = yield* Effect.forEach(sessions, (id) =>
          Effect.map(shardOf(id), (shard) =>
            [shard.toString(), moving.includes(id) ? ports[1] : ports[0]] as const))
        yield* until(
          "the shard locks as the ring says",
          lockPorts,
          (held) =>
            expected.every(([shard, port]) =>
              held.get(shard) === port
            ),
          60_000
        )

        // 2. The second runner leaves gracefully: its shards go back to the first.
        const leave = yield* phase("leave", second.signal("SIGTERM"), () => first)
        assert.deepStrictEqual(leave.outcome.filter((o) => o.moved).map((o) => o.session), moving)
        assert.strictEqual(yield* second.exited, "exit 0")
        yield* until("one runner holding every shard", client.shardOwners, (n) => n === 1, 60_000)

        for (const id of sessions) {
          const events = yield* storedEvents(store, id)
          assert.deepStrictEqual(LogCheck.checkLog(events), [], `session ${id}`)
          const logged = events.flatMap((e) =>
            e.type === "user/message" && e.data.messageId !== undefined ? [e.data.messageId] : []
          )
          assert.deepStrictEqual(logged, sent.get(id), `session ${id}: every message once, in the order sent`)
        }
        const subscriptions = yield* subscribers.check(store)
        console.log(JSON.stringify({
          phases: [join, leave].map(({ millis, name, stopped }) => ({ name, stopped, millis })),
          moving,
          subscriptions,
          stopGrace,
          sharding
        }))
      }).pipe(Effect.scoped),
    240_000
  )
})
