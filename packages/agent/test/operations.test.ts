/**
 * The operations as data (ADR 0018): a request decoded from JSON and run with `Agent.execute` does exactly what
 * the in-process call does, and its answer or failure encodes with the request's own schemas; `retry` on a
 * disposed agent fails as disposed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentError } from "@harness/agent"
import { Operations } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit, Schema, Scope } from "effect"
import { mid, setup, shape, user } from "./fixtures.js"

/** What a server does with a request body: decode it, run it, encode the exit for the reply. */
const serve = (agent: Agent.Service, body: string) =>
  Effect.gen(function*() {
    const request = Schema.decodeUnknownSync(Operations.Operation)(JSON.parse(body))
    const exit = yield* Effect.exit(Agent.execute(agent)(request))
    const schema = Schema.exitSchema(
      request as unknown as Schema.WithResult<unknown, unknown, unknown, unknown, never>
    ) as unknown as Schema.Schema<Exit.Exit<unknown, unknown>, unknown>
    return JSON.parse(JSON.stringify(Schema.encodeSync(schema)(exit))) as unknown
  })

const wire = (request: Operations.Operation): string => JSON.stringify(Schema.encodeSync(Operations.Operation)(request))

describe("operations as data", () => {
  it.scoped("a request decoded from JSON runs as the call it names; its exit encodes with its own schemas", () =>
    Effect.gen(function*() {
      const { agent, model, rec: recorder } = yield* setup()
      yield* model.push(S.textResponse("a1"))
      const parked = yield* serve(
        agent,
        wire(
          new Operations.Send({
            message: user("parked"),
            options: { target: "next-turn", wakeup: false, id: mid("p") }
          })
        )
      )
      assert.deepStrictEqual(parked, { _tag: "Success", value: "p" })
      const inbox = (yield* serve(agent, wire(new Operations.ListInbox()))) as {
        _tag: string
        value: Array<{ id: string }>
      }
      assert.deepStrictEqual(inbox.value.map((item) => item.id), ["p"])
      assert.deepStrictEqual(yield* serve(agent, wire(new Operations.Withdraw({ id: mid("p") }))), {
        _tag: "Success",
        value: { _tag: "Withdrawn", item: { ...inbox.value[0]! } }
      })
      assert.deepStrictEqual(
        yield* serve(agent, wire(new Operations.Inject({ message: user("ctx"), options: { id: mid("c") } }))),
        {
          _tag: "Success",
          value: "c"
        }
      )
      const batch = yield* serve(
        agent,
        wire(
          new Operations.Batch({
            operations: [{ send: [user("go"), { target: "next-turn", wakeup: true, id: mid("g") }] }, {
              cancel: ["user", { keepInbox: true }]
            }]
          })
        )
      )
      assert.deepStrictEqual(batch, { _tag: "Success", value: ["g", null] }) // `undefined` is `null` on the wire
      yield* agent.whenIdle
      assert.deepStrictEqual(shape(yield* agent.log, { ids: true }).slice(0, 3), [
        "user:ctx@c",
        "turn/start:1",
        "user:go@g"
      ])
      // A refusal crosses the wire as the typed failure.
      const refused = yield* serve(
        agent,
        JSON.stringify({ _tag: "Cancel", cause: "user", options: { keepInbox: "yes" } })
      ).pipe(
        Effect.catchAllDefect(() => Effect.succeed("refused by the request schema"))
      )
      assert.strictEqual(refused, "refused by the request schema")
      assert.isTrue((yield* recorder.events).length > 0)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("retry on a disposed agent fails as disposed (not busy), through the service and as data", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* Agent.make({ model: "m" }).pipe(Scope.extend(scope))
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(agent.retry)
      assert.instanceOf(error, AgentError.AgentDisposedError)
      const reply = yield* serve(agent, wire(new Operations.Retry()))
      assert.deepStrictEqual(reply, {
        _tag: "Failure",
        cause: {
          _tag: "Fail",
          error: { _tag: "AgentDisposedError", message: "the agent was disposed: it runs no more turns" }
        }
      })
    }).pipe(Effect.provide(S.layer())))
})
