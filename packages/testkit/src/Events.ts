/**
 * Builders for session logs in tests: one constructor per durable event type (`ev`), content blocks and ids,
 * scenario builders for whole turns (`promptTurn`, `toolTurn`, …), a catalogue of good logs (`goodLogs`), and
 * `stamp`, which numbers inputs as a log would without one. Pure data: no services, no assertions, so tests of
 * every package (and benchmarks) can build the logs they need.
 *
 * @since 0.0.0
 */
import type { Content, SessionEvent, Turn } from "@harness/domain"
import { Ids, MessageSource } from "@harness/domain"

type In<T extends SessionEvent.SessionEventType> = SessionEvent.SessionEventInputOf<T>

/**
 * A tool-call id.
 *
 * @since 0.0.0
 * @category constructors
 */
export const callId = (id: string): Ids.ToolCallId => Ids.ToolCallId.make(id)
/**
 * An accepted-message id.
 *
 * @since 0.0.0
 * @category constructors
 */
export const messageId = (id: string): Ids.AgentMessageId => Ids.AgentMessageId.make(id)
/**
 * A session id.
 *
 * @since 0.0.0
 * @category constructors
 */
export const sessionId = (id: string): Ids.SessionId => Ids.SessionId.make(id)

/**
 * Content blocks.
 *
 * @since 0.0.0
 * @category constructors
 */
export const block = {
  text: (text: string): Content.TextBlock => ({ type: "text", text }),
  reasoning: (text: string): Content.ReasoningBlock => ({ type: "reasoning", text }),
  toolCall: (id: string, name: string, args: string): Content.ToolCallBlock => ({
    type: "tool-call",
    id: callId(id),
    name,
    arguments: args
  })
}

/**
 * The model route every fixture assistant message names.
 *
 * @since 0.0.0
 * @category constructors
 */
export const provenance = { model: "test-model", provider: "test" } as const

/**
 * One constructor per event type (inputs: the log adds `seq` and `time`).
 *
 * @since 0.0.0
 * @category constructors
 */
export const ev = {
  turnStart: (
    turn: number,
    trigger: Turn.TurnTrigger = { kind: "message", source: MessageSource.user }
  ): In<"turn/start"> => ({
    type: "turn/start",
    data: { turn, trigger }
  }),
  turnEnd: (turn: number, reason: Turn.TurnEndReason = { kind: "completed" }): In<"turn/end"> => ({
    type: "turn/end",
    data: { turn, reason }
  }),
  stepStart: (turn: number, step: number): In<"step/start"> => ({ type: "step/start", data: { turn, step } }),
  stepEnd: (turn: number, step: number): In<"step/end"> => ({ type: "step/end", data: { turn, step } }),
  user: (text: string, source: MessageSource.MessageSource = MessageSource.user, id?: string): In<"user/message"> => ({
    type: "user/message",
    data: id === undefined
      ? { content: [block.text(text)], source }
      : { messageId: messageId(id), content: [block.text(text)], source }
  }),
  steering: (turn: number, text: string, id = `steer-${turn}`): In<"steering/message"> => ({
    type: "steering/message",
    data: { turn, messageId: messageId(id), content: [block.text(text)], source: MessageSource.user }
  }),
  chunk: (turn: number, step: number, chunk: SessionEvent.SessionEventOf<"assistant/chunk">["data"]["chunk"]): In<
    "assistant/chunk"
  > => ({ type: "assistant/chunk", data: { turn, step, chunk } }),
  assistant: (
    turn: number,
    step: number,
    content: ReadonlyArray<Content.AssistantBlock>,
    finishReason?: string
  ): In<"assistant/message"> => ({
    type: "assistant/message",
    data: finishReason === undefined
      ? { turn, step, content, provenance }
      : { turn, step, content, provenance, finishReason }
  }),
  toolCall: (turn: number, step: number, id: string, name: string, args = "{}"): In<"tool/call"> => ({
    type: "tool/call",
    data: { turn, step, callId: callId(id), name, arguments: args }
  }),
  toolResult: (
    turn: number,
    step: number,
    id: string,
    name: string,
    text: string,
    options: { readonly isError?: boolean; readonly code?: string } = {}
  ): In<"tool/result"> => ({
    type: "tool/result",
    data: {
      turn,
      step,
      callId: callId(id),
      name,
      content: [block.text(text)],
      isError: options.isError ?? options.code !== undefined,
      ...(options.code === undefined ? {} : { error: { name, code: options.code } })
    }
  }),
  header: (model = "test-model", reason: "initial" | "resume" | "change" = "initial"): In<"request/header"> => ({
    type: "request/header",
    data: { header: { config: { model }, system: "You are a test." }, reason }
  })
}

