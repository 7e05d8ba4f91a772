/**
 * Careless callers (ADR 0018): whatever a caller hands the agent's operations — values nested thousands of levels
 * deep, throwing getters, Proxies, `batch(null | 5 | {})`, a throwing iterable, `Object.create(valid)`, class
 * instances, a message too large to log, a cancel cause the domain does not know, or plain values of the wrong
 * shape — the operation fails with a typed `InvalidMessageError` (never a defect, never a throw) and changes
 * nothing: no live event, no log event, nothing pending.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { AgentEvent, Ids, Message } from "@harness/domain"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Cause, Effect, Exit, FastCheck as fc, Option, Runtime, Schema } from "effect"
import { awaitSleeper, isDurable, lie, setup, user } from "./fixtures.js"

const valid = { content: [{ type: "text", text: "hi" }], source: { kind: "user" } }
const followup: Message.SendOptions = { target: "next-turn", wakeup: true }

const nested = (depth: number): unknown => {
  let value: unknown = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { x: value }
  return value
}

class Message_ {
  readonly content = [{ type: "text", text: "hi" }]
  readonly source = { kind: "user" }
}

const throwing = () => {
  throw new Error("caller bug")
}

/** A lazily built string of 3 million control characters: 18 million characters once JSON-encoded. */
let controls: string | undefined
const controlString = () => (controls ??= "\u0001".repeat(3_000_000))
/** A lazily built string of 17 million characters (more than 16 MiB whatever it holds). */
let long: string | undefined
const longString = () => (long ??= "a".repeat(17_000_000))

/**
 * Values no slot accepts, whatever it expects: each is refused by the plain, bounded copy before any schema runs.
 * Built fresh for every use (a thunk), since some are stateful.
 */
const hostile: fc.Arbitrary<readonly [string, () => unknown]> = fc.oneof(
  fc.integer({ min: 65, max: 5000 }).map((depth) => [`nesting ${depth} deep`, () => nested(depth)] as const),
  fc.constantFrom<readonly [string, () => unknown]>(
    ["a throwing getter", () => ({
      get content() {
        return throwing()
      },
      source: { kind: "user" }
    })],
    ["a throwing getter in a block", () => ({
      content: [{
        type: "text",
        get text() {
          return throwing()
        }
      }],
      source: { kind: "user" }
    })],
    ["a Proxy whose ownKeys throws", () => new Proxy({ ...valid }, { ownKeys: throwing })],
    ["a Proxy whose getPrototypeOf throws", () => new Proxy({ ...valid }, { getPrototypeOf: throwing })],
    [
      "a Proxy whose getOwnPropertyDescriptor throws",
      () => new Proxy({ ...valid }, { getOwnPropertyDescriptor: throwing })
    ],
    ["a Proxy of an array whose has throws", () => new Proxy([valid], { getOwnPropertyDescriptor: throwing })],
    ["a revoked Proxy", () => {
      const { proxy, revoke } = Proxy.revocable({ ...valid }, {})
      revoke()
      return proxy
    }],
    ["a throwing iterable", () => ({ [Symbol.iterator]: throwing })],
    ["a generator", () =>
      (function*() {
        yield throwing()
      })()],
    ["a Set", () => new Set([valid])],
    ["Object.create(valid)", () => Object.create(valid)],
    ["a class instance", () => new Message_()],
    ["a Date", () => new Date(0)],
    ["a function", () => throwing],
    ["a symbol", () => Symbol("s")],
    ["a bigint", () => 5n],
    ["a cycle", () => {
      const self: Record<string, unknown> = { ...valid }
      self["self"] = self
      return self
    }],
    ["an array with a hole", () => {
      const holes: Array<unknown> = [valid]
      holes.length = 3
      return holes
    }],
    ["an array with a named property", () => Object.assign([valid], { extra: 1 })],
    ["a message too large to log (3 million control characters)", () => ({
      content: [{ type: "text", text: controlString() }],
      source: { kind: "user" }
    })],
    [
      "a text of 17 million characters",
      () => ({ content: [{ type: "text", text: longString() }], source: { kind: "user" } })
    ]
  )
)

