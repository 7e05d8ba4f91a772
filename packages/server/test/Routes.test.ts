/**
 * Every route over real HTTP on loopback, through the typed client: what goes in and what comes out are the
 * operation's own schemas, and the agent behind it did what the route says (read back from its log and inbox).
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import type { SessionEvent } from "@harness/domain"
import { Goals } from "@harness/goal"
import { SessionStore } from "@harness/session"
import { ScriptedModel } from "@harness/testkit"
import { Effect, Option, Stream } from "effect"
import { Client } from "../src/index.js"
import { httpClient, serve } from "./support.js"

const messageId = Ids.AgentMessageId.make

/** The durable events of `session` from the start, read from the event stream until `done` holds for them. */
const until = (
  baseUrl: string,
  session: Ids.SessionId,
  done: (events: ReadonlyArray<SessionEvent.SessionEvent>) => boolean
) =>
  Client.events({ baseUrl, token: "read-secret", session }).pipe(
    Stream.filterMap((e) => e._tag === "Durable" ? Option.some(e.event) : Option.none()),
    Stream.mapAccum([] as Array<SessionEvent.SessionEvent>, (all, event) => {
      const next = [...all, event]
      return [next, next] as const
    }),
    Stream.takeUntil(done),
    Stream.runLast,
    Effect.map((last) => last._tag === "Some" ? last.value : []),
    Effect.provide(httpClient)
  )

