/**
 * Provenance (R53): the assistant message records the route label it was sent to and, beside it, the model
 * the provider reports serving the request (`response-metadata`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@harness/agent"
import { Message } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect } from "effect"
import { idleLog, ofType } from "./fixtures.js"

describe("provenance", () => {
  it.scoped("R51: the assistant message keeps the route label and records the model the provider reports", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({ model: "fast", provider: "deepseek" })
      yield* (yield* S.ScriptedModel).push(
        { ...S.textResponse("one"), reportedModel: "deepseek-v4-flash-2026-09" },
        S.textResponse("two")
      )
      yield* agent.followup(Message.make("a"))
      yield* agent.whenIdle
      yield* agent.followup(Message.make("b"))
      const log = yield* idleLog(agent)
      assert.deepStrictEqual(ofType(log, "assistant/message").map((e) => e.data.provenance), [
        { model: "fast", provider: "deepseek", reportedModel: "deepseek-v4-flash-2026-09" },
        { model: "fast", provider: "deepseek" }
      ])
      // The route label stays the request header's route.
      assert.deepStrictEqual(ofType(log, "request/header").map((e) => e.data.header.config.model), ["fast"])
    }).pipe(Effect.provide(S.layer())))
})
