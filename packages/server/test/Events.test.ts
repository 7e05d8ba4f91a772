/**
 * A session's Server-Sent Events over real HTTP: resuming with `Last-Event-ID` from any seq — while turns are
 * streaming — gives every later durable event exactly once, in order; live-only events carry no id; a subscriber
 * that stops reading is cut off with a reason while the agent's turns go on, and resumes without a gap.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import type { Ids } from "@harness/domain"
import { Message } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import { Effect, Queue, Stream } from "effect"
import type { IncomingMessage } from "node:http"
import { get } from "node:http"
import { Client } from "../src/index.js"
import * as Events from "../src/internal/events.js"
import { httpClient, serve } from "./support.js"

/** The seqs of the durable events after `after`, read until the `turns`-th `turn/end`. */
const seqsUntil = (baseUrl: string, session: Ids.SessionId, after: number | undefined, turns: number) =>
  Client.events({ baseUrl, token: "read-secret", session, lastEventId: after }).pipe(
    Stream.filter((e) => e._tag === "Durable"),
    Stream.map((e) => e._tag === "Durable" ? e.event : undefined!),
    Stream.takeUntil((e) => e.type === "turn/end" && e.data.turn === turns),
    Stream.map((e) => e.seq),
    Stream.runCollect,
    Effect.map((chunk) => Array.from(chunk)),
    Effect.provide(httpClient)
  )

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** An event-stream request read by hand: `paused` until `resume` is called, then the whole text until it ends. */
const rawEvents = (url: string) =>
  Effect.async<{ readonly response: IncomingMessage; readonly first: string }>((resume) => {
    const req = get(url, { headers: { authorization: "Bearer read-secret" } }, (response) => {
      response.setEncoding("utf8")
      // The first frame (`ready`) says the subscription exists; then the client stops reading.
      response.once("data", (first: string) => {
        response.pause()
        resume(Effect.succeed({ response, first }))
      })
    })
    req.on("error", (e) => resume(Effect.die(e)))
  })

const readAll = (response: IncomingMessage) =>
  Effect.async<string>((resume) => {
    let text = ""
    response.on("data", (chunk: string) => {
      text += chunk
    })
    response.on("end", () => resume(Effect.succeed(text)))
    response.resume()
  })

/** The frames of an event-stream text: each frame's fields (comments, as the heartbeat, are not frames). */
const frames = (text: string) =>
  text.split("\n\n").filter((frame) => frame.trim() !== "" && !frame.startsWith(":")).map((frame) => {
    const fields: Record<string, string> = {}
    for (const line of frame.split("\n")) {
      const colon = line.indexOf(": ")
      if (colon > 0) fields[line.slice(0, colon)] = (fields[line.slice(0, colon)] ?? "") + line.slice(colon + 2)
    }
    return fields
  })