/** Where a hostile value goes inside an otherwise valid message. */
const places: ReadonlyArray<(bad: unknown) => unknown> = [
  (bad) => bad,
  (bad) => ({ ...valid, content: bad }),
  (bad) => ({ ...valid, content: [bad] }),
  (bad) => ({ ...valid, content: [{ type: "text", text: bad }] }),
  (bad) => ({ ...valid, source: bad }),
  (bad) => ({ ...valid, source: { kind: "goal", goalId: "g", revision: 1, round: 0, change: { value: bad } } })
]

const strictly = <A, I>(schema: Schema.Schema<A, I>) => {
  const is = Schema.decodeUnknownOption(schema, { onExcessProperty: "error" })
  return (u: unknown) => Option.isSome(is(u))
}

/** A plain value that the slot's schema refuses. */
const wrongFor = <A, I>(schema: Schema.Schema<A, I>) =>
  fc.anything({ withNullPrototype: true, withSparseArray: true, withBigInt: true }).filter((u) => !strictly(schema)(u))

const PresetOptions = Schema.UndefinedOr(Schema.Struct({ id: Schema.optional(Ids.AgentMessageId) }))
const CancelOptions = Schema.UndefinedOr(Schema.Struct({ keepInbox: Schema.optional(Schema.Boolean) }))

/** Something malformed for a slot: hostile (at a random place in a message, for message slots) or plain but wrong. */
const malformed = <A, I>(
  schema: Schema.Schema<A, I>,
  message = false
): fc.Arbitrary<readonly [string, () => unknown]> =>
  fc.oneof(
    message
      ? fc.tuple(hostile, fc.nat(places.length - 1)).map(([[what, make], at]) =>
        [`${what} at place ${at}`, () => places[at]!(make())] as const
      )
      : hostile,
    wrongFor(schema).map((u) => [`the plain value ${safeShow(u)}`, () => u] as const)
  )

const safeShow = (u: unknown): string => {
  try {
    return fc.stringify(u).slice(0, 200)
  } catch {
    return "<unprintable>"
  }
}

type Op = (agent: Agent.Service, bad: unknown) => Effect.Effect<unknown, unknown>

/** Every entry point, with the malformed value in each of its slots. */
const operations: ReadonlyArray<readonly [string, fc.Arbitrary<readonly [string, () => unknown]>, Op]> = [
  ["send(bad, options)", malformed(Message.UserMessageData, true), (a, bad) => a.send(lie(bad), lie(followup))],
  ["send(message, bad)", malformed(Message.SendOptions), (a, bad) => a.send(lie(valid), lie(bad))],
  ["followup(bad)", malformed(Message.UserMessageData, true), (a, bad) => a.followup(lie(bad))],
  ["steer(bad)", malformed(Message.UserMessageData, true), (a, bad) => a.steer(lie(bad))],
  ["inject(bad)", malformed(Message.UserMessageData, true), (a, bad) => a.inject(lie(bad))],
  ["followup(message, bad)", malformed(PresetOptions), (a, bad) => a.followup(lie(valid), lie(bad))],
  ["inject(message, bad)", malformed(PresetOptions), (a, bad) => a.inject(lie(valid), lie(bad))],
  [
    "batch(bad)",
    fc.oneof(
      malformed(Schema.Array(Schema.Unknown)),
      fc.constantFrom<readonly [string, () => unknown]>(["null", () => null], ["5", () => 5], ["{}", () => ({})])
    ),
    (a, bad) => a.batch(lie(bad))
  ],
  [
    "batch([valid send, { send: [bad, options] }])",
    malformed(Message.UserMessageData, true),
    (a, bad) => a.batch(lie([{ send: [valid, followup] }, { send: [bad, followup] }]))
  ],
  [
    "batch([valid send, { send: [message, bad] }])",
    malformed(Message.SendOptions),
    (a, bad) => a.batch(lie([{ send: [valid, followup] }, { send: [valid, bad] }]))
  ],
  [
    "batch([valid send, bad])",
    malformed(Schema.Unknown.pipe(Schema.filter(() => false))),
    (a, bad) => a.batch(lie([{ send: [valid, followup] }, bad]))
  ],
  ["batch([{ cancel: [bad] }])", malformed(AgentEvent.CancelCause), (a, bad) => a.batch(lie([{ cancel: [bad] }]))],
  [
    "sendAll(bad)",
    malformed(Schema.Array(Schema.Tuple(Schema.Unknown, Schema.Unknown))),
    (a, bad) => a.sendAll(lie(bad))
  ],
  [
    "sendAll([[bad, options]])",
    malformed(Message.UserMessageData, true),
    (a, bad) => a.sendAll(lie([[valid, followup], [bad, followup]]))
  ],
  ["cancel(bad)", malformed(AgentEvent.CancelCause), (a, bad) => a.cancel(lie(bad))],
  ["cancel(cause, bad)", malformed(CancelOptions), (a, bad) => a.cancel("user", lie(bad))],
  ["withdraw(bad)", malformed(Ids.AgentMessageId), (a, bad) => a.withdraw(lie(bad))]
]

