import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import * as AgentError from "../src/AgentError.js"
import * as Ids from "../src/Ids.js"
import * as Message from "../src/Message.js"
import * as Operations from "../src/Operations.js"
import { SessionLogError } from "../src/SessionLogError.js"

const message = Message.make("hello")
const id = Ids.AgentMessageId.make("m-1")

/** Every operation, as a request a remote caller would send. */
const requests: ReadonlyArray<Operations.Operation> = [
  new Operations.Send({ message, options: { target: "next-turn", wakeup: true, id } }),
  new Operations.Followup({ message }),
  new Operations.Steer({ message, options: { id } }),
  new Operations.Inject({ message, options: {} }),
  new Operations.Batch({
    operations: [
      { send: [message, { target: "next-step", wakeup: false }] },
      { cancel: ["parent", { keepInbox: true }] },
      { cancel: ["user"] }
    ]
  }),
  new Operations.Cancel({ cause: "user", options: { keepInbox: false } }),
  new Operations.Retry(),
  new Operations.Withdraw({ id }),
  new Operations.ListInbox()
]

const overTheWire = <A, I>(schema: Schema.Schema<A, I>, value: A): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(JSON.stringify(Schema.encodeSync(schema)(value))))

describe("Operations (ADR 0018)", () => {
  for (const request of requests) {
    it(`${request._tag}: the request survives JSON as the same request`, () => {
      const back = overTheWire(Operations.Operation, request)
      assert.strictEqual(back._tag, request._tag)
      assert.instanceOf(back, request.constructor as new(...args: never) => unknown)
      assert.deepStrictEqual(back, request)
    })
  }

  it("a request with invalid payload is refused by its schema, naming the field", () => {
    const result = Schema.decodeUnknownEither(Operations.Operation)({
      _tag: "Cancel",
      cause: "because"
    })
    assert.strictEqual(result._tag, "Left")
  })

  it.effect("each operation's exit (answer or failure) survives JSON through the request's own schemas", () =>
    Effect.gen(function*() {
      const log = new SessionLogError({ reason: "store", message: "the store refused the append" })
      const cases: ReadonlyArray<readonly [Operations.Operation, Exit.Exit<unknown, unknown>]> = [
        [requests[0]!, Exit.succeed(id)],
        [
          requests[0]!,
          Exit.fail(new Message.InvalidMessageError({ reason: "too-deep", message: "invalid message: …" }))
        ],
        [requests[3]!, Exit.fail(log)],
        [requests[4]!, Exit.succeed([id, undefined])],
        [
          requests[4]!,
          Exit.fail(new AgentError.BatchError({ applied: [id, undefined], cause: log, message: "stopped" }))
        ],
        [requests[6]!, Exit.fail(new AgentError.AgentDisposedError({ message: "disposed" }))],
        [requests[6]!, Exit.fail(new AgentError.AgentBusyError({ message: "busy" }))],
        [requests[7]!, Exit.succeed({ _tag: "NotPending", id })]
      ]
      for (const [request, exit] of cases) {
        const schema = Schema.exitSchema(
          request as unknown as Schema.WithResult<unknown, unknown, unknown, unknown, never>
        ) as unknown as Schema.Schema<Exit.Exit<unknown, unknown>, unknown>
        const back = overTheWire(schema, exit)
        assert.deepStrictEqual(back, exit, request._tag)
        if (Exit.isFailure(back) && Exit.isFailure(exit)) {
          const failure = Exit.causeOption(back)
          assert.isTrue(failure._tag === "Some")
        }
      }
    }))

  it("BatchError.cause is typed: a SessionLogError, decoded as one", () => {
    const error = new AgentError.BatchError({
      applied: [id],
      cause: new SessionLogError({ reason: "store", message: "refused", seq: 3 }),
      message: "the batch stopped at operation 2"
    })
    const back = overTheWire(AgentError.BatchError, error)
    assert.instanceOf(back.cause, SessionLogError)
    assert.strictEqual(back.cause.reason, "store")
    assert.strictEqual(back.cause.seq, 3)
    const refused = Schema.decodeUnknownEither(AgentError.BatchError)({
      _tag: "BatchError",
      applied: [],
      cause: { anything: true },
      message: "x"
    })
    assert.strictEqual(refused._tag, "Left")
  })

  it("the failure schemas are the operations' error families", () => {
    assert.isTrue(Schema.is(Operations.SendFailure)(new AgentError.AgentDisposedError({ message: "d" })))
    assert.isFalse(Schema.is(Operations.SendFailure)(new AgentError.AgentBusyError({ message: "b" })))
  })
})
