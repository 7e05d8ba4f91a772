/**
 * Tool calls inside turns (docs/CONTRACT.md §8, R64–R73, with the interruption departures R72, R73, R133).
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentTool } from "@harness/agent"
import { Message, type SessionEvent } from "@harness/domain"
import { LogCheck } from "@harness/session"
import { EventRecorder, ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect, Exit, Ref, Schema, TestClock } from "effect"

const results = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.flatMap((e) => (e.type === "tool/result" ? [e.data] : []))

const kinds = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.filter((e) =>
    e.type === "tool/call" || e.type === "tool/result" || e.type === "step/end" || e.type === "turn/end" ||
    e.type === "user/message" || e.type === "steering/message"
  ).map((e) =>
    e.type === "tool/call"
      ? `call:${e.data.callId}`
      : e.type === "tool/result"
      ? `result:${e.data.callId}${e.data.error ? `:${e.data.error.code}` : ""}`
      : e.type === "turn/end"
      ? `turn/end:${e.data.reason.kind}`
      : e.type === "user/message" || e.type === "steering/message"
      ? `${e.type}:${e.data.content[0].text}`
      : e.type
  )

/** A tool that sleeps `ms` on the clock and records when it started and ended. */
const sleeper = (
  journal: Ref.Ref<ReadonlyArray<string>>,
  options: {
    readonly name?: string
    readonly parallel?: boolean | ((p: { ms: number; tag: string }) => boolean)
    readonly onCancel?: AgentTool.CancelPolicy
  } = {}
) =>
  AgentTool.make(
    Tool.make(options.name ?? "sleep", {
      description: "sleeps",
      parameters: { ms: Schema.Number, tag: Schema.String },
      success: Schema.String
    }),
    {
      handler: ({ ms, tag }) =>
        Effect.gen(function*() {
          yield* Ref.update(journal, (j) => [...j, `start:${tag}`])
          yield* Effect.sleep(ms)
          yield* Ref.update(journal, (j) => [...j, `end:${tag}`])
          return `slept ${ms} (${tag})`
        }),
      parallel: options.parallel ?? true,
      onCancel: options.onCancel ?? "interrupt"
    }
  )

const call = (tag: string, ms: number, name = "sleep") => S.toolCall(name, { ms, tag }, { id: tag })

/**
 * One turn whose first step calls the sleeper (`tool` options) with `calls`, on an agent made with `options`; the
 * clock advances by each of `ticks` in turn, then the agent is awaited to idle. Returns the sleeper's journal and the
 * agent's log.
 */
const sleepTurn = (
  calls: ReadonlyArray<ReturnType<typeof call>>,
  ticks: ReadonlyArray<number>,
  options: { readonly tool?: Parameters<typeof sleeper>[1]; readonly maxParallelToolCalls?: number } = {}
) =>
  Effect.gen(function*() {
    const journal = yield* Ref.make<ReadonlyArray<string>>([])
    const agent = yield* Agent.make({
      tools: [sleeper(journal, options.tool)],
      ...(options.maxParallelToolCalls === undefined ? {} : { maxParallelToolCalls: options.maxParallelToolCalls })
    })
    yield* (yield* S.ScriptedModel).push(S.toolCallResponse(...calls), S.textResponse("ok"))
    yield* agent.followup(Message.make("go"))
    for (const tick of ticks) yield* TestClock.adjust(tick)
    yield* agent.whenIdle
    return { journal: yield* Ref.get(journal), log: yield* agent.log }
  })

