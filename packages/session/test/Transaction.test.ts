/**
 * `SessionLog.transaction` (ADR 0051): a writer whose own state changes with its appends (the agent) runs its
 * critical sections as transactions of the log. Inside one, `tx` appends at once; every other writer of the log
 * waits for it to end; it frees the log on every exit; its handle works only while it runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { ev, promptTurn, sessionId } from "@harness/testkit/Events"
import { Cause, Chunk, Deferred, Effect, Exit, Fiber, Queue } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"
import { snapshot } from "./fixtures.js"

const setup = Effect.gen(function*() {
  const store = yield* SessionStore.makeMemory
  const log = yield* SessionLog.make({ id: sessionId("transaction") }).pipe(
    Effect.provideService(SessionStore.SessionStore, store)
  )
  return { log, store }
})

/** Lets every other fiber that can run, run (a fiber parked on the log stays parked). */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

describe("SessionLog.transaction", () => {
  it.scoped("appends inside at once; an append from another fiber waits until the transaction ends, then follows it", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      const seen = yield* log.subscribe
      const entered = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      const inside = yield* Effect.fork(log.transaction((tx) =>
        Effect.gen(function*() {
          const opened = yield* tx.appendTrusted([ev.turnStart(1)])
          yield* Deferred.succeed(entered, undefined)
          yield* Deferred.await(proceed)
          const closed = yield* tx.append(ev.turnEnd(1))
          return [...opened, closed]
        })
      ))
      yield* Deferred.await(entered)
      const outside = yield* Effect.fork(log.appendAll(promptTurn(2, "from outside", "ok")))
      yield* settle
      // The other writer is parked on the log: only the transaction's first append is in it.
      assert.strictEqual((yield* log.state).nextSeq, 1)
      assert.deepStrictEqual((yield* log.events).map((e) => e.type), ["turn/start"])
      yield* Deferred.succeed(proceed, undefined)
      const appended = yield* Fiber.join(inside)
      const after = yield* Fiber.join(outside)
      assert.deepStrictEqual(appended.map((e) => [e.seq, e.type]), [[0, "turn/start"], [1, "turn/end"]])
      assert.strictEqual(after[0]!.seq, 2)
      assert.deepStrictEqual(
        Chunk.toReadonlyArray(yield* Queue.takeAll(seen)).map((e) => e.seq),
        [0, 1, ...after.map((e) => e.seq)]
      )
    }))

  it.effect("is not rolled back: a body that fails after an append keeps it, a refused append changes nothing", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      const failed = yield* Effect.flip(log.transaction((tx) =>
        Effect.gen(function*() {
          const refused = yield* Effect.flip(tx.append(ev.turnEnd(1)))
          assert.strictEqual(refused.reason, "turn-end-mismatch")
          yield* tx.appendTrusted(promptTurn(1, "kept", "ok"))
          return yield* Effect.fail("the body's own failure" as const)
        })
      ))
      assert.strictEqual(failed, "the body's own failure")
      assert.deepStrictEqual(
        (yield* log.events).filter((e) => e.type === "turn/start").map((e) => e.data.turn),
        [1]
      )
      // The transaction freed the log: the next append is not parked.
      const next = yield* log.appendAll(promptTurn(2, "after", "ok"))
      assert.strictEqual(next[0]!.seq, promptTurn(1, "kept", "ok").length)
    }))

  it.effect("every exit frees the log: a defect in the body, and a waiting transaction interrupted", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      const died = yield* Effect.exit(log.transaction(() => Effect.dieMessage("boom")))
      assert.isTrue(Exit.isFailure(died) && Cause.isDie(died.cause))
      const entered = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        log.transaction(() => Effect.zipRight(Deferred.succeed(entered, undefined), Deferred.await(proceed)))
      )
      yield* Deferred.await(entered)
      const waiting = yield* Effect.fork(log.transaction((tx) => tx.appendAll(promptTurn(1, "waited", "ok"))))
      yield* settle
      // The wait is uninterruptible: the interruption takes effect once the waiting transaction ran and ended.
      const interrupting = yield* Effect.fork(Fiber.interrupt(waiting))
      yield* settle
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(interrupting)
      const next = yield* log.appendAll(promptTurn(2, "after", "ok"))
      assert.deepStrictEqual(
        (yield* log.events).filter((e) => e.type === "turn/start").map((e) => e.data.turn),
        [1, 2]
      )
      assert.strictEqual(next[0]!.seq, promptTurn(1, "waited", "ok").length)
    }))

  it.effect("its handle works only while it runs: an append through it afterwards is a defect and appends nothing", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      const kept = yield* log.transaction((tx) => Effect.succeed(tx))
      const before = yield* snapshot(log)
      const late = yield* Effect.exit(kept.appendTrusted([ev.turnStart(1)]))
      assert.isTrue(Exit.isFailure(late) && Cause.isDie(late.cause))
      assert.deepStrictEqual(yield* snapshot(log), before)
      // An effect built inside and run after the transaction is refused the same way.
      const built = yield* log.transaction((tx) => Effect.succeed(tx.append(ev.turnStart(1))))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(built)))
      assert.deepStrictEqual(yield* snapshot(log), before)
    }))

  it.effect("runs its body afresh each time it runs: a stored transaction appends on every run", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      let turn = 0
      const oneTurn = log.transaction((tx) => Effect.suspend(() => tx.appendTrusted(promptTurn(++turn, "again", "ok"))))
      yield* oneTurn
      yield* oneTurn
      assert.deepStrictEqual(
        (yield* log.events).filter((e) => e.type === "turn/start").map((e) => e.data.turn),
        [1, 2]
      )
    }))

  it.effect("untrusted, it validates as appendAll does: an invalid event is refused whole, with invalid-event", () =>
    Effect.gen(function*() {
      const { log } = yield* setup
      yield* log.appendTrusted([ev.turnStart(1), ev.stepStart(1, 1)])
      const before = yield* snapshot(log)
      const error = yield* Effect.flip(log.transaction((tx) =>
        tx.appendAll([
          ev.chunk(1, 1, { type: "text-delta", delta: "fine" }),
          { type: "assistant/chunk", data: { turn: 1, step: 1, chunk: { when: new Date(0) } } } as never
        ])
      ))
      assert.strictEqual(error.reason, "invalid-event")
      assert.deepStrictEqual(yield* snapshot(log), before)
    }))
})