const reasons = new Set<string>(Message.InvalidInputReason.literals)

const scenario = fc.nat(operations.length - 1).chain((index) =>
  operations[index]![1].map(([what, make]) => ({ index, what, make }))
)

/** Runs ≥ `runs` malformed calls against one agent and checks each is refused and changes nothing. */
const property = (agent: Agent.Service, recorder: EventRecorder.Recorder, runs: number, seed: number) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const log = yield* agent.log
    const events = yield* recorder.events
    const inbox = yield* agent.inbox
    const status = yield* agent.status
    const check = ({ index, make, what }: { index: number; what: string; make: () => unknown }) =>
      Effect.gen(function*() {
        const [name, , op] = operations[index]!
        const label = `${name} with ${what}`
        // The operation is called synchronously here: it must not throw while building its effect either.
        const exit = yield* Effect.exit(Effect.suspend(() => op(agent, make())))
        assert.isTrue(Exit.isFailure(exit), `${label}: accepted`)
        if (Exit.isFailure(exit)) {
          const failure = Cause.failureOption(exit.cause)
          assert.isTrue(Option.isSome(failure), `${label}: died instead of failing: ${Cause.pretty(exit.cause)}`)
          const error = Option.getOrThrow(failure)
          assert.instanceOf(error, Message.InvalidMessageError, label)
          const invalid = error as Message.InvalidMessageError
          assert.isTrue(reasons.has(invalid.reason), `${label}: reason ${invalid.reason}`)
          assert.match(invalid.message, /^(batch operation \d+: )?invalid [a-zA-Z ]+: ./s, label)
          assert.isAtMost(invalid.message.length, 2100, label)
        }
        assert.deepStrictEqual(yield* agent.log, log, `${label}: the log changed`)
        assert.deepStrictEqual(yield* recorder.events, events, `${label}: live events were published`)
        assert.deepStrictEqual(yield* agent.inbox, inbox, `${label}: the inbox changed`)
        assert.strictEqual(yield* agent.status, status, label)
      })
    // Each check after a turn of the event loop (setImmediate): run after run resolved in promises alone, the
    // 10 000 checks (minutes on a loaded machine) never let the test worker reach its timers and I/O, so vitest's RPC
    // deadline passed and the run failed with "Timeout calling onTaskUpdate".
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve))
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(scenario, (c) => turn().then(() => Runtime.runPromise(runtime)(check(c))).then(() => true)),
        { numRuns: runs, seed, endOnFailure: true }
      )
    )
  })