describe("tool calls in the loop", () => {
  it.scoped("R68: results are committed in model order even when a later call finishes first", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* sleepTurn([call("a", 300), call("b", 100)], [300])
      assert.deepStrictEqual(journal, ["start:a", "start:b", "end:b", "end:a"])
      assert.deepStrictEqual(results(log).map((r) => r.callId), ["a", "b"])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R66: the rolling pool never runs more than maxParallelToolCalls calls at once", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* sleepTurn(
        [call("a", 100), call("b", 250), call("c", 100), call("d", 100)],
        [100, 100, 50, 50],
        { maxParallelToolCalls: 2 }
      )
      // a and b start; a ends at 100 and c takes its slot; c ends at 200 and d takes it; b ends at 250, d at 300.
      assert.deepStrictEqual(journal, [
        "start:a",
        "start:b",
        "end:a",
        "start:c",
        "end:c",
        "start:d",
        "end:b",
        "end:d"
      ])
      assert.deepStrictEqual(results(log).map((r) => r.callId), ["a", "b", "c", "d"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R66: maxParallelToolCalls 1 runs calls one at a time", () =>
    Effect.gen(function*() {
      const { journal } = yield* sleepTurn([call("a", 100), call("b", 100)], [100, 100], { maxParallelToolCalls: 1 })
      assert.deepStrictEqual(journal, ["start:a", "end:a", "start:b", "end:b"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R66: invalid maxParallelToolCalls is refused at creation", () =>
    Effect.gen(function*() {
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        const error = yield* Effect.flip(Agent.make({ maxParallelToolCalls: bad }))
        assert.strictEqual(error._tag, "AgentConfigError")
        assert.include(error.message, "maxParallelToolCalls")
      }
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R65–R66: exclusive calls are barriers; parallelism may depend on the arguments", () =>
    Effect.gen(function*() {
      // Calls whose tag starts with "x" are exclusive.
      const { journal } = yield* sleepTurn(
        [call("p1", 100), call("p2", 50), call("x", 10), call("p3", 10)],
        [50, 50, 10, 10],
        { tool: { parallel: (p) => !p.tag.startsWith("x") } }
      )
      assert.deepStrictEqual(journal, [
        "start:p1",
        "start:p2",
        "end:p2",
        "end:p1",
        "start:x",
        "end:x",
        "start:p3",
        "end:p3"
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a result above maxToolResultChars is answered RESULT_TOO_LARGE, naming the bound; at the bound it passes", () =>
    Effect.gen(function*() {
      class Loud extends Schema.TaggedError<Loud>()("Loud", { message: Schema.String }) {}
      const echo = AgentTool.make(
        Tool.make("echo", { parameters: { n: Schema.Number }, success: Schema.String, failure: Loud }),
        {
          handler: ({ n }) => n < 0 ? Effect.fail(new Loud({ message: "y".repeat(-n) })) : Effect.succeed("x".repeat(n))
        }
      )
      const refused = yield* Effect.flip(Agent.make({ tools: [echo], maxToolResultChars: 0 }))
      assert.strictEqual(refused.option, "maxToolResultChars")
      const agent = yield* Agent.make({ tools: [echo], maxToolResultChars: 10 })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(
          S.toolCall("echo", { n: 10 }, { id: "at" }),
          S.toolCall("echo", { n: 11 }, { id: "above" }),
          S.toolCall("echo", { n: -11 }, { id: "failure" })
        ),
        S.textResponse("noted")
      )
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      const log = yield* agent.log
      const byId = new Map(results(log).map((r) => [r.callId as string, r]))
      const text = (id: string) => byId.get(id)!.content.map((b) => b.text).join("")
      assert.strictEqual(text("at"), "x".repeat(10))
      assert.deepStrictEqual(byId.get("above")!.error, { name: "ResultTooLarge", code: "RESULT_TOO_LARGE" })
      assert.include(text("above"), "returned 11 characters, more than the 10")
      assert.notInclude(text("above"), "xxxxxxxxxxx")
      assert.strictEqual(byId.get("failure")!.error?.code, "RESULT_TOO_LARGE")
      const end = log.findLast((e) => e.type === "turn/end")
      assert.deepStrictEqual(end?.type === "turn/end" ? end.data.reason : undefined, { kind: "completed" })
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R69: every failure class reaches the model as an error result, and the turn goes on", () =>
    Effect.gen(function*() {
      class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}
      const strict = AgentTool.make(
        Tool.make("strict", { parameters: { path: Schema.String, count: Schema.Number }, success: Schema.String }),
        { handler: ({ count, path }) => Effect.succeed(`${path}:${count}`) }
      )
      const failing = AgentTool.make(
        Tool.make("failing", { success: Schema.String, failure: Boom }),
        { handler: () => Effect.fail(new Boom({ message: "the disk is on fire" })) }
      )
      const crashing = AgentTool.make(Tool.make("crashing", { success: Schema.String }), {
        handler: () => Effect.die(new Error("kaboom"))
      })
      const guarded = AgentTool.make(Tool.make("guarded", { success: Schema.String }), {
        handler: () => Effect.succeed("ran"),
        approval: "required"
      })
      const agent = yield* Agent.make({ tools: [strict, failing, crashing, guarded] })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(
          S.toolCall("strict", "{\"path\": \"a\",", { id: "json" }),
          S.toolCall("strict", { path: "a", count: "three" }, { id: "schema" }),
          S.toolCall("missing", {}, { id: "unknown" }),
          S.toolCall("failing", {}, { id: "failure" }),
          S.toolCall("crashing", {}, { id: "defect" }),
          S.toolCall("guarded", {}, { id: "denied" }),
          S.toolCall("strict", { path: "b", count: 2 }, { id: "fine" })
        ),
        S.textResponse("noted")
      )
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      const log = yield* agent.log
      const byId = new Map(results(log).map((r) => [r.callId as string, r]))
      const text = (id: string) => byId.get(id)!.content.map((b) => b.text).join("")
      assert.strictEqual(byId.get("json")!.error?.code, "INVALID_ARGUMENTS")
      assert.include(text("json"), "not valid JSON")
      assert.strictEqual(byId.get("schema")!.error?.code, "INVALID_ARGUMENTS")
      assert.include(text("schema"), "count")
      assert.strictEqual(byId.get("unknown")!.error?.code, "UNKNOWN_TOOL")
      assert.include(text("unknown"), "strict")
      assert.deepStrictEqual(byId.get("failure")!.error, { name: "Boom", code: "TOOL_FAILED" })
      assert.include(text("failure"), "the disk is on fire")
      assert.strictEqual(byId.get("defect")!.error?.code, "TOOL_DEFECT")
      assert.include(text("defect"), "kaboom")
      // A defect reaches the model (and the durable log) by name and message: no stack, so no host paths.
      assert.notMatch(text("defect"), /\bat |\/[a-z]+\/|\.ts:\d+/)
      assert.strictEqual(text("defect"), "Error: \"crashing\" crashed: Error: kaboom")
      assert.strictEqual(byId.get("denied")!.error?.code, "DENIED")
      assert.include(text("denied"), "toolApproval")
      assert.strictEqual(byId.get("fine")!.isError, false)
      assert.strictEqual(text("fine"), "b:2")
      // The raw argument text is logged verbatim, even when it is not JSON (R64).
      const raw = log.find((e) => e.type === "tool/call" && e.data.callId === "json")
      assert.strictEqual(raw?.type === "tool/call" ? raw.data.arguments : undefined, "{\"path\": \"a\",")
      // The turn went on: the model got every result and answered.
      const requests = yield* model.requests
      assert.strictEqual(requests.length, 2)
      assert.strictEqual(requests[1]!.prompt.content.filter((m) => m.role === "tool").length, 7)
      const end = log.findLast((e) => e.type === "turn/end")
      assert.deepStrictEqual(end?.type === "turn/end" ? end.data.reason : undefined, { kind: "completed" })
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R64 (departure): an empty argument string means {} and the tool runs", () =>
    Effect.gen(function*() {
      const ping = AgentTool.make(Tool.make("ping", { success: Schema.String }), {
        handler: () => Effect.succeed("pong")
      })
      const agent = yield* Agent.make({ tools: [ping] })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(S.toolCall("ping", "", { id: "p" })),
        S.textResponse("ok")
      )
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      assert.deepStrictEqual(results(yield* agent.log).map((r) => [r.isError, r.content]), [[false, [{
        type: "text",
        text: "pong"
      }]]])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("approval: the toolApproval hook allows, denies with a reason, and may suspend", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const asked = yield* Ref.make<ReadonlyArray<string>>([])
      const guarded = AgentTool.make(
        Tool.make("guarded", { parameters: { what: Schema.String }, success: Schema.String }),
        { handler: ({ what }) => Effect.succeed(`did ${what}`), approval: "required" }
      )
      const agent = yield* Agent.make({
        tools: [guarded],
        hooks: {
          toolApproval: ({ callId, params }) =>
            Effect.gen(function*() {
              yield* Ref.update(asked, (a) => [...a, callId])
              yield* Deferred.await(gate)
              const what = (params as { what: string }).what
              return what === "harm"
                ? { kind: "deny" as const, reason: "no harm allowed" }
                : { kind: "allow" as const }
            })
        }
      })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(
          S.toolCall("guarded", { what: "good" }, { id: "g" }),
          S.toolCall("guarded", { what: "harm" }, { id: "h" })
        ),
        S.textResponse("ok")
      )
      const recorder = yield* EventRecorder.make(agent)
      yield* agent.followup(Message.make("go"))
      yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "tool/call")
      assert.deepStrictEqual(yield* Ref.get(asked), ["g"])
      assert.isTrue(yield* agent.acceptsNextStep)
      yield* Deferred.succeed(gate, undefined)
      yield* agent.whenIdle
      const byId = new Map(results(yield* agent.log).map((r) => [r.callId as string, r]))
      assert.strictEqual(byId.get("g")!.content[0]!.text, "did good")
      assert.strictEqual(byId.get("h")!.error?.code, "DENIED")
      assert.include(byId.get("h")!.content[0]!.text, "no harm allowed")
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R72 (departure): a cancel in the middle of a parallel batch — interrupt calls ABORTED, finish calls keep their result, unstarted calls get synthetic pairs", () =>
    Effect.gen(function*() {
      const journal = yield* Ref.make<ReadonlyArray<string>>([])
      const quick = sleeper(journal, { name: "quick" })
      const interruptible = sleeper(journal, { name: "interruptible" })
      const finisher = sleeper(journal, { name: "finisher", onCancel: "finish" })
      const exclusive = sleeper(journal, { name: "exclusive", parallel: false })
      const agent = yield* Agent.make({ tools: [quick, interruptible, finisher, exclusive] })
      yield* (yield* S.ScriptedModel).push(
        S.toolCallResponse(
          call("q", 10, "quick"),
          call("i", 1000, "interruptible"),
          call("f", 500, "finisher"),
          call("x", 10, "exclusive"),
          call("later", 10, "quick")
        ),
        S.textResponse("never asked")
      )
      const recorder = yield* EventRecorder.make(agent)
      yield* agent.followup(Message.make("go"))
      yield* TestClock.adjust(10)
      yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "tool/result")
      yield* agent.cancel("user")
      // The finish call completes on the clock; the cancel did not wait for it.
      yield* TestClock.adjust(500)
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(kinds(log), [
        "user/message:go",
        "call:q",
        "call:i",
        "call:f",
        // x is exclusive: it waits for the pool to drain before it starts, so it is not logged yet when the cancel
        // finds it there (R67, R72); the close answers it with a synthetic pair.
        "result:q",
        "result:i:ABORTED",
        "result:f",
        "call:x",
        "result:x:ABORTED_BEFORE_DISPATCH",
        "call:later",
        "result:later:ABORTED_BEFORE_DISPATCH",
        "step/end",
        "turn/end:aborted"
      ])
      assert.deepStrictEqual(yield* Ref.get(journal), ["start:q", "start:i", "start:f", "end:q", "end:f"])
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.strictEqual((yield* (yield* S.ScriptedModel).requests).length, 1)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("approval is interrupted by cancel: the waiting call ends ABORTED_BEFORE_DISPATCH", () =>
    Effect.gen(function*() {
      const never = yield* Deferred.make<void>()
      const guarded = AgentTool.make(Tool.make("guarded", { success: Schema.String }), {
        handler: () => Effect.succeed("ran"),
        approval: "required"
      })
      const agent = yield* Agent.make({
        tools: [guarded],
        hooks: { toolApproval: () => Effect.as(Deferred.await(never), { kind: "allow" as const }) }
      })
      yield* (yield* S.ScriptedModel).push(S.toolCallResponse(S.toolCall("guarded", {}, { id: "g" })))
      const recorder = yield* EventRecorder.make(agent)
      yield* agent.followup(Message.make("go"))
      yield* recorder.waitFor((e) => e.type === "session/event" && e.event.type === "tool/call")
      yield* agent.cancel("user")
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(kinds(log), [
        "user/message:go",
        "call:g",
        "result:g:ABORTED_BEFORE_DISPATCH",
        "step/end",
        "turn/end:aborted"
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R70: a concluding tool ends the turn after its step; no further request", () =>
    Effect.gen(function*() {
      const done = AgentTool.make(Tool.make("done", { success: Schema.String }), {
        handler: () => Effect.succeed(AgentTool.outcome("finished", { concludeTurn: true }))
      })
      const agent = yield* Agent.make({ tools: [done] })
      const model = yield* S.ScriptedModel
      yield* model.push(S.toolCallResponse(S.toolCall("done", {}, { id: "d" })), S.textResponse("never asked"))
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      assert.strictEqual((yield* model.requests).length, 1)
      const log = yield* agent.log
      assert.deepStrictEqual(kinds(log), ["user/message:go", "call:d", "result:d", "step/end", "turn/end:completed"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R68: contexts attached to results are logged after the whole batch, before step/end", () =>
    Effect.gen(function*() {
      const noting = AgentTool.make(
        Tool.make("note", { parameters: { n: Schema.String }, success: Schema.String }),
        {
          handler: ({ n }) =>
            Effect.succeed(
              AgentTool.outcome(`noted ${n}`, {
                contexts: [Message.make(`context ${n}`, { kind: "plugin", plugin: "note" })]
              })
            ),
          parallel: true
        }
      )
      const agent = yield* Agent.make({ tools: [noting] })
      const model = yield* S.ScriptedModel
      yield* model.push(
        S.toolCallResponse(S.toolCall("note", { n: "1" }, { id: "a" }), S.toolCall("note", { n: "2" }, { id: "b" })),
        S.textResponse("ok")
      )
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      const logged = kinds(yield* agent.log)
      // Whether b starts before a's result is committed depends on scheduling (R67: a finished call's result is
      // committed as soon as the prefix allows); the results are in model order, and the contexts follow both.
      assert.strictEqual(logged[0], "user/message:go")
      assert.deepStrictEqual(logged.slice(1, 4).sort(), ["call:a", "call:b", "result:a"])
      assert.isBelow(logged.indexOf("call:a"), logged.indexOf("call:b"))
      assert.deepStrictEqual(logged.slice(logged.indexOf("result:b")), [
        "result:b",
        "user/message:context 1",
        "user/message:context 2",
        "step/end",
        "step/end",
        "turn/end:completed"
      ])
      // The next request sees the contexts after the results.
      const second = (yield* model.requests)[1]!.prompt.content.map((m) => m.role)
      assert.deepStrictEqual(second, ["user", "assistant", "tool", "tool", "user", "user"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("a tool that steers its own agent: the steering waits for the batch and forces another step", () =>
    Effect.gen(function*() {
      const steering = AgentTool.make(Tool.make("steerer", { success: Schema.String }), {
        handler: (_, { agent }) => Effect.as(Effect.orDie(agent.steer(Message.make("look again"))), "steered")
      })
      const agent = yield* Agent.make({ tools: [steering] })
      const model = yield* S.ScriptedModel
      yield* model.push(S.toolCallResponse(S.toolCall("steerer", {}, { id: "s" })), S.textResponse("looked"))
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      assert.deepStrictEqual(kinds(yield* agent.log), [
        "user/message:go",
        "call:s",
        "result:s",
        "steering/message:look again",
        "step/end",
        "step/end",
        "turn/end:completed"
      ])
      assert.strictEqual((yield* model.requests).length, 2)
    }).pipe(Effect.provide(S.layer())))

  it.scoped("tools are advertised with their real JSON Schema and recorded in request/header", () =>
    Effect.gen(function*() {
      const strict = AgentTool.make(
        Tool.make("strict", {
          description: "a strict tool",
          parameters: { path: Schema.String },
          success: Schema.String
        }),
        { handler: ({ path }) => Effect.succeed(path) }
      )
      const agent = yield* Agent.make({ tools: [strict] })
      const model = yield* S.ScriptedModel
      yield* model.push(S.textResponse("hi"))
      yield* agent.followup(Message.make("go"))
      yield* agent.whenIdle
      const expected = {
        type: "object",
        required: ["path"],
        properties: { path: { type: "string" } },
        additionalProperties: false
      }
      assert.deepStrictEqual((yield* model.requests)[0]!.tools, [{
        name: "strict",
        description: "a strict tool",
        parameters: expected
      }])
      const header = (yield* agent.log).find((e) => e.type === "request/header")
      assert.deepStrictEqual(header?.type === "request/header" ? header.data.header.tools : undefined, [
        { name: "strict", description: "a strict tool", parameters: expected }
      ])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("tool names are validated at creation", () =>
    Effect.gen(function*() {
      const named = (name: string) => AgentTool.make(Tool.make(name), { handler: () => Effect.void })
      const bad = yield* Effect.exit(Agent.make({ tools: [named("has space")] }))
      assert.isTrue(Exit.isFailure(bad))
      const twice = yield* Effect.flip(Agent.make({ tools: [named("a"), named("a")] }))
      assert.include(twice.message, "two tools")
    }).pipe(Effect.provide(S.layer())))
})
