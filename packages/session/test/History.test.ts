import { Prompt } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { MessageSource, type SessionEvent } from "@harness/domain"
import {
  abortedTurn,
  block,
  ev,
  goodLogs,
  maxTokensTurn,
  promptTurn,
  provenance,
  rawArgumentsTurn,
  stamp,
  steeringTurn,
  toolTurn
} from "@harness/testkit/Events"
import { Effect, Schema } from "effect"
import * as History from "../src/History.js"
import * as SessionLog from "../src/SessionLog.js"
import { appendAll, assertConsistent } from "./fixtures.js"

// Expected messages, built with the same `Prompt` constructors a provider would use.
const user = (...texts: ReadonlyArray<string>) =>
  Prompt.userMessage({ content: texts.map((text) => Prompt.makePart("text", { text })) })
const text = (t: string) => Prompt.makePart("text", { text: t })
const reasoning = (t: string) => Prompt.makePart("reasoning", { text: t })
const call = (id: string, name: string, raw: string, params: unknown) =>
  Prompt.makePart("tool-call", {
    id,
    name,
    params,
    providerExecuted: false,
    options: { [History.optionsKey]: { rawArguments: raw } }
  })
const assistant = (...content: ReadonlyArray<Prompt.AssistantMessagePart>) =>
  Prompt.assistantMessage({ content, options: { [History.optionsKey]: { provenance } } })
const result = (id: string, name: string, output: string, isFailure = false) =>
  Prompt.toolMessage({
    content: [Prompt.toolResultPart({ id, name, isFailure, result: output, providerExecuted: false })]
  })

const derive = (inputs: ReadonlyArray<SessionEvent.SessionEventInput>) => History.deriveMessages(stamp(inputs))

