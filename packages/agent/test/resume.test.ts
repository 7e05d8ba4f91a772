/**
 * Resuming a session (ADR 0017) after the process ended while work was in flight: steering staged for the turn that
 * was cut short comes back as a waking turn of its own, and a prompt whose admission was cut short by disposal was
 * never settled, so it comes back and runs. Each case ends one process (a scope closes, disposing its agent) and
 * starts another over the same durable store. Time is the `TestClock`; holds are latches.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Message } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import {
  agentOn,
  assertWellFormed,
  isDurable,
  logTrace,
  makeHold,
  mid,
  prompt,
  promptsByTurn,
  storedInbox,
  withDurableStore
} from "./fixtures.js"

const sid = Ids.SessionId.make("resume")

/** The next process: the session reopened, an agent over it restoring its inbox (`wake`, the default). */
const resumed = (replies: ReadonlyArray<S.Reply>) =>
  Effect.flatMap(SessionLog.open(sid), (log) => Effect.map(agentOn(log, replies), (made) => ({ ...made, log })))

describe("resume", () => {
  it.effect("steering staged for a turn the process ended in runs as a turn of its own on resume, with no send to wake it", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const { agent } = yield* agentOn(log, [S.hanging(S.text("…"))])
          const rec = yield* EventRecorder.make(agent)
          yield* agent.followup(prompt("p"), { id: mid("p") })
          yield* rec.waitFor(isDurable("step/start"))
          yield* agent.steer(prompt("s"), { id: mid("s") })
        }))
        const { agent, log, model } = yield* resumed([S.textResponse("s done")])
        assert.deepStrictEqual(log.pendingInbox.map((r) => [r.message.id, r.placement]), [["s", "steering"]])
        assert.deepStrictEqual((yield* agent.inbox).map((i) => [i.id, i.placement, i.waking]), [["s", "queued", true]])
        yield* agent.whenIdle
        assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["p"]], [2, ["s"]]])
        assert.strictEqual((yield* model.requests).length, 1)
        assert.deepStrictEqual(yield* agent.inbox, [])
        assertWellFormed(yield* agent.log)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("restored steering wakes by its placement: a stored steering record whose send flag says otherwise still runs", () =>
    withDurableStore(() =>
      Effect.gen(function*() {
        // Another writer of the session (an older or foreign one) recorded staged steering with `wakeup: false`:
        // steering is always waking work, so resuming runs it, as it does the agent's own steering records.
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const { content, source } = Message.make("s")
          yield* log.recordInbox([{
            type: "inbox/accepted",
            message: { content, source, id: mid("s") },
            placement: "steering",
            wakeup: false
          }])
          yield* log.flush
        }))
        const { agent, model } = yield* resumed([S.textResponse("s done")])
        assert.deepStrictEqual((yield* agent.inbox).map((i) => [i.id, i.placement, i.waking]), [["s", "queued", true]])
        yield* agent.whenIdle
        assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["s"]]])
        assert.strictEqual((yield* model.requests).length, 1)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))

  it.effect("a prompt whose admission was cut short by disposal is not settled: it comes back on resume and runs", () =>
    withDurableStore((store) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const hold = yield* makeHold
          const log = yield* SessionLog.make({ id: sid })
          // The admission of "p" waits at `hold` when the process ends (its scope closes: the agent is disposed).
          const { agent } = yield* agentOn(log, [], {
            hooks: { promptSubmit: (_, next) => Effect.zipRight(hold.wait, next) }
          })
          yield* agent.followup(prompt("p"), { id: mid("p") })
          yield* hold.reached
        }))
        assert.deepStrictEqual(yield* storedInbox(store, sid), ["accepted:queued:p"])
        const { agent, log } = yield* resumed([S.textResponse("p done")])
        assert.deepStrictEqual(log.pendingInbox.map((r) => r.message.id), ["p"])
        yield* agent.whenIdle
        assert.deepStrictEqual(logTrace(yield* agent.log).filter((t) => t.startsWith("user/message")), [
          "user/message:p"
        ])
        assert.deepStrictEqual(promptsByTurn(yield* agent.log), [[1, ["p"]]])
        assertWellFormed(yield* agent.log)
      }).pipe(Effect.scoped)
    ).pipe(Effect.orDie))
})
