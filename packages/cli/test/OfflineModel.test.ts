/**
 * The offline model: deterministic replies from the conversation, acknowledgement of steering and injected
 * context, tool calls only when asked and advertised, and streaming paced on `Clock`.
 */
import { LanguageModel, Prompt, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Schema, Stream, TestClock } from "effect"
import * as OfflineModel from "../src/OfflineModel.js"

const tools = [
  Tool.make("list_dir", { parameters: { path: Schema.optional(Schema.String) }, success: Schema.String }),
  Tool.make("read_file", { parameters: { path: Schema.String }, success: Schema.String }),
  Tool.make("grep", { parameters: { pattern: Schema.String }, success: Schema.String })
]

const prompt = (...messages: ReadonlyArray<Prompt.Message>) => Prompt.fromMessages(messages)
const user = (text: string) => Prompt.userMessage({ content: [Prompt.textPart({ text })] })
const assistant = (text: string) => Prompt.assistantMessage({ content: [Prompt.textPart({ text })] })

const textOf = (pieces: ReadonlyArray<OfflineModel.Piece>) =>
  pieces.flatMap((p) => (p._tag === "text" ? [p.text] : [])).join("")

describe("OfflineModel.reply", () => {
  it("answers the newest request and acknowledges the context before it (steering and injection drained at the next step: R48, R56)", () => {
    const pieces = OfflineModel.reply({
      prompt: prompt(user("hello"), assistant("Hi."), user("The user is on a phone."), user("Keep it brief")),
      tools: []
    })
    const text = textOf(pieces)
    assert.include(text, "Noted: “The user is on a phone.”.")
    assert.include(text, "I will keep it brief")
    assert.notInclude(text, "hello")
  })

  it("calls an advertised tool when asked about files, and never an unadvertised one", () => {
    const read = OfflineModel.reply({ prompt: prompt(user("please read src/main.ts")), tools })
    assert.deepStrictEqual(read.at(-1), { _tag: "tool-call", name: "read_file", params: { path: "src/main.ts" } })
    const grep = OfflineModel.reply({ prompt: prompt(user("grep TODO")), tools })
    assert.deepStrictEqual(grep.at(-1), {
      _tag: "tool-call",
      name: "grep",
      params: { pattern: "TODO", maxMatches: 20 }
    })
    const list = OfflineModel.reply({ prompt: prompt(user("list the files in the workspace")), tools })
    assert.deepStrictEqual(list.at(-1), { _tag: "tool-call", name: "list_dir", params: {} })
    // Only the first "in …" names a place: "in order" later in the sentence is not a directory.
    const ordered = OfflineModel.reply({
      prompt: prompt(user("List the files in the workspace, then check they are in order.")),
      tools
    })
    assert.deepStrictEqual(ordered.at(-1), { _tag: "tool-call", name: "list_dir", params: {} })
    // An "in …" after the request's own clause is not a place either (the demo's goal says this).
    const goal = OfflineModel.reply({
      prompt: prompt(user("List the files, then confirm the workspace is in order.")),
      tools
    })
    assert.deepStrictEqual(goal.at(-1), { _tag: "tool-call", name: "list_dir", params: {} })
    const place = OfflineModel.reply({ prompt: prompt(user("which files are under src/cli?")), tools })
    assert.deepStrictEqual(place.at(-1), { _tag: "tool-call", name: "list_dir", params: { path: "src/cli" } })
    const none = OfflineModel.reply({ prompt: prompt(user("list the files")), tools: [] })
    assert.isFalse(none.some((p) => p._tag === "tool-call"))
  })

  it("summarises tool results without calling another tool, and is deterministic", () => {
    const messages = prompt(
      user("list the files"),
      Prompt.assistantMessage({
        content: [Prompt.toolCallPart({ id: "c1", name: "list_dir", params: {}, providerExecuted: false })]
      }),
      Prompt.toolMessage({
        content: [
          Prompt.toolResultPart({
            id: "c1",
            name: "list_dir",
            isFailure: false,
            result: "a.txt\nb/",
            providerExecuted: false
          })
        ]
      }),
      user("only the text files")
    )
    const first = OfflineModel.reply({ prompt: messages, tools })
    assert.deepStrictEqual(OfflineModel.reply({ prompt: messages, tools }), first)
    assert.isFalse(first.some((p) => p._tag === "tool-call"))
    assert.include(textOf(first), "Noted: “only the text files”.")
    assert.include(textOf(first), "list_dir returned 2 lines:\n  a.txt\n  b/")
  })
})

describe("OfflineModel.reply after a concluding tool", () => {
  it("a request after update_goal (which ends its turn unanswered) is answered, not the goal tool's result", () => {
    const write = Tool.make("write_file", {
      parameters: { path: Schema.String, content: Schema.String },
      success: Schema.String
    })
    const pieces = OfflineModel.reply({
      prompt: prompt(
        user("<goal_round>\nObjective: \"list the files\"\nRound: 2/5\n</goal_round>"),
        Prompt.assistantMessage({
          content: [Prompt.toolCallPart({
            id: "c1",
            name: "update_goal",
            params: { action: "complete" },
            providerExecuted: false
          })]
        }),
        Prompt.toolMessage({
          content: [Prompt.toolResultPart({
            id: "c1",
            name: "update_goal",
            isFailure: false,
            result: "goal g1 complete",
            providerExecuted: false
          })]
        }),
        user("write a.txt: one")
      ),
      tools: [...tools, write]
    })
    assert.deepStrictEqual(pieces.at(-1), {
      _tag: "tool-call",
      name: "write_file",
      params: { path: "a.txt", content: "one\n" }
    })
  })
})

describe("OfflineModel.make", () => {
  it.effect("streams word by word at its pace on Clock, then finishes with usage", () =>
    Effect.gen(function*() {
      const model = yield* OfflineModel.make({ pace: "100 millis" })
      const fiber = yield* model.streamText({ prompt: prompt(user("hello")) }).pipe(
        Stream.runCollect,
        Effect.fork
      )
      yield* TestClock.adjust("1 second")
      assert.isNull(fiber.unsafePoll(), "ten words in, the answer is still streaming")
      yield* TestClock.adjust("1 minute")
      const parts = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      assert.match(text, /^ ?Hello! I am Harness's offline model/)
      const finish = parts.at(-1)
      assert.strictEqual(finish?.type, "finish")
      assert.isTrue(finish?.type === "finish" && finish.usage.outputTokens! > 10)
    }))

  it.effect("is a LanguageModel layer that generates whole text too", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({ prompt: "tell me a story" })
      assert.include(response.text, "Once upon a time")
    }).pipe(Effect.provide(OfflineModel.layer({ pace: 0 }))))
})