describe("History.deriveMessages (R102–R103)", () => {
  it.effect("a prompt turn: the user's prompt, then the assistant's answer; nothing else is shown", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(derive(promptTurn(1, "Hi", "Hello!")), [user("Hi"), assistant(text("Hello!"))])
    }))

  it.effect("tool calls pair with their results, each result right after the calls, in model order", () =>
    Effect.sync(() => {
      const messages = derive(toolTurn(1, "Weather?", [
        { id: "c1", name: "weather", args: "{\"city\":\"Paris\"}", result: "sunny" },
        { id: "c2", name: "weather", args: "{\"city\":\"Oslo\"}", result: "no such city", isError: true }
      ], "Paris is sunny."))
      assert.deepStrictEqual(messages, [
        user("Weather?"),
        assistant(
          reasoning("I need tools."),
          call("c1", "weather", "{\"city\":\"Paris\"}", { city: "Paris" }),
          call("c2", "weather", "{\"city\":\"Oslo\"}", { city: "Oslo" })
        ),
        result("c1", "weather", "sunny"),
        result("c2", "weather", "no such city", true),
        assistant(text("Paris is sunny."))
      ])
    }))

  it.effect("steering and injected context are user messages in log order, verbatim and never merged", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(derive(steeringTurn(1)), [
        user("Context: the repo is a monorepo."),
        user("Fix the build."),
        assistant(text("Running the build."), call("build-1", "sh", "{\"cmd\":\"make\"}", { cmd: "make" })),
        result("build-1", "sh", "error: x", true),
        // context injected inside the step comes after the results (tool-call/result adjacency holds)
        user("Context: make failed at 12:00."),
        // steering drained before step 2
        user("Use npm, not make."),
        assistant(text("Switching to npm."))
      ])
    }))

  it.effect("a user message with several text blocks keeps them as separate parts, without framing", () =>
    Effect.sync(() => {
      const message: SessionEvent.SessionEventInput = {
        type: "user/message",
        data: { content: [block.text("one"), block.text(" two")], source: MessageSource.plugin("") }
      }
      assert.deepStrictEqual(derive([message]), [user("one", " two")])
    }))

  it.effect("reasoning is kept, in content order with text and calls", () =>
    Effect.sync(() => {
      const messages = derive([
        ev.turnStart(1),
        ev.stepStart(1, 1),
        ev.assistant(1, 1, [
          block.reasoning("a"),
          block.text("b"),
          block.reasoning("c"),
          block.toolCall("x", "t", "{}")
        ]),
        ev.toolCall(1, 1, "x", "t"),
        ev.toolResult(1, 1, "x", "t", "ok"),
        ev.stepEnd(1, 1),
        ev.turnEnd(1)
      ])
      assert.deepStrictEqual(messages, [
        assistant(reasoning("a"), text("b"), reasoning("c"), call("x", "t", "{}", {})),
        result("x", "t", "ok")
      ])
    }))

  it.effect("an aborted turn stays well-formed: every call has its (synthetic) result, then the next prompt", () =>
    Effect.sync(() => {
      const messages = derive([...abortedTurn(1), ...promptTurn(2, "Again", "Done.")])
      assert.deepStrictEqual(messages, [
        user("List and read the files."),
        assistant(
          call("ls-1", "ls", "{\"path\":\".\"}", { path: "." }),
          call("read-1", "read", "{\"path\":\"a.txt\"}", { path: "a.txt" }),
          call("read2-1", "read", "{\"path\":\"b.txt\"}", { path: "b.txt" })
        ),
        result("ls-1", "ls", "a.txt\nb.txt"),
        result("read-1", "read", "tool call aborted", true),
        result("read2-1", "read", "Error: tool call aborted before dispatch", true),
        user("Again"),
        assistant(text("Done."))
      ])
    }))

  it.effect("a max-tokens turn shows the truncated answer (its removed calls never appear)", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(derive(maxTokensTurn(1)), [
        user("Write a long essay."),
        assistant(reasoning("Long…"), text("Once upon"))
      ])
    }))

  it.effect("invalid JSON arguments are kept raw; empty arguments are {}; an empty assistant message is skipped", () =>
    Effect.sync(() => {
      const messages = derive(rawArgumentsTurn(1))
      assert.deepStrictEqual(messages, [
        user("Search."),
        assistant(call("bad-1", "search", "{\"q\": \"x\"", "{\"q\": \"x\""), call("none-1", "now", "", {})),
        result("bad-1", "search", "invalid arguments", true),
        result("none-1", "now", "12:00")
      ])
    }))

  it.effect("the raw argument text travels byte for byte, even when it parses", () =>
    Effect.sync(() => {
      const raw = "{ \"b\" : 2,\n  \"a\": [1, 2.50] }"
      const [message] = derive([
        ev.turnStart(1),
        ev.stepStart(1, 1),
        ev.assistant(1, 1, [block.toolCall("x", "t", raw)])
      ])
      assert(message?.role === "assistant")
      const part = message.content[0]
      assert(part?.type === "tool-call")
      assert.deepStrictEqual(part.params, { b: 2, a: [1, 2.5] })
      assert.strictEqual(part.options[History.optionsKey]?.["rawArguments"], raw)
    }))

  it.effect("tool results join their text blocks", () =>
    Effect.sync(() => {
      const res: SessionEvent.SessionEventInput = {
        ...ev.toolResult(1, 1, "x", "t", ""),
        data: {
          ...ev.toolResult(1, 1, "x", "t", "").data,
          content: [block.text("a"), block.text("b\n"), block.text("c")]
        }
      }
      const messages = derive([ev.turnStart(1), ev.stepStart(1, 1), ev.toolCall(1, 1, "x", "t"), res])
      assert.deepStrictEqual(messages, [result("x", "t", "ab\nc")])
    }))

  it.effect("derived messages form a valid @effect/ai Prompt (they encode and decode back)", () =>
    Effect.sync(() => {
      for (const { inputs, name } of goodLogs) {
        const prompt = Prompt.fromMessages(derive(inputs))
        const encoded = Schema.encodeSync(Prompt.Prompt)(prompt)
        assert.deepStrictEqual(Schema.decodeSync(Prompt.Prompt)(encoded).content, prompt.content, name)
      }
    }))

  it.effect("derived messages and their parts are frozen", () =>
    Effect.sync(() => {
      for (
        const message of derive(toolTurn(1, "Q", [{ id: "c", name: "t", args: "{\"a\":{\"b\":1}}", result: "r" }], "A"))
      ) {
        assert(Object.isFrozen(message))
        assert(Object.isFrozen(message.content))
        for (const part of message.content) {
          assert(typeof part !== "string" && Object.isFrozen(part))
          if (part.type === "tool-call") {
            const params = part.params
            assert(typeof params === "object" && params !== null && "a" in params)
            assert(Object.isFrozen(params.a))
          }
        }
      }
    }))
})