describe("events", () => {
  it.scoped("where the log and the live subscription overlap, each durable event is framed once", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make()
      yield* agent.followup(Message.make("hello"))
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.isAtLeast(log.length, 6)
      // The log read sees up to seq 4; the subscription already holds seqs 3.. (published after it subscribed).
      const overlapping: Agent.Service = {
        ...agent,
        log: Effect.succeed(log.slice(0, 5)),
        subscribe: Effect.gen(function*() {
          const queue = yield* Queue.unbounded<Parameters<typeof Events.liveFrame>[0]>()
          yield* Queue.offerAll(queue, [
            ...log.slice(3).map((event) => ({ type: "session/event" as const, event })),
            { type: "agent/disposed" as const }
          ])
          return queue
        })
      }
      const text = yield* Events.stream(overlapping, -1, 64).pipe(
        Stream.decodeText(),
        Stream.mkString
      )
      const ids = frames(text).filter((f) => f.event === undefined).map((f) => Number(f.id))
      assert.deepStrictEqual(ids, range(0, log.length - 1))
      const after2 = yield* Events.stream(overlapping, 2, 64).pipe(Stream.decodeText(), Stream.mkString)
      assert.deepStrictEqual(
        frames(after2).filter((f) => f.event === undefined).map((f) => Number(f.id)),
        range(3, log.length - 1)
      )
    }).pipe(Effect.provide(ScriptedModel.layer([ScriptedModel.textResponse("hi there")]))))

  it.live("resuming from any seq while turns stream gives every later durable event once, in order", () =>
    Effect.gen(function*() {
      const words = Array.from({ length: 80 }, (_, i) => ScriptedModel.text(`w${i} `))
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.reply(...words),
        ScriptedModel.reply(...words),
        ScriptedModel.reply(...words)
      ])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      // The whole log of the first turn, from the start.
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("one") } })
      const first = yield* seqsUntil(server.baseUrl, id, undefined, 1)
      assert.deepStrictEqual(first, range(0, first.length - 1))
      const end1 = first.at(-1)!
      // Subscribers resuming at several seqs while turns 2 and 3 stream: the log/live boundary falls anywhere.
      const resumes = [-1, 0, Math.floor(end1 / 2), end1 - 1, end1]
      const readers = yield* Effect.forkAll(resumes.map((after) => seqsUntil(server.baseUrl, id, after, 3)))
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("two") } })
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("three") } })
      const got = yield* readers.await.pipe(Effect.flatten)
      const last = got[0]!.at(-1)!
      assert.isAbove(last, end1 + 150)
      got.forEach((seqs, i) =>
        assert.deepStrictEqual(seqs, range(resumes[i]! + 1, last), `resumed after ${resumes[i]}`)
      )
    }).pipe(Effect.scoped))

  it.live("durable frames carry id: <seq>; live-only frames are event: live without an id; ?lastEventId= resumes", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [ScriptedModel.textResponse("hi")])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("hello") } })
      const all = yield* seqsUntil(server.baseUrl, id, undefined, 1)
      const { first, response } = yield* rawEvents(`${server.baseUrl}/sessions/${id}/events?lastEventId=2`)
      assert.deepStrictEqual(frames(first)[0], { event: "ready", data: "{\"after\":2}" })
      // one more turn so live events flow to this subscriber, then close the session: the stream ends
      yield* server.model.push(ScriptedModel.textResponse("again"))
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("again") } })
      yield* seqsUntil(server.baseUrl, id, all.at(-1), 2)
      const admin = yield* server.client("admin-secret")
      yield* admin.sessions.remove({ path: { id } })
      const rest = frames(first + (yield* readAll(response))).slice(1)
      const durable = rest.filter((f) => f.event === undefined)
      const live = rest.filter((f) => f.event === "live")
      assert.deepStrictEqual(durable.map((f) => Number(f.id)), range(3, Number(durable.at(-1)!.id)))
      for (const f of durable) assert.strictEqual(JSON.parse(f.data!).seq, Number(f.id))
      assert.ok(live.length > 0)
      for (const f of live) assert.strictEqual(f.id, undefined)
      const types = live.map((f) => JSON.parse(f.data!).type)
      assert.includeMembers(types, ["agent/status", "agent/inbox/enqueue", "agent/inbox/dequeue", "agent/settled"])
      assert.strictEqual(types.at(-1), "agent/disposed")
    }).pipe(Effect.scoped))

  it.live(
    "a subscriber that stops reading is cut off with a reason; the turns go on; it resumes with no gap",
    () =>
      Effect.gen(function*() {
        // 24 turns of 512 KiB answers (each logged as its chunk and its message): far more than the socket buffers
        // of a paused loopback connection can hold, so the server's writes to it stall and its buffer of 16 fills.
        const turns = 24
        const big = "x".repeat(512 * 1024)
        const server = yield* serve(
          SessionStore.layerMemory,
          Array.from({ length: turns }, () => ScriptedModel.textResponse(big)),
          { subscriberBuffer: 16 }
        )
        const client = yield* server.client()
        const { id } = yield* client.sessions.create({ payload: {} })
        const slow = yield* rawEvents(`${server.baseUrl}/sessions/${id}/events`)
        for (let i = 0; i < turns; i++) {
          yield* client.agent.followup({ path: { id }, payload: { message: Message.make(`turn ${i}`) } })
        }
        // The agent finished every turn while the slow subscriber read nothing.
        const seqs = yield* seqsUntil(server.baseUrl, id, undefined, turns)
        const snapshot = yield* client.sessions.snapshot({ path: { id }, urlParams: { tail: 1 } })
        assert.strictEqual(snapshot.status, "idle")
        assert.strictEqual(snapshot.lastSeq, seqs.at(-1))
        // Now it reads: what was sent before the cut, then the reason, then the end of the stream.
        const got = frames(slow.first + (yield* readAll(slow.response)))
        const overflow = got.at(-1)!
        assert.strictEqual(overflow.event, "overflow")
        assert.deepStrictEqual(JSON.parse(overflow.data!), { reason: "slow-subscriber", capacity: 16 })
        const durable = got.filter((f) => f.event === undefined).map((f) => Number(f.id))
        assert.isBelow(durable.length, seqs.length)
        assert.deepStrictEqual(durable, range(0, durable.length - 1))
        // It resumes after the last seq it saw: the rest, once each.
        const rest = yield* seqsUntil(server.baseUrl, id, durable.at(-1) ?? -1, turns)
        assert.deepStrictEqual([...durable, ...rest], seqs)
      }).pipe(Effect.scoped),
    120_000
  )
})
