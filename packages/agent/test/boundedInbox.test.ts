/**
 * A bounded inbox (`maxPending`, `overflow`; ADR 0050): a send beyond the limit is refused (`reject`), or makes room
 * by discarding the oldest pending item (`dropOldest`), or is accepted and discarded at once (`dropNewest`); each
 * drop is one `agent/inbox/discard { reason: "overflow" }` and its receipt says `discarded { cause: "overflow" }`.
 * Unbounded by default. Parked items keep the agent idle, so nothing here depends on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventRecorder, Invariants, ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { mid, prompt, routes, setup } from "./fixtures.js"

const park = (name: string) => [prompt(name), { ...routes.park, id: mid(name) }] as const

describe("maxPending", () => {
  it.scoped("reject: a send beyond the limit fails with InboxFullError and accepts nothing; staged context does not count", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup({ maxPending: 2 })
      yield* agent.send(...park("a"))
      yield* agent.send(...park("b"))
      const error = yield* Effect.flip(agent.send(...park("c")))
      assert.deepStrictEqual([error._tag, error._tag === "InboxFullError" && error.limit], ["InboxFullError", 2])
      assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["a", "b"])
      assert.deepStrictEqual(yield* agent.receipt(mid("c")), { _tag: "unknown" })
      assert.deepStrictEqual((yield* rec.events).map(EventRecorder.describe), ["enqueue:queued", "enqueue:queued"])
      // Withdrawing one makes room again.
      yield* agent.withdraw(mid("a"))
      yield* agent.send(...park("c"))
      assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["b", "c"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("dropOldest: the oldest pending item is discarded (cause overflow) to make room", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup({ maxPending: 2, overflow: "dropOldest" })
      for (const name of ["a", "b", "c", "d"]) yield* agent.send(...park(name))
      assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["c", "d"])
      const events = yield* rec.events
      assert.deepStrictEqual(
        events.flatMap((e) =>
          e.type === "agent/inbox/discard" ? [[e.reason, e.messages.map((m) => String(m.id))]] : []
        ),
        [["overflow", ["a"]], ["overflow", ["b"]]]
      )
      assert.deepStrictEqual(yield* agent.receipt(mid("a")), { _tag: "discarded", cause: "overflow" })
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 2 }), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("dropNewest: the new message is accepted and discarded at once; the pending items stay", () =>
    Effect.gen(function*() {
      const { agent, rec } = yield* setup({ maxPending: 1, overflow: "dropNewest" })
      yield* agent.send(...park("a"))
      assert.strictEqual(yield* agent.send(...park("b")), mid("b"))
      assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["a"])
      assert.deepStrictEqual(yield* agent.receipt(mid("b")), { _tag: "discarded", cause: "overflow" })
      // Its id was accepted: a resend changes nothing.
      yield* agent.send(...park("b"))
      const events = yield* rec.events
      assert.deepStrictEqual(events.map(EventRecorder.describe), ["enqueue:queued", "enqueue:queued", "discard:1"])
      assert.deepStrictEqual(Invariants.fifoConservation(events, { outstanding: 1 }), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("an invalid maxPending or overflow is an AgentConfigError naming it", () =>
    Effect.gen(function*() {
      const zero = yield* Effect.flip(setup({ maxPending: 0 }))
      assert.strictEqual(zero._tag === "AgentConfigError" && zero.option, "maxPending")
      const bad = yield* Effect.flip(setup({ maxPending: 3, overflow: "sometimes" as never }))
      assert.strictEqual(bad._tag === "AgentConfigError" && bad.option, "overflow")
    }).pipe(Effect.provide(S.layer())))
})