describe("careless callers (ADR 0018)", () => {
  it.scoped(
    "10 000 malformed inputs to every operation: each a typed InvalidMessageError; log, live events and inbox unchanged",
    () =>
      Effect.gen(function*() {
        // An idle agent with a history …
        const idle = yield* Agent.make({ model: "m" })
        yield* idle.inject(user("context"))
        const idleRecorder = yield* EventRecorder.make(idle)
        yield* property(idle, idleRecorder, 5_000, 14)

        // … and a busy one: a turn waiting for its model, a parked follow-up pending.
        const model = yield* S.ScriptedModel
        yield* model.push(S.delayed("1 hour", S.textResponse("late")))
        const busy = yield* Agent.make({ model: "m" })
        const busyRecorder = yield* EventRecorder.make(busy)
        yield* busy.followup(user("first"))
        yield* busyRecorder.waitFor(isDurable("step/start"))
        yield* awaitSleeper
        yield* busy.send(user("parked"), { target: "next-turn", wakeup: false })
        yield* property(busy, busyRecorder, 5_000, 10)
      }).pipe(Effect.provide(S.layer())),
    // ≈ 25 s of CPU; the margin is for a loaded machine.
    { timeout: 900_000 }
  )

  it.scoped("a hostile value inside each slot names the operation and what was wrong", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "m" })
      const refusal = (effect: Effect.Effect<unknown, unknown>) =>
        Effect.map(Effect.flip(effect), (error) => error as Message.InvalidMessageError)
      const deep = yield* refusal(agent.send(lie({ ...valid, source: nested(5000) }), followup))
      assert.strictEqual(deep.reason, "too-deep")
      assert.match(deep.message, /^invalid message: source(\.x|\[0\])+ is nested deeper than the limit of 64 levels$/)
      const getter = yield* refusal(agent.followup(lie({
        get content() {
          return throwing()
        },
        source: valid.source
      })))
      assert.strictEqual(getter.reason, "accessor")
      assert.strictEqual(getter.message, "invalid message: content is a getter or setter, not a data property")
      const proxy = yield* refusal(agent.steer(lie(new Proxy({ ...valid }, { ownKeys: throwing }))))
      assert.deepStrictEqual([proxy.reason, proxy.message], [
        "unreadable",
        "invalid message: the value is unreadable: reading it threw"
      ])
      const inherited = yield* refusal(agent.followup(lie(Object.create(valid))))
      assert.strictEqual(inherited.reason, "not-plain")
      const instance = yield* refusal(agent.followup(lie(new Message_())))
      assert.strictEqual(instance.message, "invalid message: the value is an instance of Message_, not a plain object")
      for (const bad of [null, 5, {}]) {
        const error = yield* refusal(agent.batch(lie(bad)))
        assert.strictEqual(error.reason, "schema", String(bad))
        assert.match(error.message, /^invalid batch: /)
      }
      const iterable = yield* refusal(agent.batch(lie({ [Symbol.iterator]: throwing })))
      assert.strictEqual(iterable.message, "invalid batch: the value is an object with a symbol key")
      const large = yield* refusal(
        agent.inject(lie({ content: [{ type: "text", text: controlString() }], source: valid.source }))
      )
      assert.strictEqual(large.reason, "too-large")
      assert.match(
        large.message,
        /^invalid message: content\[0\]\.text is larger than the limit of 16777216 characters/
      )
      const second = yield* refusal(
        agent.batch(lie([{ send: [valid, followup] }, { send: [{ ...valid, extra: 1 }, followup] }]))
      )
      assert.match(second.message, /^batch operation 2: invalid message: /)
      const cause = yield* refusal(agent.cancel(lie("because")))
      assert.strictEqual(cause.reason, "schema")
      assert.match(cause.message, /^invalid cancel cause: .*Expected "user", actual "because"/s)
      assert.deepStrictEqual(yield* agent.log, [])
      // A Proxy is copied through property descriptors: its `get` trap never runs, so one that throws from `get`
      // but describes valid data is accepted as that data.
      const id = yield* agent.inject(lie(new Proxy({ ...valid }, { get: throwing })))
      assert.deepStrictEqual((yield* agent.log).map((e) => e.type === "user/message" && e.data.messageId), [id])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a cancel with an invalid cause publishes nothing, even while a turn runs (the event would break the schema)", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.delayed("1 hour", S.textResponse("late")))
      yield* agent.followup(user("first"))
      yield* recorder.waitFor(isDurable("step/start"))
      yield* awaitSleeper
      const before = yield* recorder.events
      const error = yield* Effect.flip(agent.cancel(lie({ kind: "user" }), { keepInbox: true }))
      assert.strictEqual(error._tag, "InvalidMessageError")
      assert.deepStrictEqual(yield* recorder.events, before)
      assert.strictEqual(yield* agent.status, "running")
      // A valid cancel still works, and every event it publishes satisfies the domain's schema.
      yield* agent.cancel("user")
      yield* agent.whenIdle
      for (const event of yield* recorder.events) {
        assert.isTrue(Schema.is(AgentEvent.AgentEvent)(event), JSON.stringify(event))
      }
    }).pipe(Effect.provide(S.layer())))
})
