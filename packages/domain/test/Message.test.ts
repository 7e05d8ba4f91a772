import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Message from "../src/Message.js"
import { agentMessage, decodeError, messageId, roundTrip, sources, userData } from "./fixtures.js"

const text = [{ type: "text", text: "hi" }]

describe("Message schemas round trip", () => {
  for (const [name, source] of sources) {
    it.effect(`UserMessageData with a ${name} source`, () =>
      roundTrip(Message.UserMessageData, { content: [{ type: "text", text: "x" }], source }))
  }

  it.effect("UserMessageData with several blocks", () => roundTrip(Message.UserMessageData, userData))

  it.effect("AgentMessage", () => roundTrip(Message.AgentMessage, agentMessage))

  it.effect("AgentMessage keys are exactly content, id, source (R6)", () =>
    Effect.gen(function*() {
      const decoded = yield* Schema.decodeUnknown(Message.AgentMessage)({ ...agentMessage })
      assert.deepStrictEqual(Object.keys(decoded).sort(), ["content", "id", "source"])
      const encoded = yield* Schema.encode(Message.AgentMessage)(agentMessage)
      assert.deepStrictEqual(Object.keys(encoded).sort(), ["content", "id", "source"])
    }))

  it.effect("SendOptions for every target, with and without id", () =>
    Effect.gen(function*() {
      for (const target of Message.SendTarget.literals) {
        for (const wakeup of [true, false]) {
          yield* roundTrip(Message.SendOptions, { target, wakeup })
          yield* roundTrip(Message.SendOptions, { target, wakeup, id: messageId })
        }
      }
    }))

  it.effect("InboxPlacement", () =>
    Effect.gen(function*() {
      for (const placement of ["queued", "steering"] as const) yield* roundTrip(Message.InboxPlacement, placement)
    }))

  it.effect("InvalidMessageError (so it can be logged durably)", () =>
    Effect.gen(function*() {
      const error = new Message.InvalidMessageError({ reason: "schema", message: "invalid message: x" })
      const encoded = yield* Schema.encode(Message.InvalidMessageError)(error)
      assert.deepStrictEqual(encoded, { _tag: "InvalidMessageError", reason: "schema", message: "invalid message: x" })
      const decoded = yield* Schema.decodeUnknown(Message.InvalidMessageError)(JSON.parse(JSON.stringify(encoded)))
      assert.instanceOf(decoded, Message.InvalidMessageError)
      assert.strictEqual(decoded.message, error.message)
    }))

  it("make builds a user message, or one with the given source", () => {
    assert.deepStrictEqual(Message.make("hi"), { content: [{ type: "text", text: "hi" }], source: { kind: "user" } })
    assert.deepStrictEqual(Message.make("hi", { kind: "plugin", plugin: "p" }).source, { kind: "plugin", plugin: "p" })
  })
})

describe("Message schemas refuse", () => {
  it.effect("SendOptions without wakeup, naming the key", () =>
    Effect.gen(function*() {
      const message = yield* decodeError(Message.SendOptions, { target: "next-turn" })
      assert.include(message, "[\"wakeup\"]")
      assert.include(message, "is missing")
    }))

  it.effect("SendOptions with a wrong id brand: empty string or number", () =>
    Effect.gen(function*() {
      const empty = yield* decodeError(Message.SendOptions, { target: "next-step", wakeup: true, id: "" })
      assert.include(empty, "[\"id\"]")
      assert.include(empty, "an id must be a non-empty string")
      const number = yield* decodeError(Message.SendOptions, { target: "next-step", wakeup: true, id: 7 })
      assert.include(number, "[\"id\"]")
      assert.include(number, "Expected string, actual 7")
    }))

  it.effect("AgentMessage without an id, or with an empty one", () =>
    Effect.gen(function*() {
      const missing = yield* decodeError(Message.AgentMessage, { content: text, source: { kind: "user" } })
      assert.include(missing, "[\"id\"]")
      assert.include(missing, "is missing")
      const empty = yield* decodeError(Message.AgentMessage, { content: text, source: { kind: "user" }, id: "" })
      assert.include(empty, "an id must be a non-empty string")
    }))

  it.effect("an unknown target or placement", () =>
    Effect.gen(function*() {
      const target = yield* decodeError(Message.SendTarget, "now")
      assert.include(target, "\"next-turn\" | \"next-step\"")
      assert.include(target, "actual \"now\"")
      const placement = yield* decodeError(Message.InboxPlacement, "front")
      assert.include(placement, "\"queued\" | \"steering\"")
      assert.include(placement, "actual \"front\"")
    }))
})
