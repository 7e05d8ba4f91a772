/**
 * Resume (R109–R110) on real files: a session written by one agent (in this process, or in a child that
 * was killed with SIGKILL) is reopened and continued by a new agent. Also idempotent resend across a restart, and
 * the durable inbox's gap.
 */
import { LanguageModel } from "@effect/ai"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { type AgentEvent, Ids, Message, type SessionEvent } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Chunk, Effect, Exit, Queue, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { Scenario } from "../src/index.js"
import { Parent, type Protocol, Stores, Verify } from "../src/index.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-resume-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `effect` with an agent over the stored or new session `id` in its own scope (closed afterwards). */
const withAgent = <A, E>(
  backend: Protocol.Backend,
  location: string,
  id: Ids.SessionId,
  mode: "create" | "open",
  replies: ReadonlyArray<S.Reply>,
  f: (agent: Agent.Service, model: S.Service) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* (mode === "create" ? SessionLog.make({ id }) : SessionLog.open(id))
    const [model, controls] = yield* S.make(replies)
    const agent = yield* Agent.make({ session: log, model: "scripted" }).pipe(
      Effect.provideService(LanguageModel.LanguageModel, model)
    )
    const result = yield* f(agent, controls)
    // The store is write-behind: make everything durable before the scope closes (a client's barrier).
    yield* log.flush
    return result
  })).pipe(Effect.provide(Stores.layer(backend, location)))

/** Runs `f` with an agent over the session a killed child wrote in `dir`, reopened, answering `replies`. */
const reopenChild = <A, E>(
  backend: Protocol.Backend,
  dir: string,
  replies: ReadonlyArray<S.Reply>,
  f: (agent: Agent.Service) => Effect.Effect<A, E, Scope.Scope>
) => withAgent(backend, Stores.locationIn(backend, dir), Ids.SessionId.make("child-session"), "open", replies, f)

/** Reopens the session a killed child wrote in `dir`, runs one more turn ("carry on") and returns the log. */
const continueChildSession = (backend: Protocol.Backend, dir: string) =>
  reopenChild(
    backend,
    dir,
    [S.textResponse("resumed")],
    (agent) =>
      Effect.gen(function*() {
        yield* agent.followup(Message.make("carry on"))
        yield* agent.whenIdle
        return yield* agent.log
      })
  )

const turnStarts = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e.type === "turn/start" ? [e.data.turn] : []))

const headers = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e.type === "request/header" ? [e.data.reason] : []))

const messageIdsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) =>
    (e.type === "user/message" || e.type === "steering/message") && e.data.messageId !== undefined
      ? [e.data.messageId]
      : []
  )

describe.each(["sqlite", "jsonl"] as const)("resume on %s", (backend) => {
  it.scopedLive("a reopened session continues turn numbering and logs request/header { reason: resume } (R110)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const location = Stores.locationIn(backend, dir)
      const id = Ids.SessionId.make("resume-1")
      yield* withAgent(
        backend,
        location,
        id,
        "create",
        [S.textResponse("one"), S.textResponse("two")],
        (agent) =>
          Effect.gen(function*() {
            yield* agent.followup(Message.make("first"))
            yield* agent.followup(Message.make("second"))
            yield* agent.whenIdle
          })
      )
      const { events, prompt } = yield* withAgent(
        backend,
        location,
        id,
        "open",
        [S.textResponse("three")],
        (agent, model) =>
          Effect.gen(function*() {
            yield* agent.followup(Message.make("third"))
            yield* agent.whenIdle
            return { events: yield* agent.log, prompt: (yield* model.requests)[0]!.prompt }
          })
      )
      assert.deepStrictEqual(turnStarts(events), [1, 2, 3])
      assert.deepStrictEqual(headers(events), ["initial", "resume"])
      // The resumed request is derived from the whole stored log: both earlier turns are in it.
      const texts = prompt.content.flatMap((m) =>
        m.role === "user" || m.role === "assistant"
          ? m.content.flatMap((p) => (p.type === "text" ? [p.text] : []))
          : []
      )
      assert.deepStrictEqual(texts, ["first", "one", "second", "two", "third"])
    }))

  it.scopedLive("an id accepted before the restart comes back unchanged after it and is delivered once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const location = Stores.locationIn(backend, dir)
      const id = Ids.SessionId.make("resume-2")
      const x = Ids.AgentMessageId.make("client-x")
      yield* withAgent(backend, location, id, "create", [S.textResponse("done")], (agent) =>
        Effect.gen(function*() {
          assert.strictEqual(yield* agent.followup(Message.make("do x"), { id: x }), x)
          yield* agent.whenIdle
        }))
      const after = yield* withAgent(
        backend,
        location,
        id,
        "open",
        [S.textResponse("y done")],
        (agent) =>
          Effect.gen(function*() {
            const live = yield* agent.subscribe
            const before = (yield* agent.log).length
            // The resend after the restart: same id back, nothing enqueued, nothing logged.
            assert.strictEqual(yield* agent.followup(Message.make("do x"), { id: x }), x)
            assert.strictEqual(yield* agent.steer(Message.make("do x"), { id: x }), x)
            assert.strictEqual((yield* agent.log).length, before)
            assert.strictEqual(yield* agent.status, "idle")
            const y = yield* agent.followup(Message.make("do y"), { id: Ids.AgentMessageId.make("client-y") })
            yield* agent.whenIdle
            const seen: Array<AgentEvent.AgentEvent> = Chunk.toArray(yield* Queue.takeAll(live))
            const enqueued = seen.flatMap((e) => (e.type === "agent/inbox/enqueue" ? [e.message.id] : []))
            assert.deepStrictEqual(enqueued, [y])
            return yield* agent.log
          })
      )
      assert.deepStrictEqual(messageIdsOf(after), ["client-x", "client-y"])
      assert.deepStrictEqual(turnStarts(after), [1, 2])
    }))
})

