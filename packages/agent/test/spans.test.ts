/**
 * The agent's spans (ADR 0024), exported through `@effect/opentelemetry` to an in-memory exporter: one trace per
 * turn, `Agent.turn` > `Agent.step` > `Agent.request` / `Agent.toolCall`, with the attributes a person debugging
 * would look for, and each span's status telling how its work ended (a cancelled turn's span ends with its outcome).
 */
import { Tool } from "@effect/ai"
import { NodeSdk } from "@effect/opentelemetry"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Ids, Message } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Deferred, Effect, Schema } from "effect"

const sid = Ids.SessionId.make("spans")

/** Runs `program` under an OpenTelemetry tracer exporting to memory; returns the spans it exported. */
const traced = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const exporter = new InMemorySpanExporter()
    const tracing = NodeSdk.layer(() => ({
      resource: { serviceName: "agent-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
    // Read before the layer closes: shutting the exporter down clears it.
    return Effect.map(program, (value) => ({ value, spans: exporter.getFinishedSpans() })).pipe(
      Effect.provide(tracing)
    )
  })

/** The span tree as indented lines (`name key=value…`), siblings in order of their labels. */
const tree = (
  spans: ReadonlyArray<ReadableSpan>,
  keys: ReadonlyArray<string> = [],
  omit: ReadonlyArray<string> = []
) => {
  const shown = spans.filter((span) => !omit.includes(span.name))
  const label = (span: ReadableSpan) =>
    [span.name, ...keys.flatMap((key) => key in span.attributes ? [`${key}=${String(span.attributes[key])}`] : [])]
      .join(" ")
  const lines: Array<string> = []
  const visit = (parent: string | undefined, depth: number) =>
    shown
      .filter((span) => span.parentSpanContext?.spanId === parent)
      .sort((a, b) => label(a).localeCompare(label(b)))
      .forEach((span) => {
        lines.push(`${"  ".repeat(depth)}${label(span)}`)
        visit(span.spanContext().spanId, depth + 1)
      })
  visit(undefined, 0)
  return lines
}

const one = (spans: ReadonlyArray<ReadableSpan>, name: string, match: (span: ReadableSpan) => boolean = () => true) => {
  const found = spans.filter((span) => span.name === name && match(span))
  assert.strictEqual(found.length, 1, `expected one ${name}, found ${found.length}`)
  return found[0]!
}

/** A memory store that behaves as a durable one: write-behind, not volatile (so the agent places its barriers). */
const durableLog = Effect.flatMap(
  SessionStore.makeMemory,
  (memory) =>
    SessionLog.make({ id: sid }).pipe(
      Effect.provideService(SessionStore.SessionStore, { ...memory, commitMode: "write-behind", volatile: false })
    )
)

const lookup = AgentTool.make(
  Tool.make("lookup", {
    description: "looks a word up",
    parameters: { word: Schema.String },
    success: Schema.String,
    failure: Schema.Struct({ message: Schema.String })
  }),
  {
    handler: ({ word }) =>
      word === "missing"
        ? Effect.fail({ message: `no entry for ${word}` })
        : Effect.succeed(`${word}: a word`).pipe(Effect.withSpan("lookup.work")),
    parallel: true
  }
)

const OK = 1
const ERROR = 2

describe("agent spans", () => {
  it.scoped("a turn with a tool call over a durable log: turn > step > request / tool call, with its attributes", () =>
    Effect.gen(function*() {
      const { spans, value: events } = yield* traced(
        Effect.gen(function*() {
          const model = yield* S.ScriptedModel
          yield* model.push(
            {
              ...S.toolCallResponse(S.toolCall("lookup", { word: "span" }, { id: "c1" })),
              usage: { inputTokens: 12, outputTokens: 3 }
            },
            { ...S.textResponse("done"), usage: { inputTokens: 20, outputTokens: 1 } }
          )
          // Made and driven inside the caller's span: the turn is still a trace of its own.
          return yield* Effect.scoped(Effect.gen(function*() {
            const agent = yield* Agent.make({
              model: "m1",
              provider: "p1",
              session: yield* durableLog,
              tools: [lookup]
            })
            yield* agent.followup(Message.make("look it up"), { id: Ids.AgentMessageId.make("prompt-1") })
            yield* agent.whenIdle
            return (yield* agent.log).length
          })).pipe(Effect.withSpan("app"))
        }).pipe(Effect.provide(S.layer()))
      )
      // Barriers (`SessionLog.flush`) nest under what waits for them: the acceptance and the disposal under the
      // caller, the dispatch of the tool call under its step, the `turn/end` under the turn. The tool's own span
      // nests under its call.
      assert.deepStrictEqual(tree(spans, ["harness.step"], ["SessionLog.commit"]), [
        "Agent.turn",
        "  Agent.step harness.step=1",
        "    Agent.request harness.step=1",
        "      LanguageModel.streamText",
        "    Agent.toolCall harness.step=1",
        "      lookup.work",
        "    SessionLog.flush",
        "  Agent.step harness.step=2",
        "    Agent.request harness.step=2",
        "      LanguageModel.streamText",
        "  SessionLog.flush",
        "app",
        "  SessionLog.flush",
        "  SessionLog.flush",
        "  SessionLog.make"
      ])
      const all = spans
      assert.deepStrictEqual(one(all, "Agent.turn").attributes, {
        "harness.session.id": sid,
        "harness.turn.trigger": "message",
        "harness.message.id": "prompt-1",
        "harness.turn": 1,
        "harness.turn.outcome": "completed",
        "harness.turn.steps": 2
      })
      const step = (n: number) => one(all, "Agent.step", (span) => span.attributes["harness.step"] === n)
      assert.deepStrictEqual(step(1).attributes, {
        "harness.session.id": sid,
        "harness.turn": 1,
        "harness.step": 1,
        "harness.step.outcome": "continue"
      })
      assert.strictEqual(step(2).attributes["harness.step.outcome"], "stop")
      const request = (n: number) => one(all, "Agent.request", (span) => span.attributes["harness.step"] === n)
      assert.deepStrictEqual(request(1).attributes, {
        "harness.session.id": sid,
        "harness.turn": 1,
        "harness.step": 1,
        "gen_ai.request.model": "m1",
        "gen_ai.provider.name": "p1",
        "harness.request.finish_reason": "tool-calls",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3
      })
      assert.strictEqual(request(2).attributes["gen_ai.usage.input_tokens"], 20)
      assert.strictEqual(request(2).attributes["harness.request.finish_reason"], "stop")
      assert.deepStrictEqual(one(all, "Agent.toolCall").attributes, {
        "harness.session.id": sid,
        "harness.turn": 1,
        "harness.step": 1,
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c1",
        "harness.tool.outcome": "ok"
      })
      assert.deepStrictEqual(
        one(
          all,
          "SessionLog.flush",
          (span) => span.parentSpanContext?.spanId === one(all, "Agent.turn").spanContext().spanId
        ).attributes,
        { "harness.session.id": sid, "harness.log.seq": events }
      )
      assert.isTrue(all.every((span) => span.status.code === OK), "every span ended OK")
      // Every event reached the store through a traced commit, each commit inside one of the two traces.
      const commits = all.filter((span) => span.name === "SessionLog.commit")
      assert.strictEqual(commits.reduce((n, span) => n + Number(span.attributes["harness.log.events"]), 0), events)
      const traces = new Set([one(all, "Agent.turn").spanContext().traceId, one(all, "app").spanContext().traceId])
      assert.isTrue(commits.every((span) => traces.has(span.spanContext().traceId)))
    }))

  it.scoped("a failing tool call and a failed model request end their spans, and the turn's, in error", () =>
    Effect.gen(function*() {
      const { spans } = yield* traced(
        Effect.gen(function*() {
          const model = yield* S.ScriptedModel
          yield* model.push(
            S.toolCallResponse(
              S.toolCall("lookup", { word: "missing" }, { id: "c1" }),
              S.toolCall("nope", {}, { id: "c2" })
            ),
            S.failure("SERVER", "the server is down")
          )
          const agent = yield* Agent.make({ model: "m", tools: [lookup] })
          yield* agent.followup(Message.make("look it up"))
          yield* agent.whenIdle
        }).pipe(Effect.provide(S.layer()))
      )
      const failed = one(spans, "Agent.toolCall", (span) => span.attributes["gen_ai.tool.call.id"] === "c1")
      assert.strictEqual(failed.status.code, ERROR)
      assert.strictEqual(failed.attributes["harness.tool.outcome"], "TOOL_FAILED")
      // A call that never ran (an unknown tool) still has its span, with the code of its error result.
      const unknown = one(spans, "Agent.toolCall", (span) => span.attributes["gen_ai.tool.call.id"] === "c2")
      assert.strictEqual(unknown.attributes["harness.tool.outcome"], "UNKNOWN_TOOL")
      assert.strictEqual(unknown.attributes["gen_ai.tool.name"], "nope")
      const request = one(spans, "Agent.request", (span) => span.attributes["harness.step"] === 2)
      assert.strictEqual(request.status.code, ERROR)
      assert.include(request.status.message, "the server is down")
      assert.strictEqual(
        one(spans, "Agent.step", (span) => span.attributes["harness.step"] === 2).attributes["harness.step.outcome"],
        "request-failed"
      )
      const turn = one(spans, "Agent.turn")
      assert.strictEqual(turn.attributes["harness.turn.outcome"], "request-error")
      assert.strictEqual(turn.status.code, ERROR)
      assert.strictEqual(turn.status.message, "SERVER: the server is down")
    }))

  it.scoped("a cancelled turn's span ends with its outcome (aborted, interrupted), as do its step, request and tool call", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const waiting = AgentTool.make(
        Tool.make("wait", { description: "waits for ever", success: Schema.String }),
        { handler: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) }
      )
      const { spans } = yield* traced(
        Effect.gen(function*() {
          const model = yield* S.ScriptedModel
          yield* model.push(S.hanging(S.text("partial")), S.toolCallResponse(S.toolCall("wait", {}, { id: "w1" })))
          const agent = yield* Agent.make({ model: "m", tools: [waiting] })
          const rec = yield* EventRecorder.make(agent)
          // Turn 1: cancelled while the model streams.
          yield* agent.followup(Message.make("one"))
          yield* rec.waitFor((event) => event.type === "session/event" && event.event.type === "assistant/chunk")
          yield* agent.cancel("user")
          yield* agent.whenIdle
          // Turn 2: cancelled while its tool runs.
          yield* agent.followup(Message.make("two"))
          yield* Deferred.await(started)
          yield* agent.cancel("user")
          yield* agent.whenIdle
        }).pipe(Effect.provide(S.layer()))
      )
      const turn = (n: number) => one(spans, "Agent.turn", (span) => span.attributes["harness.turn"] === n)
      for (const n of [1, 2]) {
        assert.strictEqual(turn(n).attributes["harness.turn.outcome"], "aborted")
        assert.strictEqual(turn(n).attributes["status.interrupted"], true)
      }
      const interrupted = (span: ReadableSpan) => span.attributes["status.interrupted"] === true
      assert.isTrue(interrupted(one(spans, "Agent.request", (span) => span.attributes["harness.turn"] === 1)))
      assert.isTrue(interrupted(one(spans, "Agent.step", (span) => span.attributes["harness.turn"] === 1)))
      const call = one(spans, "Agent.toolCall")
      assert.isTrue(interrupted(call))
      assert.strictEqual(
        call.parentSpanContext?.spanId,
        one(spans, "Agent.step", (span) => span.attributes["harness.turn"] === 2).spanContext().spanId
      )
    }))

  it.scoped("an admission that opens no turn ends its span with outcome no-turn", () =>
    Effect.gen(function*() {
      const { spans } = yield* traced(
        Effect.gen(function*() {
          const agent = yield* Agent.make({
            model: "m",
            hooks: { promptSubmit: () => Effect.succeed({ kind: "block", reason: "not today" } as const) }
          })
          yield* agent.followup(Message.make("blocked"), { id: Ids.AgentMessageId.make("b1") })
          yield* agent.whenIdle
        }).pipe(Effect.provide(S.layer()))
      )
      const turn = one(spans, "Agent.turn")
      assert.deepStrictEqual(turn.attributes, {
        "harness.session.id": turn.attributes["harness.session.id"],
        "harness.turn.trigger": "message",
        "harness.message.id": "b1",
        "harness.turn.outcome": "no-turn",
        "harness.turn.steps": 0
      })
      assert.strictEqual(turn.status.code, OK)
      assert.deepStrictEqual(spans.filter((span) => span.name.startsWith("Agent.")).map((span) => span.name), [
        "Agent.turn"
      ])
    }))
})
