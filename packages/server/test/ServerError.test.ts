/**
 * ADR 0074: the server's refusals are one family, shaped like `@effect/ai`'s `AiError` — one union type and schema
 * with every refusal the API sends, a `TypeId` every member carries, and the guard `isServerError`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@harness/domain"
import { Schema } from "effect"
import { ServerError } from "../src/index.js"

const id = Ids.SessionId.make("s-1")

/** One of each member, keyed by tag: a member added to the union without a sample here does not compile. */
const samples: { readonly [K in ServerError.ServerError["_tag"]]: Extract<ServerError.ServerError, { _tag: K }> } = {
  Unauthorized: new ServerError.Unauthorized({ message: "no token" }),
  Forbidden: new ServerError.Forbidden({ needed: "admin", message: "needs admin" }),
  PayloadTooLarge: new ServerError.PayloadTooLarge({ limit: 10, message: "too large" }),
  TooManyRequests: new ServerError.TooManyRequests({ retryAfterMillis: 100, message: "slow down" }),
  SessionNotFound: new ServerError.SessionNotFound({ id: "s-1", message: "no such session" }),
  SessionConflict: new ServerError.SessionConflict({ id, reason: "busy", message: "another process writes it" }),
  StoreUnavailable: new ServerError.StoreUnavailable({ message: "the store failed" }),
  ForkRefused: new ServerError.ForkRefused({ id, message: "not a turn boundary" }),
  GoalsUnavailable: new ServerError.GoalsUnavailable({ id, message: "no goal system" })
}

describe("ServerError (ADR 0074)", () => {
  it("every refusal is in the union, survives JSON through its schema, and carries the TypeId", () => {
    assert.strictEqual(ServerError.ServerError.members.length, Object.keys(samples).length)
    for (const error of Object.values(samples)) {
      const json = JSON.stringify(Schema.encodeSync(ServerError.ServerError)(error))
      const back = Schema.decodeUnknownSync(ServerError.ServerError)(JSON.parse(json))
      assert.deepStrictEqual(back, error)
      assert.isTrue(ServerError.isServerError(back), error._tag)
      assert.notInclude(json, ServerError.TypeId)
    }
    const others: ReadonlyArray<unknown> = [new Error("x"), { _tag: "Unauthorized", message: "no token" }, null]
    for (const value of others) assert.isFalse(ServerError.isServerError(value))
  })
})