describe("History.fold", () => {
  it.effect("events the model never sees return the same history (structural sharing)", () =>
    Effect.sync(() => {
      const events = stamp(promptTurn(1, "Hi", "Hello"))
      let history = History.empty
      for (const event of events) {
        const next = History.fold(history, event)
        const visible = event.type === "user/message" || event.type === "assistant/message"
        assert.strictEqual(next === history, !visible, event.type)
        history = next
      }
    }))

  it.effect("folding never changes the history it folds into", () =>
    Effect.sync(() => {
      const events = stamp(toolTurn(1, "Q", [{ id: "c", name: "t", args: "{}", result: "r" }], "A"))
      const histories = [History.empty]
      for (const event of events) histories.push(History.fold(histories.at(-1)!, event))
      const before = histories.map((h) => [...History.messages(h)])
      // fold more onto an early history: a branch that must not disturb the others
      History.fold(histories[3]!, stamp([ev.user("branch")], { start: 3 })[0]!)
      assert.deepStrictEqual(histories.map((h) => [...History.messages(h)]), before)
      assert.deepStrictEqual(histories.map((h) => h.length), before.map((m) => m.length))
    }))

  it.effect("the incremental fold equals the whole-log fold on every prefix of every catalogue log", () =>
    Effect.sync(() => {
      for (const { inputs, name } of goodLogs) {
        const events = stamp(inputs)
        let history = History.empty
        for (let i = 0; i < events.length; i++) {
          history = History.fold(history, events[i]!)
          assert.deepStrictEqual(
            History.messages(history),
            History.deriveMessages(events.slice(0, i + 1)),
            `${name} @${i}`
          )
        }
      }
    }))

  it.effect("a live log keeps its history equal to the whole-log derivation after every append", () =>
    Effect.gen(function*() {
      for (const { inputs } of goodLogs) {
        const log = yield* SessionLog.memory()
        for (const input of inputs) {
          yield* appendAll(log, [input])
          yield* assertConsistent(log)
        }
      }
    }))

  it.effect("messages gives each caller an array of its own; histories that branch never see each other's", () =>
    Effect.sync(() => {
      const events = stamp(Array.from({ length: 50 }, (_, i) => promptTurn(i + 1, "p", "a")).flat())
      const history = events.reduce(History.fold, History.empty)
      const first = History.messages(history)
      const second = History.messages(history)
      assert.notStrictEqual(first, second)
      assert.deepStrictEqual(first, second)
      assert.strictEqual(first.length, 100)
      // A later fold does not grow an array handed out before it.
      const [more] = stamp([...events, ...promptTurn(51, "q", "b")]).slice(events.length)
      const later = History.fold(history, more!)
      assert.strictEqual(first.length, 100)
      assert.strictEqual(History.messages(later).length, 101)
      // A fold onto the older history (a branch) sees neither the other branch's message nor changes it.
      const [other] = stamp([...events, ...promptTurn(51, "r", "c")]).slice(events.length)
      const branch = History.fold(history, other!)
      const texts = (h: History.History) =>
        History.messages(h).slice(100).map((m) => (m.content as ReadonlyArray<{ readonly text: string }>)[0]!.text)
      assert.deepStrictEqual(texts(later), ["q"])
      assert.deepStrictEqual(texts(branch), ["r"])
      assert.strictEqual(History.messages(history).length, 100)
    }))
})

describe("History's message construction (ADR 0027)", () => {
  /** The messages as `Prompt`'s own constructors build them: what the fold's object literals must equal. */
  const reference = (event: SessionEvent.SessionEvent): Prompt.Message | undefined => {
    const parts = (content: ReadonlyArray<{ readonly text: string }>) =>
      content.map((b) => Prompt.makePart("text", { text: b.text }))
    switch (event.type) {
      case "user/message":
      case "steering/message":
        return Prompt.userMessage({ content: parts(event.data.content) })
      case "assistant/message":
        return event.data.content.length === 0 ? undefined : Prompt.assistantMessage({
          content: event.data.content.map((b) =>
            b.type === "tool-call"
              ? call(b.id, b.name, b.arguments, paramsOf(b.arguments))
              : b.type === "reasoning"
              ? reasoning(b.text)
              : text(b.text)
          ),
          options: { [History.optionsKey]: { provenance: event.data.provenance } }
        })
      case "tool/result":
        return result(
          event.data.callId,
          event.data.name,
          event.data.content.flatMap((b) => b.type === "text" ? [b.text] : []).join(""),
          event.data.isError
        )
      default:
        return undefined
    }
  }
  const paramsOf = (raw: string): unknown => {
    if (raw.trim() === "") return {}
    try {
      return JSON.parse(raw)
    } catch {
      return raw
    }
  }
  /** Own keys (strings and symbols) in order, recursively: what `deepStrictEqual` does not compare. */
  const shape = (value: unknown): unknown =>
    typeof value !== "object" || value === null
      ? typeof value
      : Reflect.ownKeys(value).map((key) => [String(key), shape((value as Record<PropertyKey, unknown>)[key])])

  it.effect("every message equals Prompt's constructors' (same keys in the same order, same values), frozen", () =>
    Effect.sync(() => {
      let seen = 0
      for (const { inputs } of goodLogs) {
        for (const event of stamp(inputs)) {
          const expected = reference(event)
          const [actual] = History.deriveMessages([event])
          if (expected === undefined) {
            assert.isUndefined(actual, event.type)
            continue
          }
          seen++
          assert.deepStrictEqual(actual, expected, event.type)
          assert.deepStrictEqual(shape(actual), shape(expected), event.type)
          assert.isTrue(Object.isFrozen(actual) && Object.isFrozen(actual!.content), event.type)
          for (const part of actual!.content as ReadonlyArray<object>) assert.isTrue(Object.isFrozen(part), event.type)
        }
      }
      assert.isAbove(seen, 20)
    }))
})