const turnsEnded = (n: number) => (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.filter((e) => e.type === "turn/end").length >= n

describe("routes", () => {
  it.live("sessions: create, show, list, remove", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory)
      const client = yield* server.client()
      const admin = yield* server.client("admin-secret")
      const created = yield* client.sessions.create({ payload: { title: "first" } })
      assert.strictEqual(created.title, "first")
      assert.strictEqual(created.events, 0)
      const named = yield* client.sessions.create({ payload: { id: Ids.SessionId.make("named") } })
      assert.strictEqual(named.id, "named")
      const shown = yield* client.sessions.show({ path: { id: created.id } })
      assert.deepStrictEqual(shown, created)
      const all = yield* client.sessions.list()
      assert.deepStrictEqual(all.map((s) => s.id), [created.id, "named"])
      const again = yield* Effect.flip(client.sessions.create({ payload: { id: Ids.SessionId.make("named") } }))
      assert.strictEqual(again._tag, "SessionConflict")
      yield* admin.sessions.remove({ path: { id: named.id } })
      const gone = yield* Effect.flip(client.sessions.show({ path: { id: named.id } }))
      assert.strictEqual(gone._tag, "SessionNotFound")
      const missing = yield* Effect.flip(client.agent.inbox({ path: { id: Ids.SessionId.make("nope") } }))
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.scoped))

  it.live("records: the stored records as JSON Lines, as the store holds them, inbox records included; an unknown session is 404 (R241)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [ScriptedModel.textResponse("hi")])
      const client = yield* server.client()
      const reader = yield* server.client("read-secret")
      const { id } = yield* client.sessions.create({ payload: {} })
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("hello") } })
      const events = yield* until(server.baseUrl, id, turnsEnded(1))
      const text = yield* reader.sessions.records({ path: { id } })
      assert.isTrue(text.endsWith("\n"))
      const lines = text.split("\n").slice(0, -1).map((line) => JSON.parse(line) as Record<string, unknown>)
      assert.deepStrictEqual(lines.filter((r) => "seq" in r).map((r) => r.seq), events.map((e) => e.seq))
      assert.isTrue(lines.some((r) => r.type === "inbox/accepted"), "the inbox records are there too")
      const missing = yield* Effect.flip(reader.sessions.records({ path: { id: Ids.SessionId.make("nope") } }))
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.scoped))

  it.live("followup, queue two, withdraw one, cancel keeping the inbox (it answers what it kept): the queued one runs next", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.hanging(ScriptedModel.text("working")),
        ScriptedModel.textResponse("second answer")
      ])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      const path = { id }
      const first = yield* client.agent.followup({ path, payload: { message: Message.make("first") } })
      // The turn is running (its model hangs): wait until its chunk is logged.
      yield* until(server.baseUrl, id, (events) => events.some((e) => e.type === "assistant/chunk"))
      const q1 = yield* client.agent.followup({ path, payload: { message: Message.make("q1") } })
      const q2 = yield* client.agent.followup({ path, payload: { message: Message.make("q2") } })
      const inbox = yield* client.agent.inbox({ path })
      assert.deepStrictEqual(inbox.map((item) => [item.id, item.placement]), [[q1, "queued"], [q2, "queued"]])
      const withdrawn = yield* client.agent.withdraw({ path, payload: { id: q2 } })
      assert.strictEqual(withdrawn._tag, "Withdrawn")
      const notPending = yield* client.agent.withdraw({ path, payload: { id: q2 } })
      assert.deepStrictEqual(notPending, { _tag: "NotPending", id: q2 })
      // The cancel answers over HTTP what it kept pending (R205).
      const cancelled = yield* client.agent.cancel({ path, payload: { cause: "user", options: { keepInbox: true } } })
      assert.deepStrictEqual(cancelled, { discarded: [], kept: [q1] })
      const events = yield* until(server.baseUrl, id, turnsEnded(2))
      const ends = events.flatMap((e) => e.type === "turn/end" ? [e.data.reason.kind] : [])
      assert.deepStrictEqual(ends, ["aborted", "completed"])
      const prompts = events.flatMap((e) => e.type === "user/message" ? [e.data.messageId] : [])
      assert.deepStrictEqual(prompts, [first, q1])
      const answer = events.find((e) => e.type === "assistant/message" && e.data.turn === 2)
      assert.ok(answer?.type === "assistant/message")
      assert.deepStrictEqual(answer.data.content, [{ type: "text", text: "second answer" }])
      assert.deepStrictEqual(yield* client.agent.inbox({ path }), [])
    }).pipe(Effect.scoped))

  it.live("edit, move, promote and demote change the pending inbox; receipt says what became of each", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.hanging(ScriptedModel.text("working")),
        ScriptedModel.textResponse("after")
      ])
      const client = yield* server.client()
      const reader = yield* server.client("read-secret")
      const { id } = yield* client.sessions.create({ payload: {} })
      const path = { id }
      const first = yield* client.agent.followup({ path, payload: { message: Message.make("first") } })
      yield* until(server.baseUrl, id, (events) => events.some((e) => e.type === "assistant/chunk"))
      const a = yield* client.agent.followup({ path, payload: { message: Message.make("a") } })
      const b = yield* client.agent.followup({ path, payload: { message: Message.make("b") } })
      const c = yield* client.agent.followup({ path, payload: { message: Message.make("c") } })
      yield* client.agent.edit({ path, payload: { id: a, message: Message.make("a, edited") } })
      yield* client.agent.move({ path, payload: { id: c, position: 0 } })
      yield* client.agent.promote({ path, payload: { id: b } })
      const inbox = yield* reader.agent.inbox({ path })
      assert.deepStrictEqual(inbox.map((item) => [item.id, item.placement]), [[c, "queued"], [a, "queued"], [
        b,
        "steering"
      ]])
      yield* client.agent.demote({ path, payload: { id: b } })
      const refused = yield* Effect.flip(
        client.agent.edit({ path, payload: { id: first, message: Message.make("x") } })
      )
      assert.strictEqual(refused._tag, "InboxChangeError")
      assert.deepStrictEqual(yield* reader.agent.receipt({ path, payload: { id: first } }), { _tag: "ran", turn: 1 })
      yield* client.agent.withdraw({ path, payload: { id: c } })
      assert.strictEqual((yield* reader.agent.receipt({ path, payload: { id: c } }))._tag, "withdrawn")
      yield* client.agent.cancel({ path, payload: { cause: "user", options: { keepInbox: true } } })
      const events = yield* until(server.baseUrl, id, turnsEnded(3))
      const prompts = events.flatMap((e) => e.type === "user/message" ? [e.data.messageId] : [])
      assert.deepStrictEqual(prompts.slice(0, 2), [first, a])
      const edited = events.find((e) => e.type === "user/message" && e.data.messageId === a)
      assert.ok(edited?.type === "user/message")
      assert.deepStrictEqual(edited.data.content, [{ type: "text", text: "a, edited" }])
      assert.deepStrictEqual(yield* reader.agent.receipt({ path, payload: { id: a } }), { _tag: "ran", turn: 2 })
    }).pipe(Effect.scoped))

  it.live("send, steer, inject, batch and retry answer their schemas", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.textResponse("one"),
        ScriptedModel.textResponse("two"),
        ScriptedModel.textResponse("three"),
        ScriptedModel.textResponse("four")
      ])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      const path = { id }
      // inject on an idle agent is appended at once and runs nothing.
      const context = yield* client.agent.inject({
        path,
        payload: {
          message: Message.make("context", { kind: "plugin", plugin: "test" }),
          options: { id: messageId("ctx-1") }
        }
      })
      assert.strictEqual(context, "ctx-1")
      const sent = yield* client.agent.send({
        path,
        payload: { message: Message.make("via send"), options: { target: "next-turn", wakeup: true } }
      })
      yield* until(server.baseUrl, id, turnsEnded(1))
      const steered = yield* client.agent.steer({ path, payload: { message: Message.make("steer when idle") } })
      yield* until(server.baseUrl, id, turnsEnded(2))
      const results = yield* client.agent.batch({
        path,
        payload: {
          operations: [
            { send: [Message.make("batched"), { target: "next-turn", wakeup: true }] },
            { cancel: ["user", { keepInbox: true }] }
          ]
        }
      })
      assert.strictEqual(results.length, 2)
      assert.strictEqual(results[1], undefined)
      yield* until(server.baseUrl, id, turnsEnded(3))
      yield* client.agent.retry({ path })
      const events = yield* until(server.baseUrl, id, turnsEnded(4))
      const ids = events.flatMap((e) => e.type === "user/message" ? [e.data.messageId] : [])
      assert.deepStrictEqual(ids, [context, sent, steered, results[0]])
      const starts = events.flatMap((e) => e.type === "turn/start" ? [e.data.trigger] : [])
      assert.strictEqual(starts.at(-1)?.kind, "retry")
    }).pipe(Effect.scoped))

  it.live("the agent's own refusals come back as their classes with their statuses", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [ScriptedModel.hanging()])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      const path = { id }
      yield* client.agent.followup({ path, payload: { message: Message.make("hang") } })
      yield* until(server.baseUrl, id, (events) => events.some((e) => e.type === "step/start"))
      const busy = yield* Effect.flip(client.agent.retry({ path }))
      assert.strictEqual(busy._tag, "AgentBusyError")
      // A message the schema refuses never reaches the agent: the route's payload decoding refuses it (400).
      const response = yield* Effect.promise(() =>
        fetch(`${server.baseUrl}/sessions/${id}/followup`, {
          method: "POST",
          headers: { authorization: "Bearer send-secret", "content-type": "application/json" },
          body: JSON.stringify({ message: { content: [], source: { kind: "nobody" } } })
        })
      )
      assert.strictEqual(response.status, 400)
      yield* client.agent.cancel({ path, payload: { cause: "user" } })
    }).pipe(Effect.scoped))

  it.live("fork: a new session seeded up to a turn boundary, its parent named; not a boundary is ForkRefused (400); the fork runs on (R198)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [
        ScriptedModel.textResponse("first answer"),
        ScriptedModel.textResponse("answer in the fork")
      ])
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      yield* client.agent.followup({ path: { id }, payload: { message: Message.make("first") } })
      const events = yield* until(server.baseUrl, id, turnsEnded(1))
      const end = events.find((e) => e.type === "turn/end")!
      const child = Ids.SessionId.make("child")
      const forked = yield* client.sessions.fork({ path: { id }, payload: { at: end.seq, id: child, title: "a fork" } })
      assert.deepStrictEqual(
        [forked.id, forked.title, forked.parent, forked.events, forked.turns],
        [child, "a fork", { id, seq: end.seq }, end.seq + 1, 1]
      )
      const inside = yield* Effect.flip(client.sessions.fork({ path: { id }, payload: { at: 1 } }))
      assert.strictEqual(inside._tag, "ForkRefused")
      const taken = yield* Effect.flip(client.sessions.fork({ path: { id }, payload: { id: child } }))
      assert.strictEqual(taken._tag, "SessionConflict")
      const missing = yield* Effect.flip(
        client.sessions.fork({ path: { id: Ids.SessionId.make("nope") }, payload: {} })
      )
      assert.strictEqual(missing._tag, "SessionNotFound")
      // The fork is a session of its own: its turns continue the source's numbering.
      yield* client.agent.followup({ path: { id: child }, payload: { message: Message.make("in the fork") } })
      const forkEvents = yield* until(server.baseUrl, child, turnsEnded(2))
      assert.deepStrictEqual(
        forkEvents.filter((e) => e.type === "turn/end").map((e) => e.type === "turn/end" ? e.data.turn : -1),
        [1, 2]
      )
    }).pipe(Effect.scoped))

  it.live("goal: status, set (create, then change the objective), pause, resume, clear — the goal service's own answers and refusals (R199)", () =>
    Effect.gen(function*() {
      const server = yield* serve(
        SessionStore.layerMemory,
        Array.from({ length: 4 }, () => ScriptedModel.hanging(ScriptedModel.text("working"))),
        { makeAgent: (log) => Goals.makeAgent({ session: log }).pipe(Effect.provide(NodeContext.layer)) }
      )
      const client = yield* server.client()
      const reader = yield* server.client("read-secret")
      const { id } = yield* client.sessions.create({ payload: {} })
      const path = { id }
      assert.deepStrictEqual(yield* reader.goal.status({ path }), { roundsStarted: 0, activation: "disarmed" })
      const created = yield* client.goal.set({ path, payload: { objective: "make the tests pass", maxGoalRounds: 3 } })
      assert.deepStrictEqual([created.objective, created.phase, created.maxGoalRounds], [
        "make the tests pass",
        "active",
        3
      ])
      const edited = yield* client.goal.set({ path, payload: { objective: "make every test pass" } })
      assert.deepStrictEqual([edited.id, edited.revision, edited.objective], [
        created.id,
        created.revision + 1,
        "make every test pass"
      ])
      assert.strictEqual((yield* client.goal.pause({ path })).phase, "paused")
      assert.strictEqual((yield* reader.goal.status({ path })).goal?.phase, "paused")
      assert.strictEqual((yield* client.goal.resume({ path })).phase, "active")
      yield* client.goal.clear({ path })
      assert.strictEqual((yield* reader.goal.status({ path })).goal, undefined)
      const none = yield* Effect.flip(client.goal.clear({ path }))
      assert.deepStrictEqual([none._tag, none._tag === "GoalError" ? none.code : ""], ["GoalError", "GOAL_NOT_FOUND"])
      const invalid = yield* Effect.flip(client.goal.set({ path, payload: { objective: "" } }))
      assert.strictEqual(invalid._tag, "GoalError")
      const refused = yield* Effect.flip(reader.goal.set({ path, payload: { objective: "not allowed" } }))
      assert.strictEqual(refused._tag, "Forbidden")
      // A server whose agents have no goal system says so.
      const plain = yield* serve(SessionStore.layerMemory)
      const other = yield* plain.client()
      const session = yield* other.sessions.create({ payload: {} })
      const unavailable = yield* Effect.flip(other.goal.status({ path: { id: session.id } }))
      assert.strictEqual(unavailable._tag, "GoalsUnavailable")
    }).pipe(Effect.scoped))
})