/**
 * A tool call of a scenario: what the model asked and what the tool answered.
 *
 * @since 0.0.0
 * @category models
 */
export interface ToolCallSpec {
  readonly id: string
  readonly name: string
  readonly args: string
  readonly result: string
  readonly isError?: boolean
}

/**
 * A whole prompted turn without tools: prompt, header, one step with a chunk and the answer.
 *
 * @since 0.0.0
 * @category constructors
 */
export const promptTurn = (
  turn: number,
  prompt: string,
  answer: string
): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user(prompt, MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.header(),
  ev.stepStart(turn, 1),
  ev.chunk(turn, 1, { type: "text-delta", delta: answer }),
  ev.assistant(turn, 1, [block.text(answer)], "stop"),
  ev.stepEnd(turn, 1),
  ev.turnEnd(turn)
]

/**
 * A turn whose first step calls tools (logged and answered in order) and whose second step answers.
 *
 * @since 0.0.0
 * @category constructors
 */
export const toolTurn = (
  turn: number,
  prompt: string,
  calls: ReadonlyArray<ToolCallSpec>,
  answer: string
): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user(prompt, MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.stepStart(turn, 1),
  ev.assistant(
    turn,
    1,
    [block.reasoning("I need tools."), ...calls.map((c) => block.toolCall(c.id, c.name, c.args))],
    "tool-calls"
  ),
  ...calls.flatMap((c) => [
    ev.toolCall(turn, 1, c.id, c.name, c.args),
    ev.toolResult(turn, 1, c.id, c.name, c.result, { isError: c.isError ?? false })
  ]),
  ev.stepEnd(turn, 1),
  ev.stepStart(turn, 2),
  ev.assistant(turn, 2, [block.text(answer)], "stop"),
  ev.stepEnd(turn, 2),
  ev.turnEnd(turn)
]

/**
 * A turn cancelled while its tools ran (R72): the first call finished, the second was running and is answered
 * `ABORTED`, the third never started and gets the synthetic pair (`tool/call` then `ABORTED_BEFORE_DISPATCH`);
 * then `step/end` and `turn/end { aborted }`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const abortedTurn = (turn: number): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user("List and read the files.", MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.stepStart(turn, 1),
  ev.assistant(turn, 1, [
    block.toolCall(`ls-${turn}`, "ls", "{\"path\":\".\"}"),
    block.toolCall(`read-${turn}`, "read", "{\"path\":\"a.txt\"}"),
    block.toolCall(`read2-${turn}`, "read", "{\"path\":\"b.txt\"}")
  ]),
  ev.toolCall(turn, 1, `ls-${turn}`, "ls", "{\"path\":\".\"}"),
  ev.toolCall(turn, 1, `read-${turn}`, "read", "{\"path\":\"a.txt\"}"),
  ev.toolResult(turn, 1, `ls-${turn}`, "ls", "a.txt\nb.txt"),
  ev.toolResult(turn, 1, `read-${turn}`, "read", "tool call aborted", { code: "ABORTED" }),
  ev.toolCall(turn, 1, `read2-${turn}`, "read", "{\"path\":\"b.txt\"}"),
  ev.toolResult(turn, 1, `read2-${turn}`, "read", "Error: tool call aborted before dispatch", {
    code: "ABORTED_BEFORE_DISPATCH"
  }),
  ev.stepEnd(turn, 1),
  ev.turnEnd(turn, { kind: "aborted" })
]

/**
 * A turn that ran out of output tokens: the truncated tool call was removed from the message.
 *
 * @since 0.0.0
 * @category constructors
 */
export const maxTokensTurn = (turn: number): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user("Write a long essay.", MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.stepStart(turn, 1),
  ev.chunk(turn, 1, { type: "reasoning-delta", delta: "Long…" }),
  ev.chunk(turn, 1, { type: "text-delta", delta: "Once upon" }),
  ev.assistant(turn, 1, [block.reasoning("Long…"), block.text("Once upon")], "length"),
  ev.stepEnd(turn, 1),
  ev.turnEnd(turn, { kind: "max-tokens" })
]

/**
 * A turn with steering and injected context: context injected while idle (outside any turn), steering drained
 * before the second step, and context injected inside a step after its tool result (D2).
 *
 * @since 0.0.0
 * @category constructors
 */