const scope = Effect.runSync(Scope.make())
let runner: Parent.Runner = Parent.tsx
beforeAll(async () => {
  runner = await Effect.runPromise(Scope.extend(Parent.fromEnv, scope))
}, 120_000)
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

/** A hand-written op: send `text` under the caller id `id` through `preset`. */
const send = (
  preset: Extract<Scenario.Op, { readonly _tag: "send" }>["preset"],
  id: string,
  text: string
): Scenario.Op => ({
  _tag: "send",
  preset,
  id,
  text
})

/** A hand-written op: wait until the child's agent is idle. */
const idle: Scenario.Op = { _tag: "idle" }

/** Runs one child with hand-written ops (a real process) and waits for its kill point. */
const runChild = (
  backend: Protocol.Backend,
  dir: string,
  ops: ReadonlyArray<Scenario.Op>,
  kill: Scenario.KillPoint,
  seed = 7,
  using: Parent.Runner = runner
) =>
  Parent.run(using, {
    backend,
    location: Stores.locationIn(backend, dir),
    sessionId: "child-session",
    seed,
    round: 0,
    mode: "create",
    kill,
    ops
  }).pipe(Effect.provide(NodeContext.layer))

/** Runs one child as {@link runChild}; asserts it was killed and that its log verifies clean. */
const killedChild = (...args: Parameters<typeof runChild>) =>
  Effect.gen(function*() {
    const run = yield* runChild(...args)
    assert.strictEqual(run.exit, "SIGKILL", run.stderr)
    const verdict = yield* Verify.verify(run)
    assert.deepStrictEqual(verdict.problems, [])
    return { run, verdict }
  })

