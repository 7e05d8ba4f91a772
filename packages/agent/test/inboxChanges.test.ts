/**
 * Changing a pending item in place (ADR 0050): `edit`, `move`, `promote`, `demote`. Each is decided in the
 * acceptance window's critical section, published live, recorded durably (`inbox/revised`), and refused with a
 * typed `InboxChangeError` naming why once the item is no longer pending. A resume after each change restores the
 * same pending FIFO. Time is the `TestClock`; turns are held by delayed or hanging scripted replies.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Agent } from "@harness/agent"
import { Ids } from "@harness/domain"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect, TestClock } from "effect"
import {
  acrossRestart as restarted,
  assertWellFormed,
  awaitSleeper,
  logTrace,
  mid,
  prompt,
  routes,
  setup
} from "./fixtures.js"

const texts = (log: ReadonlyArray<{ readonly type: string }>) =>
  logTrace(log as never).filter((t) => t.startsWith("user/message") || t.startsWith("steering/message"))

const pending = (agent: Agent.Service) =>
  Effect.map(
    agent.inbox,
    (items) => items.map((i) => `${i.placement}${i.waking ? "" : "/parked"}:${i.id}:${i.content[0].text}`)
  )

describe("edit", () => {
  it.scoped("replaces a queued item's content in place: same id, same position; the turn runs the new content", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("a"), S.textResponse("b"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.followup(prompt("a"), { id: mid("a") })
      yield* agent.followup(prompt("b"), { id: mid("b") })
      const item = yield* agent.edit(mid("a"), prompt("a, edited"))
      assert.deepStrictEqual([item.id, item.placement, item.content[0].text], ["a", "queued", "a, edited"])
      assert.deepStrictEqual(yield* pending(agent), ["queued:a:a, edited", "queued:b:b"])
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(texts(yield* agent.log), [
        "user/message:first",
        "user/message:a, edited",
        "user/message:b"
      ])
      const events = yield* rec.events
      assert.deepStrictEqual(
        events.filter((e) => e.type === "agent/inbox/edit").map((e) => e.type === "agent/inbox/edit" && e.message),
        [{ id: mid("a"), content: [{ type: "text", text: "a, edited" }], source: { kind: "user" } }]
      )
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 0 }), [])
      assertWellFormed(yield* agent.log)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("edits steering not yet drained: the turn is steered with the new content", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("steered"))
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      const id = yield* agent.steer(prompt("go left"))
      yield* agent.edit(id, prompt("go right"))
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(texts(yield* agent.log), ["user/message:first", "steering/message:go right"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("is refused once the item was taken, for an unknown id, and for invalid input; nothing changes", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup()
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* agent.whenIdle
      yield* rec.clear
      const taken = yield* Effect.flip(agent.edit(mid("first"), prompt("too late")))
      assert.deepStrictEqual([taken._tag, taken._tag === "InboxChangeError" && taken.reason], [
        "InboxChangeError",
        "taken"
      ])
      const unknown = yield* Effect.flip(agent.edit(mid("nobody"), prompt("x")))
      assert.deepStrictEqual([unknown._tag, unknown._tag === "InboxChangeError" && unknown.reason], [
        "InboxChangeError",
        "unknown"
      ])
      yield* agent.send(prompt("parked"), { ...routes.park, id: mid("parked") })
      const invalid = yield* Effect.flip(agent.edit(mid("parked"), { content: [] as never, source: { kind: "user" } }))
      assert.strictEqual(invalid._tag, "InvalidMessageError")
      assert.deepStrictEqual(yield* pending(agent), ["queued/parked:parked:parked"])
      assert.deepStrictEqual((yield* rec.events).map(EventRecorder.describe), ["enqueue:queued"])
    }).pipe(Effect.provide(S.layer([S.textResponse("done")]))))
})

describe("move", () => {
  it.scoped("reorders the queued FIFO: turns run in the new order, the inbox lists it, move publishes the index", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(
        S.delayed(1000, S.textResponse("one")),
        S.textResponse("1"),
        S.textResponse("2"),
        S.textResponse("3")
      )
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      for (const name of ["a", "b", "c"]) yield* agent.followup(prompt(name), { id: mid(name) })
      yield* agent.move(mid("c"), 0)
      yield* agent.move(mid("a"), 99)
      assert.deepStrictEqual(yield* pending(agent), ["queued:c:c", "queued:b:b", "queued:a:a"])
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(texts(yield* agent.log), [
        "user/message:first",
        "user/message:c",
        "user/message:b",
        "user/message:a"
      ])
      const events = yield* rec.events
      assert.deepStrictEqual(
        events.map(EventRecorder.describe).filter((d) => d.startsWith("move")),
        ["move:0", "move:2"]
      )
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 0 }), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("moves steering among the steering; refused once taken", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("steered"))
      yield* agent.followup(prompt("first"))
      yield* awaitSleeper
      yield* agent.steer(prompt("s1"), { id: mid("s1") })
      yield* agent.steer(prompt("s2"), { id: mid("s2") })
      yield* agent.move(mid("s2"), 0)
      assert.deepStrictEqual(yield* pending(agent), ["steering:s2:s2", "steering:s1:s1"])
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      assert.deepStrictEqual(texts(yield* agent.log), [
        "user/message:first",
        "steering/message:s2",
        "steering/message:s1"
      ])
      const error = yield* Effect.flip(agent.move(mid("s1"), 0))
      assert.strictEqual(error._tag === "InboxChangeError" && error.reason, "taken")
    }).pipe(Effect.provide(S.layer())))
})

describe("promote and demote", () => {
  it.scoped("promote turns a queued follow-up into steering of the running turn: it joins that turn, no turn of its own", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("steered"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.followup(prompt("q"), { id: mid("q") })
      const item = yield* agent.promote(mid("q"))
      assert.deepStrictEqual([item.placement, item.waking], ["steering", true])
      const twice = yield* Effect.flip(agent.promote(mid("q")))
      assert.strictEqual(twice._tag === "InboxChangeError" && twice.reason, "not-queued")
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(texts(log), ["user/message:first", "steering/message:q"])
      assert.strictEqual(log.filter((e) => e.type === "turn/start").length, 1)
      const events = yield* rec.events
      assert.deepStrictEqual(
        events.map(EventRecorder.describe).filter((d) => /^(enqueue|dequeue|place)/.test(d)),
        ["enqueue:queued", "dequeue", "enqueue:queued", "place:steering", "dequeue"]
      )
      assert.deepStrictEqual(Invariants.check({ events, log, accepted: ["first", "q"] }), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("promote is refused when no turn is open, and once the item was taken", () =>
    Effect.gen(function*() {
      const { agent } = yield* setup()
      yield* agent.send(prompt("parked"), { ...routes.park, id: mid("parked") })
      const idle = yield* Effect.flip(agent.promote(mid("parked")))
      assert.strictEqual(idle._tag === "InboxChangeError" && idle.reason, "no-open-turn")
      yield* agent.followup(prompt("go"), { id: mid("go") })
      yield* agent.whenIdle
      const taken = yield* Effect.flip(agent.promote(mid("go")))
      assert.strictEqual(taken._tag === "InboxChangeError" && taken.reason, "taken")
    }).pipe(Effect.provide(S.layer([S.textResponse("1"), S.textResponse("2")]))))

  it.scoped("demote turns steering not yet drained into a queued turn that runs after the open one", () =>
    Effect.gen(function*() {
      const { agent, model, rec } = yield* setup()
      yield* model.push(S.delayed(1000, S.textResponse("one")), S.textResponse("two"))
      yield* agent.followup(prompt("first"), { id: mid("first") })
      yield* awaitSleeper
      yield* agent.steer(prompt("later"), { id: mid("later") })
      const item = yield* agent.demote(mid("later"))
      assert.deepStrictEqual([item.placement, item.waking], ["queued", true])
      const queued = yield* Effect.flip(agent.demote(mid("later")))
      assert.strictEqual(queued._tag === "InboxChangeError" && queued.reason, "not-steering")
      yield* TestClock.adjust(1000)
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(texts(log), ["user/message:first", "user/message:later"])
      assert.strictEqual(log.filter((e) => e.type === "turn/start").length, 2)
      const events = yield* rec.events
      assert.deepStrictEqual(Invariants.check({ events, log, accepted: ["first", "later"] }), [])
    }).pipe(Effect.provide(S.layer())))
})

describe("the durable inbox honours changes", () => {
  const sid = Ids.SessionId.make("inbox-changes")

  /** Runs `change` on an agent whose first turn never ends, then reopens the session: the inbox before and after. */
  const acrossRestart = (
    sends: (agent: Agent.Service) => Effect.Effect<unknown, unknown>,
    change: (agent: Agent.Service) => Effect.Effect<unknown, unknown>
  ) =>
    Effect.map(
      restarted(
        sid,
        (agent) => Effect.zipRight(Effect.zipRight(sends(agent), change(agent)), agent.inbox),
        (agent, reopened) => Effect.map(agent.inbox, (after) => ({ after, reopened }))
      ),
      ({ after: { after, reopened }, before }) => ({
        before: before.map((i) => `${i.id}:${i.content[0].text}`),
        after: after.map((i) => `${i.id}:${i.content[0].text}`),
        records: reopened.pendingInbox.map((r) => `${r.placement}:${r.message.id}`)
      })
    )

  const three = (agent: Agent.Service) =>
    Effect.all(["a", "b", "c"].map((name) => agent.followup(prompt(name), { id: mid(name) })))

  it.effect("after an edit", () =>
    Effect.gen(function*() {
      const { after, before } = yield* acrossRestart(three, (agent) => agent.edit(mid("b"), prompt("B!")))
      assert.deepStrictEqual(before, ["a:a", "b:B!", "c:c"])
      assert.deepStrictEqual(after, before)
    }).pipe(Effect.orDie))

  it.effect("after moves (to the front, to the end)", () =>
    Effect.gen(function*() {
      const { after, before } = yield* acrossRestart(
        three,
        (agent) => Effect.zipRight(agent.move(mid("c"), 0), agent.move(mid("c"), 1))
      )
      assert.deepStrictEqual(before, ["a:a", "c:c", "b:b"])
      assert.deepStrictEqual(after, before)
      const last = yield* acrossRestart(three, (agent) => agent.move(mid("a"), 5))
      assert.deepStrictEqual(last.before, ["b:b", "c:c", "a:a"])
      assert.deepStrictEqual(last.after, last.before)
    }).pipe(Effect.orDie))

  it.effect("after a promote and a demote", () =>
    Effect.gen(function*() {
      const { before, records } = yield* acrossRestart(
        three,
        (agent) => Effect.zipRight(agent.promote(mid("a")), agent.demote(mid("a")))
      )
      assert.deepStrictEqual(before, ["b:b", "c:c", "a:a"])
      assert.deepStrictEqual(records, ["queued:b", "queued:c", "queued:a"])
    }).pipe(Effect.orDie))
})
