/**
 * ADR 0074: the session package's errors are one family, shaped like `@effect/ai`'s `AiError` — one union type and
 * schema, a `TypeId` every member carries, and a guard that catches anything the session said in one place.
 */
import { assert, describe, it } from "@effect/vitest"
import { ev, promptTurn, sessionId } from "@harness/testkit/Events"
import { Effect, Schema } from "effect"
import * as SessionError from "../src/SessionError.js"
import * as SessionLog from "../src/SessionLog.js"
import { SessionLogError } from "../src/SessionLogError.js"
import * as SessionStore from "../src/SessionStore.js"
import { SessionStoreError } from "../src/SessionStoreError.js"
import { appendAll } from "./fixtures.js"

const sid = sessionId("session-1")

/** One of each member, keyed by tag: a member added to the union without a sample here does not compile. */
const samples: { readonly [K in SessionError.SessionError["_tag"]]: Extract<SessionError.SessionError, { _tag: K }> } =
  {
    SessionLogError: new SessionLogError({ reason: "busy", message: "another writer holds it", session: sid }),
    SessionStoreError: new SessionStoreError({ reason: "Io", message: "disk full", id: sid })
  }

describe("SessionError (R229, ADR 0074)", () => {
  it.effect("what a real log and a real store fail with is caught by the one guard", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      yield* appendAll(log, promptTurn(1, "Hi", "Hello"))
      yield* store.remove(sid)
      const caught = (effect: Effect.Effect<unknown, unknown>) =>
        effect.pipe(
          Effect.flatMap(() => Effect.dieMessage("expected a failure")),
          Effect.catchIf(SessionError.isSessionError, (error) => Effect.succeed(error))
        )
      const fromStore = yield* caught(store.header(sid))
      const fromLog = yield* caught(log.append(ev.user("after removal")))
      assert.strictEqual(fromStore._tag, "SessionStoreError")
      assert.strictEqual(fromLog._tag, "SessionLogError")
    }))

  it("every member carries the TypeId, survives JSON through the union schema, and nothing else passes", () => {
    for (const error of Object.values(samples)) {
      assert.isTrue(SessionError.isSessionError(error), error._tag)
      assert.isTrue(SessionError.TypeId in error)
      const json = JSON.stringify(Schema.encodeSync(SessionError.SessionError)(error))
      const back = Schema.decodeUnknownSync(SessionError.SessionError)(JSON.parse(json))
      assert.deepStrictEqual(back, error)
      assert.isTrue(SessionError.isSessionError(back))
      // The mark lives on the class: the error's own fields and its JSON are what they were.
      assert.notInclude(JSON.stringify(error), SessionError.TypeId)
      assert.notInclude(json, SessionError.TypeId)
    }
    assert.strictEqual(SessionError.SessionError.members.length, Object.keys(samples).length)
    const lookalikes: ReadonlyArray<unknown> = [
      new Error("disk full"),
      { _tag: "SessionStoreError", reason: "Io", message: "disk full" },
      Schema.encodeSync(SessionError.SessionError)(samples.SessionStoreError),
      null,
      "SessionLogError"
    ]
    for (const value of lookalikes) assert.isFalse(SessionError.isSessionError(value))
  })
})