describe.each(["sqlite", "jsonl"] as const)("resume after SIGKILL on %s", (backend) => {
  it.scopedLive("killed between turns: a new agent continues with the next turn, logs request/header { reason: resume } (R110) and runs the restored parked message first (R31)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ops: ReadonlyArray<Scenario.Op> = [
        send("followup", "a", "one"),
        idle,
        send("followup", "b", "two"),
        idle,
        send("park", "c", "three, parked")
      ]
      const { verdict } = yield* killedChild(backend, dir, ops, { kind: "sent", n: 3 }, 1)
      assert.isFalse(verdict.openTurn)
      assert.isTrue(verdict.reopened, verdict.reopenError)
      assert.deepStrictEqual(turnStarts(verdict.events), [1, 2])
      const resumed = yield* reopenChild(
        backend,
        dir,
        [S.textResponse("resumed"), S.textResponse("resumed too")],
        (agent) =>
          Effect.gen(function*() {
            // The parked message accepted before the kill is back, parked, with its id and content.
            const inbox = yield* agent.inbox
            assert.deepStrictEqual(inbox.map((i) => [i.id, i.placement, i.waking, i.content[0].text]), [
              ["c", "queued", false, "three, parked"]
            ])
            yield* agent.followup(Message.make("carry on"), { id: Ids.AgentMessageId.make("d") })
            yield* agent.whenIdle
            return yield* agent.log
          })
      )
      assert.deepStrictEqual(verdict.restored, ["c"])
      assert.deepStrictEqual(turnStarts(resumed), [1, 2, 3, 4])
      assert.deepStrictEqual(messageIdsOf(resumed), ["a", "b", "c", "d"])
      assert.deepStrictEqual(headers(resumed), ["initial", "resume"])
      assert.deepStrictEqual(resumed.slice(0, verdict.events.length), verdict.events)
    }))

  it.scopedLive("killed mid-tool: reopening repairs whatever turn the store holds open and a new agent continues with the next turn (R106, R110)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ops: ReadonlyArray<Scenario.Op> = [
        send("followup", "a", "warm up"),
        idle,
        send("followup", "b", "use the tool"),
        idle
      ]
      // Seed 3: the first reply is text only (turn 1), the second calls `work` (turn 2 is killed inside it).
      const { verdict } = yield* killedChild(backend, dir, ops, { kind: "tool", n: 1 }, 3)
      // With write-behind stores, the open turn is on disk only as far as the last barrier reached.
      assert.isTrue(verdict.reopened, verdict.reopenError)
      const lastTurn = Math.max(0, ...turnStarts(verdict.events))
      const closers = verdict.events.slice(verdict.stored)
      if (verdict.openTurn) assert.strictEqual(closers.at(-1)?.type, "turn/end")
      for (const result of closers) {
        if (result.type === "tool/result") assert.strictEqual(result.data.error?.code, "TOOL_OUTCOME_UNKNOWN")
      }
      const resumed = yield* continueChildSession(backend, dir)
      assert.deepStrictEqual(turnStarts(resumed).at(-1), lastTurn + 1)
      assert.deepStrictEqual(headers(resumed).at(-1), "resume")
    }))

  it.scopedLive("killed right after send returned: the parked messages are restored, resending every id returns it and delivers each exactly once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ops: ReadonlyArray<Scenario.Op> = [
        send("followup", "p", "first"),
        idle,
        send("park", "q", "parked"),
        send("inject", "r", "context"),
        send("park", "s", "parked too")
      ]
      const { run, verdict } = yield* killedChild(backend, dir, ops, { kind: "sent", n: 4 })
      const returned = run.lines.flatMap((l) => (l._tag === "sent" ? [l.id] : []))
      assert.deepStrictEqual(returned, ["p", "q", "r", "s"])
      const resumed = yield* reopenChild(
        backend,
        dir,
        [S.textResponse("one"), S.textResponse("two"), S.textResponse("three")],
        (agent) =>
          Effect.gen(function*() {
            assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["q", "s"])
            // The client saw four ids; after the crash it resends all of them, as followups: each comes back
            // unchanged and nothing is enqueued again.
            for (const messageId of returned) {
              const again = yield* agent.followup(Message.make(`resend ${messageId}`), {
                id: Ids.AgentMessageId.make(messageId)
              })
              assert.strictEqual(again, messageId)
            }
            assert.deepStrictEqual((yield* agent.inbox).map((i) => i.id), ["q", "s"])
            // A waking send runs the restored parked messages first, in order (R31).
            yield* agent.followup(Message.make("go"), { id: Ids.AgentMessageId.make("t") })
            yield* agent.whenIdle
            return yield* agent.log
          })
      )
      assert.deepStrictEqual(verdict.restored, ["q", "s"])
      assert.deepStrictEqual(messageIdsOf(resumed), ["p", "r", "q", "s", "t"])
    }))

  it.scopedLive(
    "the durable inbox (ADR 0017): parked messages accepted before a SIGKILL are restored in order with their ids and placements, and run once",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const ops: ReadonlyArray<Scenario.Op> = [send("park", "u", "parked one"), send("park", "v", "parked two")]
        // This child runs through tsx (the others run the bundle): both runners start the same program.
        const { verdict } = yield* killedChild(backend, dir, ops, { kind: "sent", n: 2 }, 7, Parent.tsx)
        // Both sends returned their ids, neither reached the log, and the durable inbox restores both.
        assert.deepStrictEqual(verdict.pending, ["u", "v"])
        assert.strictEqual(verdict.inboxRecords, 2)
        assert.deepStrictEqual(verdict.restored, ["u", "v"])
        assert.deepStrictEqual(verdict.lost, [])
        const resumed = yield* reopenChild(
          backend,
          dir,
          [S.textResponse("one"), S.textResponse("two"), S.textResponse("three")],
          (agent) =>
            Effect.gen(function*() {
              const inbox = yield* agent.inbox
              assert.deepStrictEqual(inbox.map((i) => [i.id, i.placement, i.waking, i.content[0].text]), [
                ["u", "queued", false, "parked one"],
                ["v", "queued", false, "parked two"]
              ])
              yield* agent.followup(Message.make("wake"), { id: Ids.AgentMessageId.make("w") })
              yield* agent.whenIdle
              return yield* agent.log
            })
        )
        assert.deepStrictEqual(messageIdsOf(resumed), ["u", "v", "w"])
        assert.deepStrictEqual(turnStarts(resumed), [1, 2, 3])
      })
  )

  it.scopedLive("killed mid-turn with queued and steering messages: on resume the queued turns and the steering (as a queued turn) run at once, in acceptance order, each once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ops: ReadonlyArray<Scenario.Op> = [
        send("followup", "a", "first"),
        send("followup", "b", "queued"),
        send("steer", "c", "steering"),
        send("followup", "d", "queued too"),
        idle
      ]
      const { verdict } = yield* killedChild(backend, dir, ops, { kind: "sent", n: 4 }, 3)
      assert.deepStrictEqual(verdict.lost, [])
      const before: ReadonlyArray<string> = messageIdsOf(verdict.events)
      // Whatever the running turn took before the kill is logged; the rest is restored, in acceptance order.
      assert.deepStrictEqual(verdict.restored, ["a", "b", "c", "d"].filter((m) => !before.includes(m)))
      assert.isAbove(verdict.restored.length, 0)
      const resumed = yield* reopenChild(
        backend,
        dir,
        [S.textResponse("one"), S.textResponse("two"), S.textResponse("three"), S.textResponse("four")],
        (agent) => Effect.zipRight(agent.whenIdle, agent.log)
      )
      const ids = messageIdsOf(resumed)
      assert.deepStrictEqual(ids, [...before, ...verdict.restored])
      assert.strictEqual(headers(resumed).at(-1), "resume")
    }))
})