export const steeringTurn = (turn: number): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user("Context: the repo is a monorepo.", MessageSource.plugin("workspace")),
  ev.user("Fix the build.", MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.stepStart(turn, 1),
  ev.assistant(turn, 1, [
    block.text("Running the build."),
    block.toolCall(`build-${turn}`, "sh", "{\"cmd\":\"make\"}")
  ]),
  ev.toolCall(turn, 1, `build-${turn}`, "sh", "{\"cmd\":\"make\"}"),
  ev.toolResult(turn, 1, `build-${turn}`, "sh", "error: x", { isError: true }),
  ev.user("Context: make failed at 12:00.", MessageSource.plugin("monitor")),
  ev.stepEnd(turn, 1),
  ev.steering(turn, "Use npm, not make."),
  ev.stepStart(turn, 2),
  ev.assistant(turn, 2, [block.text("Switching to npm.")]),
  ev.stepEnd(turn, 2),
  ev.turnEnd(turn)
]

/**
 * A turn whose tool call arguments are not valid JSON (kept raw), and one with empty arguments.
 *
 * @since 0.0.0
 * @category constructors
 */
export const rawArgumentsTurn = (turn: number): ReadonlyArray<SessionEvent.SessionEventInput> => [
  ev.user("Search.", MessageSource.user, `prompt-${turn}`),
  ev.turnStart(turn),
  ev.stepStart(turn, 1),
  ev.assistant(turn, 1, [
    block.toolCall(`bad-${turn}`, "search", "{\"q\": \"x\""),
    block.toolCall(`none-${turn}`, "now", "")
  ]),
  ev.toolCall(turn, 1, `bad-${turn}`, "search", "{\"q\": \"x\""),
  ev.toolResult(turn, 1, `bad-${turn}`, "search", "invalid arguments", { code: "INVALID_ARGUMENTS" }),
  ev.toolCall(turn, 1, `none-${turn}`, "now", ""),
  ev.toolResult(turn, 1, `none-${turn}`, "now", "12:00"),
  ev.stepEnd(turn, 1),
  ev.stepStart(turn, 2),
  ev.assistant(turn, 2, []),
  ev.stepEnd(turn, 2),
  ev.turnEnd(turn)
]

/**
 * Every good log of the catalogue, by name: each is balanced and passes `checkLog`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const goodLogs: ReadonlyArray<
  { readonly name: string; readonly inputs: ReadonlyArray<SessionEvent.SessionEventInput> }
> = [
  { name: "empty", inputs: [] },
  { name: "idle injections only", inputs: [ev.user("a", MessageSource.plugin("p")), ev.user("b")] },
  { name: "one prompt turn", inputs: promptTurn(1, "Hi", "Hello!") },
  {
    name: "tool turn",
    inputs: toolTurn(1, "Weather?", [
      { id: "c1", name: "weather", args: "{\"city\":\"Paris\"}", result: "sunny" },
      { id: "c2", name: "weather", args: "{\"city\":\"Oslo\"}", result: "no such city", isError: true }
    ], "Paris is sunny.")
  },
  { name: "aborted turn", inputs: abortedTurn(1) },
  { name: "max-tokens turn", inputs: maxTokensTurn(1) },
  { name: "steering turn", inputs: steeringTurn(1) },
  { name: "raw arguments turn", inputs: rawArgumentsTurn(1) },
  {
    name: "five mixed turns",
    inputs: [
      ...promptTurn(1, "Hi", "Hello!"),
      ...toolTurn(2, "Weather?", [{ id: "w", name: "weather", args: "{}", result: "sunny" }], "Sunny."),
      ...abortedTurn(3),
      ...maxTokensTurn(4),
      ...steeringTurn(5),
      ev.user("Idle context after the last turn.", MessageSource.plugin("p"))
    ]
  }
]

/**
 * Numbers and stamps inputs as a log would (seq from `start`, time `time`), without a `SessionLog`.
 *
 * @since 0.0.0
 * @category constructors
 */
export const stamp = (
  inputs: ReadonlyArray<SessionEvent.SessionEventInput>,
  options: { readonly start?: number; readonly time?: number } = {}
): ReadonlyArray<SessionEvent.SessionEvent> => {
  const start = options.start ?? 0
  const time = options.time ?? 0
  // Adding `seq` and `time` to an input gives the event of the same type; TypeScript cannot follow the union.
  return inputs.map((input, i) => ({ ...input, seq: start + i, time }) as SessionEvent.SessionEvent)
}
