/**
 * Rebalance with real processes over PostgreSQL (R216): one runner hosts eight sessions, six of them with two
 * subscribers attached through `RemoteAgent` (one from seq -1, one from now) and two with none; every session is
 * running a short turn with a follow-up queued behind it when a second runner joins (loaded beforehand and released
 * with a signal, so the join lands while the turns run) and the shards move; later, with the same work running, the
 * second runner leaves gracefully (`SIGTERM`) and its shards move back. Afterwards every short turn closed with a
 * reason the contract names (`completed`, or `disposed` when its runner's entity was closed under it), every session
 * ran its messages once each in the order they were sent, every log passes `checkLog`, and every subscriber saw every
 * durable seq of its session exactly once, in order (R214). Which turns finished and which were cut, where the queued
 * follow-ups ran, and how the subscribers' requests ended are printed.
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionEvent } from "@harness/domain"
import { Ids } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { Clock, Effect } from "effect"
import { RemoteAgent } from "../src/index.js"
import { prompt, storedEvents } from "./fixtures.js"
import type { NodeConfig } from "./fixtures/node.js"
import * as Processes from "./processes.js"
import { attachSubscribers, freePort, postgresCluster, sharding, until } from "./runners.js"

const subscribed = [0, 1, 2, 3, 4, 5].map((i) => Ids.SessionId.make(`r-${i}`))
const sessions = [...subscribed, Ids.SessionId.make("r-6"), Ids.SessionId.make("r-7")]
/** A short turn: shorter than the runners' `entityTerminationTimeout` (5 s), longer than a join takes to land. */
const turnMillis = 4000

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

describe("AgentEntity: rebalance over PostgreSQL", () => {
  it.live(
    "R216: a runner joins and later leaves gracefully while turns run and subscribers are attached; no gap, no repeat",
    () =>
      Effect.gen(function*() {
        const { client, program, store, url } = yield* postgresCluster
        const runner = (port: number, holdUntilSignal: boolean): NodeConfig => ({
          role: "runner",
          store: { kind: "pg", url },
          port,
          sharding,
          holdUntilSignal
        })
        const first = yield* Processes.start(program, runner(yield* freePort, false))
        const second = yield* Processes.start(program, runner(yield* freePort, true))
        // Generous: a node starts in about a second alone, far slower on a machine shared with other work.
        yield* first.waitFor("ready", (l) => l._tag === "ready", { deadline: 120_000 })
        yield* second.waitFor("held", (l) => l._tag === "held", { deadline: 120_000 })
        yield* until("one runner holding every shard", client.shardOwners, (n) => n === 1, 60_000)

        const agents = yield* Effect.forEach(sessions, (id) => Effect.provide(RemoteAgent.make(id), client.context))
        const subscribers = yield* Effect.provide(attachSubscribers(subscribed), client.context)
        const sent = new Map<Ids.SessionId, Array<Ids.AgentMessageId>>(sessions.map((id) => [id, []]))

        /** Which node asked the model for `text`'s turn (its newest user text), if one did. */
        const askedBy = (text: string) =>
          [first, second].find((node) => node.lines().some((l) => l._tag === "asked" && l.text === text))

        /**
         * Every session gets a short turn and a follow-up behind it; once every short turn runs, `move` moves shards;
         * then everything settles. Answers, per session, where its turn ran and how it ended, and where the follow-up
         * ran.
         */
        const phase = (name: string, move: Effect.Effect<void, Error>) =>
          Effect.gen(function*() {
            const texts = sessions.map((_, i) => [`${name}.${i}.1 [slow:${turnMillis}]`, `${name}.${i}.2`] as const)
            // Sessions side by side (each in order), so the first turns are still running when the last one starts.
            const send = (i: number) =>
              Effect.forEach(
                texts[i]!,
                (text) => Effect.map(agents[i]!.followup(prompt(text)), (id) => sent.get(sessions[i]!)!.push(id))
              )
            yield* Effect.forEach(sessions.keys(), send, { concurrency: "unbounded" })
            const running = Effect.sync(() => texts.every(([turn]) => askedBy(turn) !== undefined))
            yield* until(`every ${name} turn running`, running, (all) => all, 60_000)
            const hosts = texts.map(([turn]) => askedBy(turn))
            const lastTwo = (id: Ids.SessionId) => sent.get(id)!.slice(-2)
            // Which short turns were still open when the move began (the log has no end for them yet).
            const open = yield* Effect.forEach(
              sessions,
              (id) =>
                Effect.map(storedEvents(store, id), (events) => endsByMessage(events)(lastTwo(id)[0]!) === undefined)
            )
            const start = yield* Clock.currentTimeMillis
            yield* move
            for (const agent of agents) yield* agent.whenIdle
            const millis = (yield* Clock.currentTimeMillis) - start
            const outcome = yield* Effect.forEach(sessions.entries(), ([i, id]) =>
              Effect.gen(function*() {
                const ends = endsByMessage(yield* storedEvents(store, id))
                const [turn, followup] = lastTwo(id)
                return {
                  session: id,
                  subscribed: i < subscribed.length,
                  turnOn: hosts[i] === first ? "first" : "second",
                  openAtMove: open[i],
                  turn: ends(turn!),
                  followupOn: askedBy(texts[i]![1]) === first ? "first" : "second",
                  followup: ends(followup!)
                }
              }))
            for (const o of outcome) {
              // The contract we can honour: the turn closes with a named reason, the follow-up behind it runs.
              assert.include(["completed", "disposed"], o.turn, `${name}: ${JSON.stringify(o)}`)
              assert.strictEqual(o.followup, "completed", `${name}: ${JSON.stringify(o)}`)
            }
            return { name, millis, outcome }
          })

        // 1. The second runner joins: the first gives up the shards the new ring gives the second.
        const join = yield* phase(
          "join",
          Effect.gen(function*() {
            yield* second.signal("SIGUSR2")
            yield* second.waitFor("ready", (l) => l._tag === "ready", { deadline: 60_000 })
            yield* until("two runners holding the shards", client.shardOwners, (n) => n === 2, 60_000)
          })
        )
        const moved = sessions.filter((id) => second.lines().some((l) => l._tag === "entity-start" && l.session === id))
        assert.isAbove(moved.length, 0, "some session moved to the joining runner")

        // 2. The second runner leaves gracefully: its shards go back to the first.
        const leave = yield* phase(
          "leave",
          Effect.gen(function*() {
            yield* second.signal("SIGTERM")
            yield* second.exited
            yield* until("one runner holding every shard", client.shardOwners, (n) => n === 1, 60_000)
          })
        )
        assert.isAbove(leave.outcome.filter((o) => o.turnOn === "second").length, 0, "some turn ran on the leaver")

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
          phases: [join, leave],
          moved,
          subscriptions,
          turnMillis,
          sharding
        }))
      }).pipe(Effect.scoped),
    240_000
  )
})
