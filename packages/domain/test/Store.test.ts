import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Schema, type SchemaAST } from "effect"
import { AgentMessageId, SessionId } from "../src/Ids.js"
import * as SessionEvent from "../src/SessionEvent.js"
import * as Store from "../src/Store.js"
import { agentMessage, decodeError, roundTrip, sessionEvents } from "./fixtures.js"

const header: Store.SessionHeader = {
  id: SessionId.make("s1"),
  version: 1,
  createdAt: 1_700_000_000_000,
  parent: { id: SessionId.make("parent"), seq: 41 },
  title: "A title"
}

const accepted: Store.InboxRecord = {
  type: "inbox/accepted",
  time: 5,
  message: agentMessage,
  placement: "steering",
  wakeup: true
}

const settled: Store.InboxRecord = { type: "inbox/settled", time: 6, id: agentMessage.id, fate: "withdrawn" }

/** Every transformation reachable in a schema: stores JSON-encode type values directly, so there must be none. */
const transformations = (ast: SchemaAST.AST, seen = new Set<SchemaAST.AST>()): ReadonlyArray<string> => {
  if (seen.has(ast)) return []
  seen.add(ast)
  const walk = (child: SchemaAST.AST) => transformations(child, seen)
  switch (ast._tag) {
    case "Transformation":
      return [String(ast)]
    case "Refinement":
      return walk(ast.from)
    case "Union":
      return ast.types.flatMap(walk)
    case "TypeLiteral":
      return [...ast.propertySignatures.map((p) => p.type), ...ast.indexSignatures.map((i) => i.type)].flatMap(walk)
    case "TupleType":
      return [...ast.elements.map((e) => e.type), ...ast.rest.map((r) => r.type)].flatMap(walk)
    case "Suspend":
      return walk(ast.f())
    case "Declaration":
      return ast.typeParameters.flatMap(walk)
    default:
      return []
  }
}

describe("Store schemas", () => {
  it.effect("headers round trip, with and without the optional fields", () =>
    Effect.gen(function*() {
      yield* roundTrip(Store.SessionHeader, header)
      yield* roundTrip(Store.SessionHeader, { id: SessionId.make("s2"), version: 1, createdAt: 0 })
    }))

  it.effect("summaries and both inbox records round trip", () =>
    Effect.gen(function*() {
      yield* roundTrip(Store.SessionSummary, {
        header,
        events: 3,
        turns: 1,
        lastActivity: 9,
        bytes: 120,
        firstPrompt: "Hi"
      })
      yield* roundTrip(Store.InboxRecord, accepted)
      yield* roundTrip(Store.InboxRecord, settled)
      for (const placement of ["queued", "steering", "context"] as const) {
        yield* roundTrip(Store.InboxRecord, { ...accepted, placement })
      }
      for (const fate of ["claimed", "drained", "logged", "discarded", "withdrawn"] as const) {
        yield* roundTrip(Store.InboxRecord, { ...settled, fate })
      }
    }))

  it.effect("an unknown version, a fork without its seq and an unknown fate are refused", () =>
    Effect.gen(function*() {
      expect(yield* decodeError(Store.SessionHeader, { ...header, version: 2 })).toContain("[\"version\"]")
      expect(yield* decodeError(Store.SessionHeader, { ...header, parent: { id: "p" } })).toContain("[\"seq\"]")
      expect(yield* decodeError(Store.InboxRecord, { ...settled, fate: "lost" })).toContain("[\"fate\"]")
      expect(yield* decodeError(Store.InboxRecord, { ...accepted, message: { ...agentMessage, id: "" } })).toContain(
        "[\"id\"]"
      )
    }))

  it.effect("no store schema nor SessionEvent has a transformation, so the type form is the encoded form", () =>
    Effect.sync(() => {
      for (const schema of [Store.SessionHeader, Store.SessionSummary, Store.InboxRecord, SessionEvent.SessionEvent]) {
        assert.deepStrictEqual(transformations(schema.ast), [], String(schema.ast))
      }
    }))

  it.effect("inbox record types never collide with an event's", () =>
    Effect.sync(() => {
      for (const [, event] of sessionEvents) {
        assert.isFalse(Store.isInboxRecord(event), event.type)
        assert.isFalse(event.type.startsWith("inbox/"))
      }
      assert.isTrue(Store.isInboxRecord(accepted))
      assert.isTrue(Store.isInboxRecord(settled))
      const decode = Schema.decodeUnknownSync(Schema.Union(SessionEvent.SessionEvent, Store.InboxRecord))
      assert.deepStrictEqual(decode(JSON.parse(JSON.stringify(settled))), settled)
    }))
})

describe("Store.messageIdOf", () => {
  it("is the accepted message's id, a user/message's or steering/message's messageId, else nothing", () => {
    const found = sessionEvents.flatMap(([, event]) => {
      const id = Store.messageIdOf(event)
      return id === undefined ? [] : [[event.type, id] as const]
    })
    for (const [type, id] of found) {
      assert.include(["user/message", "steering/message"], type)
      assert.isString(id)
    }
    assert.isTrue(found.some(([type]) => type === "steering/message"))
    assert.strictEqual(Store.messageIdOf(accepted), agentMessage.id)
    assert.strictEqual(Store.messageIdOf(settled), undefined)
    const userWithout = sessionEvents.find(([, e]) => e.type === "user/message" && e.data.messageId === undefined)
    assert.isDefined(userWithout)
    assert.strictEqual(Store.messageIdOf(userWithout![1]), undefined)
    assert.strictEqual(AgentMessageId.make("x"), "x")
  })
})

describe("Store.promptPreviewOf", () => {
  const user = (texts: ReadonlyArray<string>, kind: "user" | "plugin" = "user"): SessionEvent.SessionEvent => ({
    seq: 0,
    time: 0,
    type: "user/message",
    data: {
      content: [{ type: "text", text: texts[0]! }, ...texts.slice(1).map((text) => ({ type: "text" as const, text }))],
      source: kind === "user" ? { kind: "user" } : { kind: "plugin", plugin: "p" }
    }
  })

  it("joins the text of a human prompt", () => {
    assert.strictEqual(Store.promptPreviewOf(user(["Hello, ", "world"])), "Hello, world")
  })

  it("is nothing for a plugin's message, an inbox record or any other event", () => {
    assert.strictEqual(Store.promptPreviewOf(user(["ctx"], "plugin")), undefined)
    assert.strictEqual(Store.promptPreviewOf(accepted), undefined)
    for (const [, event] of sessionEvents.filter(([, e]) => e.type !== "user/message")) {
      assert.strictEqual(Store.promptPreviewOf(event), undefined)
    }
  })

  it("cuts at 200 code points and never splits a surrogate pair", () => {
    assert.strictEqual(Store.promptPreviewOf(user(["x".repeat(500)])), "x".repeat(200))
    const emoji = "😀".repeat(250)
    const preview = Store.promptPreviewOf(user([emoji]))!
    assert.strictEqual(preview, "😀".repeat(200))
    const mixed = "a" + "😀".repeat(199) + "b"
    assert.strictEqual(Store.promptPreviewOf(user([mixed, "tail"]))!, "a" + "😀".repeat(199))
    assert.strictEqual(Store.promptPreviewOf(user(["y".repeat(200)])), "y".repeat(200))
  })
})
