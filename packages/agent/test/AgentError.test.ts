/**
 * ADR 0018, ADR 0074: every error the agent's API fails with is one family, shaped like `@effect/ai`'s `AiError` —
 * one union type and schema that every operation's failure belongs to, a `TypeId` every member carries (the log's
 * refusal carries the session family's), and the guard `isAgentError`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentError } from "@harness/agent"
import { Ids, type Operations } from "@harness/domain"
import { SessionError, SessionLogError, SessionStoreError } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Exit, Schema, Scope } from "effect"

/** Whether two types are the same (both ways assignable). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

/** How any one of the operations can fail (each operation's failures, joined). */
type AnyFailure<O> = O extends Operations.Operation ? Operations.Failure<O> : never

// The union schema decodes to exactly the union type, and every failure of every operation is in the family.
const schemaIsTheUnion: Same<typeof AgentError.AgentError.Type, AgentError.AgentError> = true
const failuresAreMembers: [AnyFailure<Operations.Operation>] extends [AgentError.AgentError] ? true : false = true

const id = Ids.AgentMessageId.make("m-1")
const logRefusal = new SessionLogError.SessionLogError({ reason: "store", message: "the store refused the append" })

/** One of each member, keyed by tag: a member added to the union without a sample here does not compile. */
const samples: { readonly [K in AgentError.AgentError["_tag"]]: Extract<AgentError.AgentError, { _tag: K }> } = {
  AgentConfigError: new AgentError.AgentConfigError({ option: "tools", message: "bad" }),
  AgentDisposedError: new AgentError.AgentDisposedError({ message: "disposed" }),
  AgentBusyError: new AgentError.AgentBusyError({ message: "busy" }),
  ApprovalError: new AgentError.ApprovalError({
    callId: Ids.ToolCallId.make("call-1"),
    reason: "not-pending",
    message: "no approval of call-1 is pending"
  }),
  BatchError: new AgentError.BatchError({ applied: [id, undefined], cause: logRefusal, message: "stopped" }),
  InboxChangeError: new AgentError.InboxChangeError({ id, reason: "taken", message: "taken" }),
  InboxFullError: new AgentError.InboxFullError({ limit: 2, message: "full" }),
  TurnRunningError: new AgentError.TurnRunningError({ message: "a turn is running" }),
  InvalidMessageError: new AgentError.InvalidMessageError({ reason: "too-large", message: "invalid message: large" }),
  SessionLogError: logRefusal
}

describe("AgentError (R229, ADR 0074)", () => {
  it("the union schema is the union type, and every operation's failure is a member", () => {
    assert.isTrue(schemaIsTheUnion)
    assert.isTrue(failuresAreMembers)
    assert.strictEqual(AgentError.AgentError.members.length, Object.keys(samples).length)
  })

  it("every member survives JSON through the union schema as its own class, and the guard knows it", () => {
    for (const error of Object.values(samples)) {
      const json = JSON.stringify(Schema.encodeSync(AgentError.AgentError)(error))
      const back = Schema.decodeUnknownSync(AgentError.AgentError)(JSON.parse(json))
      assert.deepStrictEqual(back, error)
      assert.strictEqual(Object.getPrototypeOf(back), Object.getPrototypeOf(error))
      assert.isTrue(AgentError.isAgentError(error), error._tag)
      assert.isTrue(AgentError.isAgentError(back), error._tag)
      // The mark lives on the class: the error's own fields and its JSON are what they were.
      assert.notInclude(JSON.stringify(error), AgentError.TypeId)
      assert.notInclude(json, AgentError.TypeId)
    }
  })

  it("each member carries the agent's TypeId, but the log's refusal, which carries the session family's", () => {
    for (const error of Object.values(samples)) {
      const own = error._tag !== "SessionLogError"
      assert.strictEqual(AgentError.TypeId in error, own, error._tag)
      assert.strictEqual(SessionError.isSessionError(error), !own, error._tag)
    }
  })

  it("nothing else passes the guard: other families, lookalikes, encoded errors", () => {
    const others: ReadonlyArray<unknown> = [
      new SessionStoreError.SessionStoreError({ reason: "Io", message: "disk full" }),
      new Error("busy"),
      { _tag: "AgentBusyError", message: "busy" },
      { _tag: "SessionLogError", reason: "store", message: "refused" },
      Schema.encodeSync(AgentError.AgentError)(samples.AgentDisposedError),
      null,
      "AgentBusyError"
    ]
    for (const value of others) assert.isFalse(AgentError.isAgentError(value))
  })

  it.scoped("what a real agent fails with is caught by the one guard", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* Agent.make({ model: "m" }).pipe(Scope.extend(scope))
      const caught = (effect: Effect.Effect<unknown, unknown>) =>
        effect.pipe(
          Effect.flatMap(() => Effect.dieMessage("expected a failure")),
          Effect.catchIf(AgentError.isAgentError, (error) => Effect.succeed(error._tag))
        )
      const approval = yield* caught(agent.approve(Ids.ToolCallId.make("call-9"), { kind: "allow" }))
      const change = yield* caught(agent.promote(id))
      yield* Scope.close(scope, Exit.void)
      const disposed = yield* caught(agent.retry)
      assert.deepStrictEqual([approval, change, disposed], ["ApprovalError", "InboxChangeError", "AgentDisposedError"])
    }).pipe(Effect.provide(S.layer())))
})
